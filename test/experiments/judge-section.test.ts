import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/config/paths';
import type { ExperimentInput } from '../../src/experiments/config';
import { registry } from '../../src/experiments/compose';
import { configParams } from '../../src/experiments/run-tracking';
import { planSweep } from '../../src/experiments/sweep';
import { parseOverride } from '../../src/experiments/overrides';
import { readResolvedConfig, resolveExperimentConfig } from '../../src/experiments/config';
import { closeSession, runInProcess } from '../../src/experiments/session';
import { PROBE_MARK } from '../../src/experiments/preflight';
import { describeError } from '../../src/errors';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { saveCorpus } from '../../src/retrieval/corpus';
import { readJsonl } from '../../src/common/jsonl';
import type { Trace } from '../../src/trace/types';
import type { ProviderCallLogLine } from '../../src/llm/providers/scripted-config';
import { startFaultServer, type FaultServer } from '../llm/fault-server';

/**
 * A run's `judge:` section: every yes/no judgment goes to the judge's model, everything else to
 * `llm:`, and the trace, the call log and the run's identity say so. Scripted models (each with
 * its own call log), ToC over the example corpus with BM25.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-section-'));
const before = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };
const corpus = join(dir, 'corpus.jsonl');
const generatorLog = join(dir, 'generator.jsonl');
const judgeLog = join(dir, 'judge.jsonl');

function config(judgeModel: string | undefined, judgeSection?: ExperimentInput['judge']): ExperimentInput {
  return {
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 2 },
    // stop-when-empty: every judgment a new prompt (the released search verifies a returning pair
    // again, and its identical prompt replays from the cache), so server requests count judgments.
    pipeline: { name: 'toc', options: { search: 'stop-when-empty', maxNodes: 3, maxDepth: 1, maxTrials: 1, nPassages: 2, nShots: 0, pruning: true } },
    llm: {
      provider: 'scripted',
      model: 'generator',
      replies: {
        'toc.rac': 'DQ 1: Which one is meant here? DA 1: This one.\nDQ 2: Which other one is meant? DA 2: That one.',
        'toc.answer': 'The answer is this one or that one.',
        // What the generator would say if it were asked to judge: never, when a judge is set.
        'toc.verify': 'False',
      },
      callLog: generatorLog,
      cache: join(dir, 'llm-cache.sqlite'),
    },
    ...(judgeSection ? { judge: judgeSection } : {}),
    ...(judgeModel
      ? { judge: { provider: 'scripted' as const, model: judgeModel, replies: { 'toc.verify': 'True' }, callLog: judgeLog, cache: join(dir, 'llm-cache.sqlite') } }
      : {}),
    retriever: { type: 'bm25', corpus },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  };
}

const calls = (file: string): ProviderCallLogLine[] => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as ProviderCallLogLine);
  } catch {
    return [];
  }
};

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  saveCorpus(corpus, buildCorpus([{ kind: 'asqa', path: join(examplesDir, 'asqa-mini.json') }]).passages);
});
afterAll(async () => {
  await closeSession();
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', before.artifacts], ['AMBIQA_TRACKING', before.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('judge: a model of its own for yes/no judgments', () => {
  it('routes every judgment to the judge and every generation to the llm; traces name the judge', async () => {
    const run = await runInProcess(config('judge-a'), { name: 'with-judge' });
    expect(run.status).toBe('FINISHED');
    const judged = calls(judgeLog).filter((c) => c.event === 'start');
    const generated = calls(generatorLog).filter((c) => c.event === 'start');
    expect(judged.length).toBeGreaterThan(0);
    expect(judged.every((c) => c.purpose === 'toc.verify')).toBe(true);
    expect(generated.some((c) => c.purpose === 'toc.verify')).toBe(false);
    expect(generated.some((c) => c.purpose === 'toc.rac')).toBe(true);

    const traces = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    expect(traces).toHaveLength(2);
    for (const t of traces) {
      expect(t.llm).toEqual({ provider: 'scripted', model: 'generator' });
      expect(t.judge).toEqual({ provider: 'scripted', model: 'judge-a' });
      const verify = t.llmCalls.filter((c) => c.purpose === 'toc.verify');
      expect(verify.length).toBeGreaterThan(0);
      // The judge said True (text mode: the scripted model has no probabilities): nodes kept.
      for (const c of verify) {
        expect(c.model).toBe('scripted:judge-a');
        expect(c.judge!.p).toBe(1);
      }
      for (const c of t.llmCalls.filter((c) => c.purpose !== 'toc.verify')) expect(c.model).toBeUndefined();
      // Judge calls count in the question's usage like any other call.
      expect(t.summary.llmCalls).toBe(t.llmCalls.length);
    }
    // The generator's own "False" would have pruned every node.
    expect(run.results.every((r) => r.error === undefined)).toBe(true);
    // MLflow params: the judge's section flattened beside the llm's.
    const params = configParams(readResolvedConfig(join(run.dir, "config.yaml")));
    expect(params).toMatchObject({ 'llm.model': 'generator', 'judge.provider': 'scripted', 'judge.model': 'judge-a' });
    const saved = readFileSync(join(run.dir, 'config.yaml'), 'utf8');
    expect(saved).toMatch(/^judge:\n(\s+.*\n)*\s+model: judge-a/m);
  });

  it('refuses to resume a run with another judge, names the field; the same judge resumes without a call', async () => {
    await expect(runInProcess(config('judge-b'), { name: 'with-judge' })).rejects.toThrow(/different config \(.*judge\.model/);
    await expect(runInProcess(config(undefined), { name: 'with-judge' })).rejects.toThrow(/different config \(.*judge/);
    const judgedBefore = calls(judgeLog).length;
    const generatedBefore = calls(generatorLog).length;
    const again = await runInProcess(config('judge-a'), { name: 'with-judge' });
    expect(again.status).toBe('FINISHED');
    expect(again.answeredNow).toBe(0);
    expect(calls(judgeLog)).toHaveLength(judgedBefore);
    expect(calls(generatorLog)).toHaveLength(generatedBefore);
  });

  it('a run without judge: sends judgments to the llm and its trace has no judge', async () => {
    const run = await runInProcess(config(undefined), { name: 'without-judge' });
    const traces = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    for (const t of traces) {
      expect(t.judge).toBeUndefined();
      const verify = t.llmCalls.filter((c) => c.purpose === 'toc.verify');
      expect(verify.length).toBeGreaterThan(0);
      for (const c of verify) {
        expect(c.model).toBeUndefined();
        expect(c.judge!.p).toBe(0);
      }
    }
  });

  it('--set judge=null turns off a judge a config ships: the llm judges, as without the section', () => {
    const shipped = { ...config('judge-model'), name: 'x' } as unknown as Record<string, unknown>;
    const withJudge = resolveExperimentConfig(shipped, registry, { source: 'x.yaml' });
    expect((withJudge.judge as { model?: string } | undefined)?.model).toBe('judge-model');
    const off = resolveExperimentConfig(shipped, registry, { source: 'x.yaml', overrides: [parseOverride('judge=null')] });
    expect(off.judge).toBeUndefined();
    expect('judge' in off).toBe(false);
  });
});

describe('judge: bad input is one error naming the field, before any model call', () => {
  const resolve = (judge: Record<string, unknown>) => () =>
    resolveExperimentConfig(
      { dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json') }, pipeline: { name: 'closed-book' }, judge, metrics: ['str_em'] },
      registry,
      { source: 'x.yaml' },
    );
  const message = (fn: () => unknown): string => {
    try {
      fn();
    } catch (error) {
      return describeError(error);
    }
    throw new Error('expected an error');
  };

  it('an unknown provider', () => {
    const text = message(resolve({ provider: 'llamafile' }));
    expect(text).toMatch(/^x\.yaml: judge\.provider: /);
    expect(text).toContain('embedded');
    expect(text.split('\n')[0]).toContain('openai-compatible');
  });

  it('a missing model file, and a catalog model that is not fetched', () => {
    const missing = join(dir, 'nope.gguf');
    const text = message(resolve({ provider: 'embedded', model: missing }));
    expect(text.split('\n')[0]).toMatch(new RegExp(`^x\\.yaml: judge\\.model: embedded model file not found: ${missing.replace(/[.]/g, '\\.')} — fix: give a \\.gguf file or a catalog model name \\(.*qwen2\\.5-coder-1\\.5b-instruct-q4_k_m.*\\)$`));
    const cache = process.env.AMBIQA_CACHE_DIR;
    process.env.AMBIQA_CACHE_DIR = join(dir, 'empty-cache');
    try {
      const notFetched = message(resolve({ model: 'qwen2.5-coder-1.5b-instruct-q4_k_m' }));
      expect(notFetched).toMatch(/^x\.yaml: judge\.model: catalog model 'qwen2\.5-coder-1\.5b-instruct-q4_k_m' is not fetched \(.*empty-cache\/models\/llm\/qwen2\.5-coder-1\.5b-instruct-q4_k_m\.gguf is missing\)/);
      expect(notFetched).toContain('npx ambiqa setup --fetch-llm qwen2.5-coder-1.5b-instruct-q4_k_m');
    } finally {
      if (cache === undefined) delete process.env.AMBIQA_CACHE_DIR;
      else process.env.AMBIQA_CACHE_DIR = cache;
    }
  });

  it('a key in the judge section is refused without echoing it', () => {
    const text = message(resolve({ provider: 'openai-compatible', apiKey: 'sk-judge-secret-123' }));
    expect(text).toContain('judge.apiKey');
    expect(text).not.toContain('sk-judge-secret-123');
  });
});

describe('judge: an OpenAI-compatible server judging for another model (loopback)', () => {
  let server: FaultServer;
  beforeAll(async () => {
    server = await startFaultServer();
  });
  afterAll(async () => server.close());

  const serverJudge = (model: string) => ({ provider: 'openai-compatible' as const, baseUrl: server.url, model, apiKeyEnv: 'AMBIQA_TEST_JUDGE_KEY', cache: { path: join(dir, 'llm-cache.sqlite') } });

  it('reads P from top_logprobs; the trace, the call records and the cache key name the server judge', async () => {
    server.requests = [];
    server.replyFor = () => 'True';
    server.logprobsFor = () => ({
      content: [{ token: 'True', logprob: Math.log(0.8), top_logprobs: [{ token: 'True', logprob: Math.log(0.8) }, { token: 'False', logprob: Math.log(0.2) }] }],
    });
    const run = await runInProcess(config(undefined, serverJudge('judge-7b')), { name: 'server-judge' });
    expect(run.status).toBe('FINISHED');
    // The preflight's probe (one True/False judgment, ToC's labels) came first; the run's own
    // requests are the rest.
    const isProbe = (r: { body: Record<string, unknown> }) => JSON.stringify(r.body).includes(PROBE_MARK);
    expect(server.requests.filter(isProbe)).toHaveLength(1);
    expect(isProbe(server.requests[0]!)).toBe(true);
    server.requests = server.requests.filter((r) => !isProbe(r));
    const judgments = server.requests.filter((r) => r.body.logprobs === true);
    expect(judgments.length).toBeGreaterThan(0);
    // Only judgments reach the server: the generator is the scripted model.
    expect(server.requests).toHaveLength(judgments.length);
    expect(judgments.every((r) => r.body.model === 'judge-7b' && r.body.max_tokens === 1)).toBe(true);
    const traces = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    for (const t of traces) {
      expect(t.judge).toEqual({ provider: 'openai-compatible', model: 'judge-7b' });
      for (const c of t.llmCalls.filter((c) => c.purpose === 'toc.verify')) {
        expect(c.model).toBe('openai-compatible:judge-7b');
        expect(c.judge).toMatchObject({ mode: 'probability' });
        expect(c.judge!.p).toBeCloseTo(0.8, 12);
        // The server's usage counts in the question's tokens.
        expect(c.completions[0]!.promptTokens).toBe(11);
      }
    }
    // Another server model is another cache key: nothing replays, every judgment is asked again.
    const asked = server.requests.length;
    await runInProcess(config(undefined, serverJudge('judge-13b')), { name: 'server-judge-13b' });
    server.requests = [...server.requests.slice(0, asked), ...server.requests.slice(asked).filter((r) => !isProbe(r))];
    expect(server.requests.length - asked).toBe(judgments.length);
    expect(server.requests.slice(asked).every((r) => r.body.model === 'judge-13b')).toBe(true);
  });

  it('an endpoint without logprobs: refused by the preflight, and with it skipped, the counted text fallback, as for llm:', async () => {
    server.requests = [];
    server.replyFor = () => 'False';
    server.logprobsFor = undefined;
    // Found before any question: the preflight's one yes/no probe (and its text retry) is all the server sees.
    await expect(runInProcess(config(undefined, serverJudge('judge-nologprobs')), { name: 'server-judge-text' })).rejects.toThrow(
      /^judge\.judgeMode: the server at http:\/\/127\.0\.0\.1:\d+\/v1 returned no usable log-probabilities .*; fix: .*set judge\.judgeMode=text/,
    );
    expect(server.requests).toHaveLength(2);
    expect(server.requests.every((r) => JSON.stringify(r.body).includes(PROBE_MARK))).toBe(true);
    server.requests = [];
    const run = await runInProcess(config(undefined, serverJudge('judge-nologprobs')), { name: 'server-judge-text', preflight: false });
    expect(run.status).toBe('FINISHED');
    const traces = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    const verify = traces.flatMap((t) => t.llmCalls.filter((c) => c.purpose === 'toc.verify'));
    expect(verify.length).toBeGreaterThan(0);
    for (const c of verify) expect(c.judge).toMatchObject({ mode: 'text', p: 0 });
    // Two requests per judgment: the one asking for logprobs, then the greedy reply.
    expect(server.requests.filter((r) => r.body.logprobs === true)).toHaveLength(verify.length);
    expect(server.requests).toHaveLength(2 * verify.length);
    expect(JSON.parse(readFileSync(join(run.dir, 'metrics.json'), 'utf8')).settings.judge_mode).toMatch(/text/);
  });
});

describe('judge.model is a sweep axis', () => {
  it('each grid point has its own judge (catalog names), the rest of the config shared', () => {
    const plan = planSweep({
      raw: {
        dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json') },
        pipeline: { name: 'toc', options: { nShots: 0 } },
        retriever: 'bm25',
        metrics: ['str_em'],
        sweep: { 'judge.model': ['qwen2.5-coder-0.5b-instruct-q4_k_m', 'qwen2.5-coder-1.5b-instruct-q4_k_m'] },
      },
      source: 'sweep.yaml',
      registry,
      options: { defaultName: 'judges', checkFiles: false },
      sweepDir: (n) => join(dir, n),
    });
    expect(plan.points.map((p) => (p.config.judge as { model?: string }).model)).toEqual(['qwen2.5-coder-0.5b-instruct-q4_k_m', 'qwen2.5-coder-1.5b-instruct-q4_k_m']);
    expect(plan.points.every((p) => p.config.judge!.provider === 'embedded' && p.config.llm.provider === 'embedded')).toBe(true);
    expect(new Set(plan.points.map((p) => p.config.name)).size).toBe(2);
  });
});
