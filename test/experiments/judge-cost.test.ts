import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { PROBE_MARK } from '../../src/experiments/preflight';
import { examplesDir } from '../../src/config/paths';
import { AmbiqaError } from '../../src/errors';
import { readJsonl } from '../../src/common/jsonl';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { saveCorpus } from '../../src/retrieval/corpus';
import type { RunMetrics, RunState } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { writeYaml } from './helpers/files';

/**
 * What a run with a `judge:` section costs, through the real `ambiqa run` command against one
 * loopback OpenAI-compatible server that serves both models. Every request reports 11 prompt +
 * 7 completion tokens, so a request costs, by hand:
 *   generator `gen-model`, llm.pricing $1 / $2 per M:            11·1 + 7·2     = 25 µ$
 *   judge `gpt-4o-mini`, built-in table $0.15 / $0.60 per M:     11·0.15 + 7·0.6 = 5.85 µ$
 *   judge `gpt-4o-mini`, judge.pricing $10 / $20 per M:          11·10 + 7·20   = 250 µ$
 * ToC with batch calibration: the prior's judgments (before any question) go to the judge too.
 */
const GEN = 25e-6;
const JUDGE_BUILTIN = 5.85e-6;
const JUDGE_PRICED = 250e-6;

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-cost-'));
const corpus = join(dir, 'corpus.jsonl');
const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };
let server: FaultServer;

beforeAll(async () => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  saveCorpus(corpus, buildCorpus([{ kind: 'asqa', path: join(examplesDir, 'asqa-mini.json') }]).passages);
  server = await startFaultServer();
  // Judgments ask for logprobs: P(True) = 0.8, so ToC keeps its nodes. Generations get a RAC reply.
  server.replyFor = (body) => (body.logprobs === true ? 'True' : 'DQ 1: Which one is meant here? DA 1: This one.\nDQ 2: Which other one is meant? DA 2: That one.');
  server.logprobsFor = () => ({
    content: [{ token: 'True', logprob: Math.log(0.8), top_logprobs: [{ token: 'True', logprob: Math.log(0.8) }, { token: 'False', logprob: Math.log(0.2) }] }],
  });
});
afterAll(async () => {
  await server.close();
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['AMBIQA_TRACKING', saved.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

function configFile(name: string, cache: string, judge: Record<string, unknown> = {}, llm: Record<string, unknown> = {}): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    // Two questions evaluated; the other four of the file are the demo pool the prior is drawn from.
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 2, demoSelection: 'fixed' },
    pipeline: { name: 'toc', options: { maxNodes: 3, maxDepth: 1, maxTrials: 1, nPassages: 2, nShots: 1, pruning: true, judgeCalibration: 'batch' } },
    llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'gen-model', pricing: { prompt: 1, completion: 2 }, cache: { path: cache }, ...llm },
    judge: { provider: 'openai-compatible', baseUrl: server.url, model: 'gpt-4o-mini', cache: { path: cache }, ...judge },
    retriever: { type: 'bm25', corpus },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  });
}

/** `ambiqa run` in this process: exit status, what it printed (summary on stdout, progress on stderr). */
async function ambiqaRun(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (stdout += `${a.join(' ')}\n`));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => ((stderr += String(chunk)), true));
  try {
    const status = await runCommand(args);
    return { status, stdout, stderr };
  } finally {
    log.mockRestore();
    err.mockRestore();
  }
}

const bodiesSince = (from: number) => runRequests().slice(from).map((r) => JSON.stringify(r.body)).sort();
const isJudgment = (body: Record<string, unknown>) => body.model === 'gpt-4o-mini';
const runDir = (name: string) => join(dir, 'artifacts', 'runs', name);

/**
 * The runs' own requests: the preflight's yes/no probe (src/experiments/preflight.ts), asked
 * live at every start and counted in no run's cost, is left out of the accounting.
 */
const runRequests = () => server.requests.filter((r) => !JSON.stringify(r.body).includes(PROBE_MARK));

/** The requests of one uninterrupted run (the reference for the capped one). */
let reference: string[] = [];

describe("a judge: section's calls count in the run's cost, at the judge's own price", () => {
  it('per question, per run (metrics.json, run.json), progress line and summary; calibration judgments included', async () => {
    const from = runRequests().length;
    const out = await ambiqaRun([configFile('judged', join(dir, 'judged.sqlite'))]);
    expect(out.status).toBe(0);
    const sent = runRequests().slice(from);
    reference = bodiesSince(from);
    const judged = sent.filter((r) => isJudgment(r.body)).length;
    const generated = sent.length - judged;
    expect(judged).toBeGreaterThan(0);
    expect(generated).toBeGreaterThan(0);
    const total = generated * GEN + judged * JUDGE_BUILTIN;

    const metrics = JSON.parse(readFileSync(join(runDir('judged'), 'metrics.json'), 'utf8')) as RunMetrics;
    // metrics.json states cost to the micro-dollar (runner.ts rounds it to 6 decimals).
    expect(metrics.usage.cost_usd).toBeCloseTo(total, 6);
    const state = JSON.parse(readFileSync(join(runDir('judged'), 'run.json'), 'utf8')) as RunState;
    expect(state.costUsd).toBeCloseTo(total, 10);

    // Per question: each live call at its model's price; the judge's records name the judge.
    const traces = readJsonl<Trace>(join(runDir('judged'), 'traces.jsonl'));
    expect(traces).toHaveLength(2);
    let questionsCost = 0;
    let questionJudgments = 0;
    for (const t of traces) {
      let expected = 0;
      for (const call of t.llmCalls) {
        const price = call.model === 'openai-compatible:gpt-4o-mini' ? JUDGE_BUILTIN : GEN;
        if (call.model) questionJudgments += call.completions.filter((c) => !c.cacheHit).length;
        for (const c of call.completions) {
          expect(c.costUsd).toBeCloseTo(c.cacheHit ? 0 : price, 12);
          expected += c.cacheHit ? 0 : price;
        }
      }
      expect(t.summary.costUsd).toBeCloseTo(expected, 12);
      questionsCost += expected;
    }
    // The batch prior's judgments were asked before any question, at the judge's price, and
    // count in the run's spend although no question's trace holds them.
    const calibrationJudgments = judged - questionJudgments;
    expect(calibrationJudgments).toBeGreaterThan(0);
    expect(total - questionsCost).toBeCloseTo(calibrationJudgments * JUDGE_BUILTIN, 12);

    const shown = total < 0.01 ? `$${Number(total.toPrecision(3))}` : `$${total.toFixed(4)}`;
    expect(out.stderr).toContain(`cost ${shown}`);
    expect(out.stdout).toContain(
      `cost: ${shown} (llm.pricing: $1 prompt / $2 completion per M tokens; judge: built-in table (2025-06-01) for gpt-4o-mini: $0.15 prompt / $0.6 completion per M tokens (cached prompt $0.075))`,
    );
  });

  it('the run cap counts generator + judge spend; stops in calibration and among questions (exit 3); resumes without repeating a call', async () => {
    expect(reference.length).toBeGreaterThan(0);
    const generated = reference.filter((b) => !isJudgment(JSON.parse(b) as Record<string, unknown>)).length;
    const judged = reference.length - generated;
    const priced = { pricing: { prompt: 10, completion: 20 } };
    const file = configFile('capped', join(dir, 'capped.sqlite'), priced);
    const from = runRequests().length;

    // 1. A cap of 300 µ$: the first judgment of the calibration costs 250 µ$, and the next would
    //    pass the cap. The run stops before any question, with the cap's message.
    const first = await ambiqaRun([file, '--max-cost', '0.0003']);
    expect(first.status).toBe(3);
    expect(runRequests().length - from).toBe(1);
    expect(first.stdout).toContain('stopped: stopped by the cost cap: $0.00025 spent, and the next call would pass the cap of $0.0003');
    let state = JSON.parse(readFileSync(join(runDir('capped'), 'run.json'), 'utf8')) as RunState;
    expect(state.status).toBe('KILLED');
    expect(state.costUsd).toBeCloseTo(JUDGE_PRICED, 12);

    // 2. A cap the generator alone would never reach (all its calls: generated × 25 µ$) but the
    //    whole run passes: only counting the judge's spend stops it.
    const cap = generated * GEN + 1.5 * JUDGE_PRICED;
    expect(generated * GEN + judged * JUDGE_PRICED).toBeGreaterThan(cap);
    const second = await ambiqaRun([file, '--resume', '--max-cost', String(cap)]);
    expect(second.status).toBe(3);
    expect(second.stdout).toMatch(/stopped: stopped by the cost cap: \$[0-9.]+ spent, and the next call would pass the cap/);
    state = JSON.parse(readFileSync(join(runDir('capped'), 'run.json'), 'utf8')) as RunState;
    const sentSoFar = runRequests().slice(from);
    const spentSoFar = sentSoFar.reduce((sum, r) => sum + (isJudgment(r.body) ? JUDGE_PRICED : GEN), 0);
    expect(state.costUsd).toBeCloseTo(spentSoFar, 10);
    expect(state.costUsd!).toBeLessThanOrEqual(cap);
    expect(sentSoFar.length).toBeLessThan(reference.length);

    // 3. A higher cap finishes it; the three sessions together sent exactly the requests of one
    //    uninterrupted run: no call, generator's or judge's, was asked twice.
    const third = await ambiqaRun([file, '--resume', '--max-cost', '1']);
    expect(third.status).toBe(0);
    expect(bodiesSince(from)).toEqual(reference);
    const metrics = JSON.parse(readFileSync(join(runDir('capped'), 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics.usage.cost_usd).toBeCloseTo(generated * GEN + judged * JUDGE_PRICED, 10);
  });

  it('judge.maxCostUsd is refused (one cap per run), and so is a cap with a judge of unknown price, before any call', async () => {
    const from = server.requests.length;
    const refusal = async (args: string[]): Promise<string> => {
      try {
        await ambiqaRun(args);
      } catch (error) {
        expect(error).toBeInstanceOf(AmbiqaError);
        return (error as AmbiqaError).message;
      }
      throw new Error('expected a refusal');
    };
    const own = configFile('judge-cap', join(dir, 'refused.sqlite'), { maxCostUsd: 1 });
    expect(await refusal([own])).toBe(
      `${own}: judge.maxCostUsd: a run has one cost cap, on what llm: and judge: spend together; set llm.maxCostUsd (or --max-cost) instead`,
    );
    const unknown = configFile('judge-unpriced', join(dir, 'refused.sqlite'), { model: 'local-judge' });
    expect(await refusal([unknown, '--max-cost', '1'])).toBe(
      `${unknown}: judge.pricing: the run has a cost cap (llm.maxCostUsd / --max-cost), but no price is known for the judge's model "local-judge", so its calls could not count; add judge.pricing: {prompt: <USD per M tokens>, completion: <USD per M tokens>}`,
    );
    expect(server.requests.length).toBe(from);
  });
});
