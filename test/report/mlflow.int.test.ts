import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { run as reportCommand } from '../../src/cli/commands/report';
import { MlflowClient, MlflowTracking } from '../../src/tracking';
import { result, run, veTrace, writeRunDir } from '../plots/fixtures';

// The report and its figures are attached to the run they describe, on a real MLflow server
// (started by test/global-setup.ts, or MLFLOW_TRACKING_URI from .ci/run).
const uri = inject('mlflowTrackingUri');

describe.skipIf(!uri && !process.env.CI)('ambiqa report --mlflow (real MLflow)', () => {
  const saved = process.env.MLFLOW_TRACKING_URI;
  afterAll(() => {
    if (saved === undefined) delete process.env.MLFLOW_TRACKING_URI;
    else process.env.MLFLOW_TRACKING_URI = saved;
  });

  it('logs the report and every figure as HTML and PNG to the run, and leaves it FINISHED', async () => {
    process.env.MLFLOW_TRACKING_URI = uri;
    const tracking = new MlflowTracking({ uri });
    const experimentName = `test-report-${Date.now()}`;
    const tracker = await tracking.startRun({ experimentName, runName: 've-small' });
    await tracker.finish('FINISHED');

    const dir = writeRunDir(
      join(mkdtempSync(join(tmpdir(), 'ambiqa-report-mlflow-')), 've-small'),
      run('ve-small', { name: 've-small', pipeline: { name: 'verify-edit' } },
        [result('a', { em: 100 }), result('b', { em: 0 }), result('c', { em: 100 })],
        [veTrace('a', { votes: 5 }), veTrace('b', { votes: 2 }), veTrace('c', { votes: 3 })]),
    );
    writeFileSync(join(dir, 'mlflow.json'), JSON.stringify({ experimentName, experimentId: tracker.experimentId, runId: tracker.runId, runName: 've-small' }));

    expect(await reportCommand([dir, '--mlflow'])).toBe(0);

    const client = new MlflowClient(uri);
    const files = (await client.listArtifactsRecursive(tracker.runId)).map((f) => f.path).sort();
    expect(files).toEqual([
      'figures/consistency-kde.html',
      'figures/consistency-kde.png',
      'figures/threshold-ablation.html',
      'figures/threshold-ablation.png',
      'report.html',
    ]);
    const png = await client.downloadArtifact(tracker.runId, 'figures/consistency-kde.png');
    expect(png.subarray(1, 4).toString('ascii')).toBe('PNG');
    expect((await client.getRun(tracker.runId)).info.status).toBe('FINISHED');
  });

  it('says how to fix a run that was never logged', async () => {
    const dir = writeRunDir(join(mkdtempSync(join(tmpdir(), 'ambiqa-report-nomlflow-')), 'r'), run('r', {}, [result('a', { em: 1 })], []));
    await expect(reportCommand([dir, '--mlflow', '--no-png'])).rejects.toThrow(/has no mlflow\.json/);
  });
});
