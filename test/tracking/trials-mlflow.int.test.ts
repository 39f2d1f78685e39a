import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runExperiment } from '../../src/experiments/runner';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { scoreValues, type ExampleResult } from '../../src/run-files';
import { MlflowClient } from '../../src/tracking/client';
import { openTracking } from '../../src/tracking/index';
import { baseConfig, echoPipeline, exactMatchComponents, makeExamples } from '../experiments/helpers/fixtures';
import { trackingUri, uniqueName } from './helpers';

/**
 * A run with `trials: 2` on a real MLflow server (test/global-setup.ts or `.ci/run` starts it;
 * without one this skips with the reason printed, and fails under CI): the `trials` param, each
 * metric's `<metric>_trial_sd` from the aggregate, and one trace per (question, trial) — the
 * second trial's trace has an id of its own instead of colliding with the first's.
 */
const uri = trackingUri();

describe.skipIf(!uri)('trials in MLflow (real server)', () => {
  it('the trials param, <metric>_trial_sd and a trace per (question, trial), read back through the REST API', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ambiqa-trials-mlflow-'));
    const provider = new ScriptedProvider((request, sampleIndex) => `answer ${sampleIndex % 3}`);
    const client = new LlmClient(provider, { cache: { path: join(root, 'cache.sqlite') } });
    const parts = exactMatchComponents(makeExamples(3), echoPipeline(), client);
    // A stand-in for the trial-aware aggregate (src/metrics): the spread is whatever the rows say.
    const aggregate = (rows: ExampleResult[]) => {
      const base = parts.aggregate(rows);
      const values = rows.map((r) => scoreValues(r).em ?? 0);
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      return { em: { ...base.em!, trials: 2, trialSd: Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length) } };
    };
    const warnings: string[] = [];
    const experiment = uniqueName('trials');
    const outcome = await runExperiment({
      config: baseConfig({ name: 'trials', trials: 2, concurrency: 1, tracking: { experiment, enabled: true, traces: true, tags: {} } }),
      runDir: join(root, 'trials'),
      components: { ...parts, aggregate },
      tracking: async () => openTracking({ uri, notify: (m) => warnings.push(m) }),
      env: { warn: (m) => warnings.push(m) },
    });
    client.close();
    expect(outcome.status).toBe('FINISHED');
    expect(warnings).toEqual([]);
    const runId = outcome.mlflow!.runId;

    const res = await fetch(`${uri}/api/2.0/mlflow/runs/get?run_id=${encodeURIComponent(runId)}`);
    const { run } = (await res.json()) as { run: { data: { metrics?: Array<{ key: string; value: number }>; params?: Array<{ key: string; value: string }> } } };
    const params = Object.fromEntries((run.data.params ?? []).map((p) => [p.key, p.value]));
    const metrics = Object.fromEntries((run.data.metrics ?? []).map((m) => [m.key, m.value]));
    expect(params.trials).toBe('2');
    expect(metrics.em_trial_sd).toBeCloseTo(outcome.metrics.metrics.em!.trialSd!, 9);
    expect(metrics.n).toBe(6);

    const mlflow = new MlflowClient(uri);
    const { traces } = await mlflow.searchTraces({ experimentIds: [outcome.mlflow!.experimentId], runId });
    const seen: string[] = [];
    for (const t of traces) {
      const { spans } = await mlflow.getTrace(t.traceId);
      const root = spans.find((s) => s.parentSpanId === undefined)!;
      seen.push(`${String(root.attributes['ambiqa.question_id'])}/${String(root.attributes['ambiqa.trial'])}`);
    }
    expect(seen.sort()).toEqual(['ex-000/0', 'ex-000/1', 'ex-001/0', 'ex-001/1', 'ex-002/0', 'ex-002/1']);
  }, 120_000);
});
