import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOutcome } from '../../src/experiments/cli-support';
import { ProgressBar } from '../../src/experiments/progress';
import { runExperiment } from '../../src/experiments/runner';
import { createLanguageModel, resolveLlmConfig, type LlmConfigInput } from '../../src/llm/config';
import { loadRun } from '../../src/report/load';
import { renderRunReport } from '../../src/report/render';
import type { RunMetrics, RunState } from '../../src/run-files';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { baseConfig, echoPipeline, exactMatchComponents, FakeTracking, makeExamples } from './helpers/fixtures';
import { methodCatalog } from '../../src/pipelines/registry';

/**
 * What an API run costs, end to end against a loopback OpenAI-compatible server: every request
 * reports 11 prompt + 7 completion tokens, priced at $1 / $2 per million tokens, so each live
 * request costs 11 + 14 = 25 micro-dollars and a run's cost is 25 µ$ × the requests it sent.
 */
const root = mkdtempSync(join(tmpdir(), 'ambiqa-cost-'));
const PER_REQUEST = 25e-6;
let server: FaultServer;

beforeAll(async () => {
  server = await startFaultServer();
});
afterAll(async () => {
  await server.close();
});

function llmConfig(cache: string, extra: Partial<LlmConfigInput> = {}): LlmConfigInput {
  return { provider: 'openai-compatible', baseUrl: server.url, model: 'loopback', pricing: { prompt: 1, completion: 2 }, cache: { path: cache }, ...extra };
}

const tracking = new FakeTracking();

async function run(name: string, llm: LlmConfigInput, n: number, progress?: ProgressBar) {
  const client = await createLanguageModel(llm, { env: {} });
  const examples = makeExamples(n);
  const components = { ...exactMatchComponents(examples, echoPipeline(), client), settings: { 'llm.pricing': resolveLlmConfig(llm).price!.source } };
  const price = resolveLlmConfig(llm).price;
  try {
    const outcome = await runExperiment({
      config: baseConfig({ name, llm: llm as never, concurrency: 1 }),
      runDir: join(root, name),
      resume: true,
      components: { ...components, ...(price ? { price } : {}) },
      tracking: async () => tracking,
      ...(progress ? { progress } : {}),
    });
    return { outcome };
  } finally {
    client.close();
  }
}

function captureStream(): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = { write: (s: string) => ((text += s), true), isTTY: false } as unknown as NodeJS.WriteStream;
  return { stream, text: () => text };
}

describe('cost of a run against an OpenAI-compatible endpoint', () => {
  it('is counted per question and per run, in the progress line, summary, metrics.json, MLflow and the report', async () => {
    const before = server.requests.length;
    const out = captureStream();
    const { outcome } = await run('priced', llmConfig(join(root, 'priced.sqlite')), 6, new ProgressBar({ label: 'priced', stream: out.stream, tty: false }));
    const sent = server.requests.length - before;
    // echoPipeline: one call per question, two samples for ids ending in 0 (ex-000): 7 requests.
    expect(sent).toBe(7);
    expect(outcome.metrics.usage.cost_usd).toBeCloseTo(7 * PER_REQUEST, 12);
    expect(outcome.results.map((r) => r.usage.costUsd)).toEqual([2, 1, 1, 1, 1, 1].map((k) => expect.closeTo(k * PER_REQUEST, 12)));
    const metrics = JSON.parse(readFileSync(join(root, 'priced', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics.usage.cost_usd).toBeCloseTo(175e-6, 12);
    expect(metrics.settings?.['llm.pricing']).toBe('llm.pricing: $1 prompt / $2 completion per M tokens');
    const mlflowRun = [...tracking.runs.values()].find((r) => r.options.runName === 'priced' || r.tags['mlflow.runName'] === 'priced') ?? [...tracking.runs.values()][0]!;
    const logged = Object.assign({}, ...mlflowRun.metrics.map((m) => m.metrics)) as Record<string, number>;
    expect(logged['usage.cost_usd']).toBeCloseTo(175e-6, 12);
    expect(out.text()).toMatch(/cost \$0\.000175/);
    expect(describeOutcome(outcome)).toContain('cost: $0.000175 (llm.pricing: $1 prompt / $2 completion per M tokens)');
    const html = renderRunReport(loadRun(join(root, 'priced')), methodCatalog());
    expect(html).toContain('<td>cost (USD)</td><td class="num">$0.000175</td><td class="num">$0.0000292</td>');

    // The same run again, as a new run on the warm cache: every call replays and costs 0.
    const again = await run('priced-replay', llmConfig(join(root, 'priced.sqlite')), 6);
    expect(server.requests.length - before).toBe(7);
    expect(again.outcome.metrics.usage.cost_usd).toBe(0);
  });

  it('--max-cost stops a run cleanly, and a resume with a higher cap finishes it without repeating a call', async () => {
    const cache = join(root, 'capped.sqlite');
    const before = server.requests.length;
    // 80 µ$: calls cost 25 µ$ each; after three (75 µ$) the fourth is expected to reach 100 µ$.
    const first = await run('capped', llmConfig(cache, { maxCostUsd: 80e-6 }), 6);
    expect(first.outcome.status).toBe('KILLED');
    expect(first.outcome.stoppedBy).toBe('stopped by the cost cap: $0.000075 spent, and the next call would pass the cap of $0.00008 (llm.maxCostUsd / --max-cost)');
    expect(describeOutcome(first.outcome, 'x.yaml')).toMatch(/stopped: stopped by the cost cap: \$0\.000075 spent[\s\S]*with --resume and a higher --max-cost/);
    const firstSent = server.requests.length - before;
    expect(firstSent).toBe(3);
    const state = JSON.parse(readFileSync(join(root, 'capped', 'run.json'), 'utf8')) as RunState;
    expect(state.costUsd).toBeCloseTo(75e-6, 12);
    expect(state.status).toBe('KILLED');

    // Resume with the same cap: the spend already reached it, so no live call is made.
    const same = await run('capped', llmConfig(cache, { maxCostUsd: 80e-6 }), 6);
    expect(same.outcome.status).toBe('KILLED');
    expect(server.requests.length - before).toBe(3);

    const second = await run('capped', llmConfig(cache, { maxCostUsd: 1 }), 6);
    expect(second.outcome.status).toBe('FINISHED');
    const bodies = server.requests.slice(before).map((r) => JSON.stringify(r.body));
    // Seven distinct requests in all, as an uninterrupted run sends: nothing was asked twice.
    expect(bodies).toHaveLength(7);
    expect(new Set(bodies).size).toBe(7);
    expect(second.outcome.metrics.usage.cost_usd).toBeCloseTo(175e-6, 12);
    const final = JSON.parse(readFileSync(join(root, 'capped', 'run.json'), 'utf8')) as RunState;
    expect(final.costUsd).toBeCloseTo(175e-6, 12);
    expect(final.stoppedBy).toBeUndefined();
  });
});
