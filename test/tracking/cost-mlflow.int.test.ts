import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExperiment } from '../../src/experiments/runner';
import { createLanguageModel, resolveLlmConfig, type LlmConfigInput } from '../../src/llm/config';
import { MlflowClient } from '../../src/tracking/client';
import { openTracking } from '../../src/tracking/index';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { baseConfig, echoPipeline, exactMatchComponents, makeExamples } from '../experiments/helpers/fixtures';
import { trackingUri, uniqueName } from './helpers';

/**
 * A priced run's cost reaches a real MLflow server (test/global-setup.ts or `.ci/run` starts it;
 * without one this skips with the reason printed, and fails under CI). The LLM is a loopback
 * OpenAI-compatible server whose every request reports 11 prompt + 7 completion tokens, priced at
 * $1 / $2 per million: 25 µ$ a request. echoPipeline sends one request per question, two for
 * ex-000 (n = 2): 6 questions, 7 requests, 175 µ$.
 */
const uri = trackingUri();
const PER_REQUEST = 25e-6;

describe.skipIf(!uri)('cost_usd in MLflow (real server)', () => {
  let server: FaultServer;
  beforeAll(async () => {
    server = await startFaultServer();
  });
  afterAll(async () => server.close());

  it('the run metric usage.cost_usd, the price param and each question trace\'s costUsd, read back through the REST API', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ambiqa-cost-mlflow-'));
    const llm: LlmConfigInput = { provider: 'openai-compatible', baseUrl: server.url, model: 'loopback', pricing: { prompt: 1, completion: 2 }, cache: { path: join(root, 'cache.sqlite') } };
    const price = resolveLlmConfig(llm).price!;
    const client = await createLanguageModel(llm, { env: {} });
    const warnings: string[] = [];
    const experiment = uniqueName('cost');
    let outcome: Awaited<ReturnType<typeof runExperiment>>;
    try {
      outcome = await runExperiment({
        config: baseConfig({ name: 'priced', llm: llm as never, concurrency: 1, tracking: { experiment, enabled: true, traces: true, tags: {} } }),
        runDir: join(root, 'priced'),
        components: { ...exactMatchComponents(makeExamples(6), echoPipeline(), client), settings: { 'llm.pricing': price.source }, price },
        tracking: async () => openTracking({ uri, notify: (m) => warnings.push(m) }),
        env: { warn: (m) => warnings.push(m) },
      });
    } finally {
      client.close();
    }
    expect(outcome.status).toBe('FINISHED');
    expect(warnings).toEqual([]);
    expect(server.requests).toHaveLength(7);
    const runId = outcome.mlflow!.runId;

    // The run, as MLflow's own REST API returns it (not through ambiqa's client).
    const res = await fetch(`${uri}/api/2.0/mlflow/runs/get?run_id=${encodeURIComponent(runId)}`);
    expect(res.status).toBe(200);
    const { run } = (await res.json()) as { run: { data: { metrics?: Array<{ key: string; value: number }>; params?: Array<{ key: string; value: string }> } } };
    const metrics = Object.fromEntries((run.data.metrics ?? []).map((m) => [m.key, m.value]));
    const params = Object.fromEntries((run.data.params ?? []).map((p) => [p.key, p.value]));
    expect(metrics['usage.cost_usd']).toBeCloseTo(7 * PER_REQUEST, 12);
    expect(params['llm.pricing']).toBe('llm.pricing: $1 prompt / $2 completion per M tokens');

    // Per question: the trace's root span carries the question's summary, costUsd included.
    const mlflow = new MlflowClient(uri);
    const { traces } = await mlflow.searchTraces({ experimentIds: [outcome.mlflow!.experimentId], runId });
    expect(traces).toHaveLength(6);
    const costs: Record<string, number> = {};
    for (const t of traces) {
      const { spans } = await mlflow.getTrace(t.traceId);
      const root = spans.find((s) => s.parentSpanId === undefined)!;
      // MLflow stores span attributes as JSON; the client decodes them.
      const summary = root.attributes['ambiqa.summary'] as { costUsd?: number };
      costs[String(root.attributes['ambiqa.question_id'])] = summary.costUsd!;
    }
    expect(Object.keys(costs).sort()).toEqual(['ex-000', 'ex-001', 'ex-002', 'ex-003', 'ex-004', 'ex-005']);
    for (const [id, cost] of Object.entries(costs)) expect(cost).toBeCloseTo((id === 'ex-000' ? 2 : 1) * PER_REQUEST, 12);
  }, 120_000);
});
