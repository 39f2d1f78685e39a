import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as syncCommand } from '../../src/cli/commands/sync';
import { readJsonl } from '../../src/common/jsonl';
import type { ExampleResult } from '../../src/run-files';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, listArtifacts, metric, param, searchRuns } from './helpers/mlflow';

// MLflow unreachable during the run: the run still completes, keeps every MLflow operation in
// the run dir, and `ambiqa sync` later uploads it to the real server.
const uri = inject('mlflowTrackingUri');

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe.skipIf(!uri && !process.env.CI)('MLflow down → buffered → sync', () => {
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI };
  afterAll(() => {
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('completes offline and uploads params, metrics, artifacts and status on sync', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-offline-'));
    const experiment = `test-offline-${Date.now()}`;
    const config = writeYaml(join(dir, 'offline.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 5) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', reply: 'It happened in 1992 and in 2002.', cache: join(dir, 'cache.sqlite') },
      tracking: { experiment },
    });
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = `http://127.0.0.1:${await closedPort()}`;
    expect(await runCommand([config, '--quiet'])).toBe(0);

    const runDir = join(dir, 'artifacts', 'runs', 'offline');
    expect(readJsonl<ExampleResult>(join(runDir, 'results.jsonl'))).toHaveLength(5);
    expect(JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')).status).toBe('FINISHED');
    expect(existsSync(join(runDir, 'mlflow-pending.jsonl'))).toBe(true);
    const pendingId = JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId as string;
    expect(pendingId).toMatch(/^pending-/);

    // The server is back: upload.
    process.env.MLFLOW_TRACKING_URI = uri;
    expect(await syncCommand([runDir])).toBe(0);
    const runs = await searchRuns(uri, experiment);
    expect(runs).toHaveLength(1);
    const run = await getRun(uri, runs[0].info.run_id);
    expect(run.info.status).toBe('FINISHED');
    expect(run.info.run_name).toBe('offline');
    expect(param(run, 'pipeline.name')).toBe('closed-book');
    expect(metric(run, 'n')).toBe(5);
    expect(metric(run, 'str_em')).toBe(JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')).metrics.str_em.mean);
    expect(await listArtifacts(uri, run.info.run_id)).toEqual(expect.arrayContaining(['results.jsonl', 'traces.jsonl', 'metrics.json', 'config.yaml']));
    // mlflow.json now points at the real run.
    expect(JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId).toBe(run.info.run_id);
  }, 120_000);
});
