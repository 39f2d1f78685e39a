import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { readJsonl } from '../../src/common/jsonl';
import { scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';
import { startFaultServer, type ChaosRates, type FaultServer } from './fault-server';

// The chaos test of issue 14: an OpenAI-compatible endpoint that answers 30% of requests with 429
// (Retry-After), 10% with 500, hangs on 5%, sends truncated JSON on 5% and resets the connection
// on 5%. A 20-question self-consistency run (5 samples a question, so ~100 samples and ~200
// attempts) with the default retry settings answers every question, and its results equal those
// of the same run against a fault-free endpoint. Only the timings are shortened: the Retry-After
// the server sends (20 ms), the per-call timeout that ends a hang (1 s) and the backoff waits
// (10 ms doubling up to 200 ms instead of 0.5 s up to 30 s); how many retries a call gets, and
// when the circuit breaker opens, are the defaults.
const CHAOS: ChaosRates = { rateLimit: 0.3, serverError: 0.1, hang: 0.05, truncated: 0.05, reset: 0.05, retryAfterSeconds: 0.02, seed: 14 };

let chaotic: FaultServer;
let healthy: FaultServer;
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-chaos-'));
const saved = process.env.AMBIQA_ARTIFACTS_DIR;

beforeAll(async () => {
  [chaotic, healthy] = await Promise.all([startFaultServer(), startFaultServer()]);
  chaotic.chaos = CHAOS;
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
});
afterAll(async () => {
  await Promise.all([chaotic.close(), healthy.close()]);
  if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = saved;
  rmSync(dir, { recursive: true, force: true });
});

function config(name: string, server: FaultServer): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: writeAsqa(dir, 20) },
    pipeline: { name: 'cot-sc', options: { n: 5, nShots: 0, maxTokens: 32 } },
    // The default retry settings (no maxRetries), short waits. No cache, so that every sample of
    // the chaotic run really goes through the faults.
    llm: {
      provider: 'openai-compatible',
      baseUrl: server.url,
      model: 'chaos-model',
      apiKeyEnv: 'AMBIQA_CHAOS_KEY',
      timeoutSeconds: 1,
      backoffSeconds: 0.01,
      maxBackoffSeconds: 0.2,
      cache: { mode: 'off' },
    },
    metrics: ['str_em', 'rougeL'],
    tracking: { enabled: false },
    concurrency: 4,
  });
}

describe('a run against an endpoint injecting faults at the rates of issue 14', () => {
  it('answers 20/20 with the default retry settings, with the results of a fault-free run', async () => {
    // 4 questions × 5 samples wait on the run's one abort signal at a time: no listener warning.
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      expect(await runCommand([config('chaos', chaotic), '--quiet'])).toBe(0);
      expect(await runCommand([config('calm', healthy), '--quiet'])).toBe(0);
      await new Promise((r) => setTimeout(r, 10));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');

    const runs = join(dir, 'artifacts', 'runs');
    const chaos = readJsonl<ExampleResult>(join(runs, 'chaos', 'results.jsonl'));
    const calm = readJsonl<ExampleResult>(join(runs, 'calm', 'results.jsonl'));
    expect(chaos.filter((r) => r.error)).toEqual([]);
    expect(chaos).toHaveLength(20);
    const view = (r: ExampleResult) => ({ id: r.id, output: r.output, answer: r.answer, metrics: scoreValues(r) });
    expect(chaos.map(view)).toEqual(calm.map(view));
    const m = JSON.parse(readFileSync(join(runs, 'chaos', 'metrics.json'), 'utf8')) as RunMetrics;
    const c = JSON.parse(readFileSync(join(runs, 'calm', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(m).toMatchObject({ answered: 20, errors: 0 });
    expect(m.metrics).toEqual(c.metrics);

    // The faults really happened, every kind of them, and some sample needed more attempts than
    // the old fixed limit of 4 allowed.
    for (const kind of ['status', 'hang', 'truncated', 'reset', 'ok']) expect(chaotic.injected[kind] ?? 0, kind).toBeGreaterThan(0);
    const attempts = new Map<string, number>();
    for (const r of chaotic.requests) attempts.set(JSON.stringify(r.body), (attempts.get(JSON.stringify(r.body)) ?? 0) + 1);
    expect(attempts.size).toBe(100);
    expect(Math.max(...attempts.values())).toBeGreaterThan(4);
    expect(healthy.requests).toHaveLength(100);
  }, 120_000);
});
