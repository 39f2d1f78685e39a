/**
 * `trials: k` in the run loop (issue 46, part 1): each (question, trial) is answered and written
 * as its own row and trace; sampled calls draw distinct sample indexes per trial through the run
 * model's `trial` layer, so the real LLM cache keeps trials apart while greedy calls replay;
 * resume repeats no finished trial; merge of shards keeps them; MLflow gets the `trials` param.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonl } from '../../src/common/jsonl';
import { describeOutcome } from '../../src/experiments/cli-support';
import { methodCatalog } from '../../src/experiments/bindings';
import { mergeRuns } from '../../src/experiments/merge';
import { ProgressBar, progressObserver } from '../../src/experiments/progress';
import { metricsForMlflow, runExperiment, type RunComponents } from '../../src/experiments/runner';
import { LlmClient } from '../../src/llm/client';
import { sleep } from '../../src/llm/limiter';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { TRIAL_SAMPLE_STRIDE, trialNow } from '../../src/llm/trial';
import { emptyUsage, type LanguageModelProvider, type NormalisedRequest } from '../../src/llm/types';
import type { Pipeline } from '../../src/pipelines/types';
import { resultRows } from '../../src/notebook/records';
import { loadRun } from '../../src/report/load';
import { examplesTable } from '../../src/report/render';
import { rowKey, scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import { TraceRecorder } from '../../src/trace/recorder';
import type { Trace } from '../../src/trace/types';
import { baseConfig, exactMatchComponents, FakeTracking, makeExamples } from './helpers/fixtures';

const root = mkdtempSync(join(tmpdir(), 'ambiqa-trials-'));

/**
 * Replies to the sampled call `answer <(item + sample index) mod 3>`, so a question's trials
 * (indexes 0, 1000, 2000) answer differently; the greedy call gets a fixed reply. Optionally slow,
 * so a run can be interrupted part-way.
 */
class Scripted implements LanguageModelProvider {
  readonly provider = 'scripted';
  readonly model = 'scripted-model';
  private readonly inner = new ScriptedProvider((request, sampleIndex) => {
    const k = Number(/item (\d+)/.exec(request.messages[0]!.content)?.[1] ?? 0);
    return request.purpose === 'test.sample' ? `answer ${(k + sampleIndex) % 3}` : 'checked';
  });
  readonly received = this.inner.received;
  constructor(private readonly delayMs = 0) {}
  async doGenerate(request: NormalisedRequest, sampleIndex: number, options: { signal?: AbortSignal }) {
    if (this.delayMs) await sleep(this.delayMs, options.signal);
    return this.inner.doGenerate(request, sampleIndex);
  }
}

/** A sampled call (temperature 0.7) whose text is the answer, then a greedy check of it. Logs which trial each answer ran in. */
function sampledPipeline(answered: string[] = []): Pipeline {
  return {
    name: 'closed-book',
    async answer(example, ctx) {
      answered.push(rowKey({ id: example.id, trial: trialNow() }));
      const recorder = new TraceRecorder('closed-book', example, ctx.llm);
      const signal = ctx.signal ? { signal: ctx.signal } : {};
      const r = await recorder.llm.generate({ prompt: `Q: ${example.question}`, purpose: 'test.sample', temperature: 0.7, maxTokens: 8, ...signal });
      await recorder.llm.generate({ prompt: `Check: ${example.question}`, purpose: 'test.greedy', maxTokens: 8, ...signal });
      const output = r.completions[0]!.text;
      return { output, answer: output, trace: recorder.finish({ kind: 'baseline', passageIds: [] }, output, output) };
    },
  };
}

function components(examples = makeExamples(4), provider = new Scripted(), cache = join(mkdtempSync(join(root, 'cache-')), 'llm.sqlite'), answered: string[] = []) {
  const llm = new LlmClient(provider, { cache: { path: cache } });
  const seen: ExampleResult[][] = [];
  const parts: RunComponents = exactMatchComponents(examples, sampledPipeline(answered), llm);
  const aggregate = parts.aggregate;
  return { parts: { ...parts, aggregate: (rows: ExampleResult[]) => (seen.push(rows), aggregate(rows)) }, provider, llm, cache, seen };
}

const keys = (rows: ReadonlyArray<{ id: string; trial?: number }>) => rows.map(rowKey);

describe('trials in the run', () => {
  it('answers each question k times with distinct samples; rows, traces, run.json, MLflow and the closing line count question × trial', async () => {
    const dir = join(root, 'three');
    const tracking = new FakeTracking();
    const c = components();
    const outcome = await runExperiment({ config: baseConfig({ trials: 3, concurrency: 2 }), runDir: dir, components: c.parts, tracking: async () => tracking });
    expect(outcome.status).toBe('FINISHED');
    expect(outcome.trials).toBe(3);

    const rows = readJsonl<ExampleResult>(join(dir, 'results.jsonl'));
    const ids = ['ex-000', 'ex-001', 'ex-002', 'ex-003'];
    // Evaluation order: a question's trials together, in trial order; every row says its trial.
    expect(rows.map((r) => [r.id, r.trial])).toEqual(ids.flatMap((id) => [0, 1, 2].map((t) => [id, t])));
    // Each trial drew its own sample: item k's trials answer (k + 0), (k + 1000), (k + 2000) mod 3.
    expect(rows.filter((r) => r.id === 'ex-001').map((r) => r.output)).toEqual(['answer 1', 'answer 2', 'answer 0']);
    const traces = readJsonl<Trace>(join(dir, 'traces.jsonl'));
    expect(traces.map((t) => [t.questionId, t.trial])).toEqual(rows.map((r) => [r.id, r.trial]));
    expect(traces.map((t) => t.llmCalls[0]!.params.firstSample ?? 0)).toEqual(rows.map((r) => r.trial! * TRIAL_SAMPLE_STRIDE));

    // The real cache: trial 1 and 2's sampled calls were live (not trial 0's hits); the greedy
    // check was made once per question and replayed in its other trials.
    const sampled = c.provider.received.filter((x) => x.request.purpose === 'test.sample').map((x) => x.sampleIndex).sort((a, b) => a - b);
    expect(sampled).toEqual([0, 0, 0, 0, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000]);
    expect(c.provider.received.filter((x) => x.request.purpose === 'test.greedy')).toHaveLength(4);
    expect(rows.map((r) => r.usage.cacheHits)).toEqual(ids.flatMap(() => [0, 1, 1]));

    // The aggregate sees every row (each question's trials): part 2 makes it trial-aware.
    expect(c.seen.at(-1)!.map(rowKey)).toEqual(keys(rows));
    const state = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
    expect(state).toMatchObject({ status: 'FINISHED', total: 12, done: 12 });
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics).toMatchObject({ n: 12, total: 12, answered: 12 });
    const run = tracking.runs.get('run-1')!;
    expect(run.params.trials).toBe(3);
    expect(describeOutcome(outcome).split('\n')[0]).toMatch(/^run three FINISHED: 12 answered, 0 failed of 12 answers \(4 questions × 3 trials\), /);

    // The report keeps every trial: one table row and one trace per (question, trial).
    const loaded = loadRun(dir);
    expect(keys(loaded.results)).toEqual(keys(rows));
    expect(loaded.traces).toHaveLength(12);
    const table = examplesTable(loaded);
    expect([...table.matchAll(/<tr id="ex-([^"]+)"/g)].map((m) => m[1])).toEqual(keys(rows));
    // The notebook's table tells a question's trials apart; a run without trials has no such column.
    expect(resultRows(loaded.results).map((r) => [r.id, r.trial])).toEqual(rows.map((r) => [r.id, r.trial]));
    expect('trial' in resultRows([{ ...rows[0]!, trial: undefined }])[0]!).toBe(false);

    // A second run of the same config over the same cache replays every call, trials included.
    const again = components(undefined, new Scripted(), c.cache);
    const replay = await runExperiment({ config: baseConfig({ trials: 3 }), runDir: join(root, 'three-again'), components: again.parts, tracking: null });
    expect(again.provider.received).toHaveLength(0);
    expect(replay.results.map((r) => r.output)).toEqual(rows.map((r) => r.output));
    c.llm.close();
    again.llm.close();
  });

  it('a run without trials writes rows and traces with no trial, no trial layer and no trials param', async () => {
    const dir = join(root, 'one');
    const tracking = new FakeTracking();
    const c = components(makeExamples(3));
    const outcome = await runExperiment({ config: baseConfig(), runDir: dir, components: c.parts, tracking: async () => tracking });
    const rows = readJsonl<ExampleResult>(join(dir, 'results.jsonl'));
    expect(rows.map((r) => 'trial' in r)).toEqual([false, false, false]);
    expect(readJsonl<Trace>(join(dir, 'traces.jsonl')).map((t) => 'trial' in t)).toEqual([false, false, false]);
    expect(c.provider.received.map((x) => x.sampleIndex)).toEqual([0, 0, 0, 0, 0, 0]);
    expect('trials' in tracking.runs.get('run-1')!.params).toBe(false);
    expect(outcome.trials).toBeUndefined();
    expect(describeOutcome(outcome).split('\n')[0]).toMatch(/3 answered, 0 failed of 3 questions, /);
    c.llm.close();
  });

  it('resumed after an interrupt, it answers only the missing (question, trial) pairs and repeats no finished call', async () => {
    const examples = makeExamples(6);
    const reference = components(examples);
    const ref = await runExperiment({ config: baseConfig({ trials: 3 }), runDir: join(root, 'ref'), components: reference.parts, tracking: null });
    reference.llm.close();

    const dir = join(root, 'interrupted');
    const firstAnswered: string[] = [];
    const first = components(examples, new Scripted(20), undefined, firstAnswered);
    const controller = new AbortController();
    const running = runExperiment({ config: baseConfig({ trials: 3, concurrency: 2 }), runDir: dir, components: first.parts, tracking: null, env: { signal: controller.signal } });
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (readJsonl(join(dir, 'results.jsonl')).length >= 5) {
          clearInterval(t);
          resolve();
        }
      }, 5);
    });
    controller.abort();
    const killed = await running;
    first.llm.close();
    expect(killed.status).toBe('KILLED');
    const done = new Set(keys(killed.results));
    expect(done.size).toBeGreaterThanOrEqual(5);
    expect(done.size).toBeLessThan(18);
    // Taken trial by trial: every question's first answer before any question's second.
    expect(firstAnswered.slice(0, 6)).toEqual(examples.map((e) => e.id));
    const finishedCalls = new Set(
      readJsonl<Trace>(join(dir, 'traces.jsonl'))
        .filter((t) => done.has(rowKey({ id: t.questionId, trial: t.trial })))
        .flatMap((t) => t.llmCalls.map((call) => JSON.stringify([call.messages, call.params.firstSample ?? 0]))),
    );
    expect(finishedCalls.size).toBeGreaterThan(0);

    const secondAnswered: string[] = [];
    const second = components(examples, new Scripted(), first.cache, secondAnswered);
    const resumed = await runExperiment({ config: baseConfig({ trials: 3, concurrency: 2 }), runDir: dir, resume: true, components: second.parts, tracking: null });
    second.llm.close();
    expect(resumed.status).toBe('FINISHED');
    // The pipeline ran once for each missing pair, and for no finished one.
    const all = examples.flatMap((e) => [0, 1, 2].map((trial) => rowKey({ id: e.id, trial })));
    expect([...secondAnswered].sort()).toEqual(all.filter((k) => !done.has(k)).sort());
    expect(resumed.answeredNow).toBe(18 - done.size);
    // The model was asked nothing a finished trial had asked (the scripted model's calls, counted).
    for (const c of second.provider.received) expect(finishedCalls).not.toContain(JSON.stringify([c.request.messages, c.sampleIndex]));
    expect(second.provider.received.length).toBeLessThan(reference.provider.received.length);
    // The same rows as the uninterrupted run, in the same order.
    expect(resumed.results.map((r) => [rowKey(r), r.output])).toEqual(ref.results.map((r) => [rowKey(r), r.output]));
    expect(readJsonl<Trace>(join(dir, 'traces.jsonl')).map((t) => rowKey({ id: t.questionId, trial: t.trial }))).toEqual(keys(ref.results));
    // The number of trials is part of the config a resume keeps.
    const other = components(examples, new Scripted(), first.cache);
    await expect(runExperiment({ config: baseConfig({ trials: 2 }), runDir: dir, resume: true, components: other.parts, tracking: null })).rejects.toThrow(/trials/);
    other.llm.close();
  });

  it('merges shards run with trials into one run that keeps every trial', async () => {
    const examples = makeExamples(5);
    const cache = join(mkdtempSync(join(root, 'cache-')), 'llm.sqlite');
    const dirs = [0, 1].map((i) => join(root, `unit.shard-${i}of2`));
    for (const [i, dir] of dirs.entries()) {
      const c = components(examples, new Scripted(), cache);
      await runExperiment({ config: baseConfig({ trials: 2, shard: `${i}/2`, name: `unit.shard-${i}of2` }), runDir: dir, components: c.parts, tracking: null });
      c.llm.close();
    }
    const merged = await mergeRuns({ dirs, outDir: (name) => join(root, 'merged', name), aggregate: (rows) => exactMatchComponents([], sampledPipeline(), null as never).aggregate(rows), methods: methodCatalog(), tracking: null });
    expect(keys(merged.results)).toEqual(examples.flatMap((e) => [e.id, `${e.id}#1`]));
    expect(merged.config.trials).toBe(2);
    expect(merged.metrics).toMatchObject({ n: 10, total: 10 });
    const traces = readJsonl<Trace>(join(merged.dir, 'traces.jsonl'));
    expect(traces.map((t) => rowKey({ id: t.questionId, trial: t.trial }))).toEqual(keys(merged.results));
    expect(merged.results.every((r) => typeof scoreValues(r).em === 'number')).toBe(true);
  });

  it('the progress line counts answers of questions × trials', () => {
    const lines: string[] = [];
    const stream = { write: (s: string) => (lines.push(s), true), isTTY: false } as unknown as NodeJS.WriteStream;
    const observer = progressObserver(() => new ProgressBar({ label: 'p', stream, tty: false }));
    const usage = emptyUsage();
    observer.onStart!({ config: baseConfig(), runDir: root, resume: true, selection: makeExamples(4).map((example, index) => ({ example, index })), trials: 3, resumedCount: 5, session: 2, usage: () => usage, costFree: false });
    observer.onEnd!({ status: 'CRASHED', error: new Error('x') });
    expect(lines[0]).toMatch(/^p \| 5\/12 answers \(4 questions × 3 trials\) \(41%\)/);
  });

  it('a trial-aware aggregate\'s spread reaches metrics.json, the MLflow run and the closing line', async () => {
    // Stands in for part 2's aggregate (src/metrics): the sd of each question's scores across its trials, pooled.
    const c = components(makeExamples(3));
    const tracking = new FakeTracking();
    const aggregate = (rows: ExampleResult[]) => {
      const byId = new Map<string, number[]>();
      for (const r of rows) byId.set(r.id, [...(byId.get(r.id) ?? []), scoreValues(r).em ?? 0]);
      const means = [...byId.values()].map((v) => v.reduce((a, b) => a + b, 0) / v.length);
      const variances = [...byId.values()].map((v, i) => v.reduce((a, b) => a + (b - means[i]!) ** 2, 0) / (v.length - 1));
      const mean = means.reduce((a, b) => a + b, 0) / means.length;
      const trialSd = Math.sqrt(variances.reduce((a, b) => a + b, 0) / variances.length);
      return { em: { mean, ciLow: mean, ciHigh: mean, n: byId.size, trials: 3, trialSd } };
    };
    const outcome = await runExperiment({ config: baseConfig({ trials: 3, name: 'spread' }), runDir: join(root, 'spread'), components: { ...c.parts, aggregate }, tracking: async () => tracking });
    c.llm.close();
    // Item k answers (k + t) mod 3 in trial t: right in exactly one of its three trials, so every question's sd is that of {100, 0, 0}.
    const sd = Math.sqrt((2 * (100 / 3) ** 2 + (200 / 3) ** 2) / 2);
    expect(outcome.metrics.metrics.em).toMatchObject({ n: 3, trials: 3 });
    expect(outcome.metrics.metrics.em!.trialSd).toBeCloseTo(sd);
    expect(tracking.runs.get('run-1')!.metrics.at(-1)!.metrics.em_trial_sd).toBeCloseTo(sd);
    expect(describeOutcome(outcome)).toMatch(new RegExp(`em +33\\.3 +95% CI \\[33\\.3, 33\\.3\\]  trial sd ${sd.toFixed(1)}`));
  });

  it('logs each metric\'s spread across trials to MLflow when the aggregate gives it', () => {
    const m: RunMetrics = { n: 6, usage: { llm_calls: 6, cache_hits: 0, wall_seconds: 1 }, metrics: { em: { mean: 50, ciLow: 20, ciHigh: 80, n: 3, trials: 2, trialSd: 12.5, samplingShare: 0.25 }, f1: { mean: 1, ciLow: 0, ciHigh: 2, n: 3 } } };
    const out = metricsForMlflow(m);
    expect(out).toMatchObject({ em: 50, em_trial_sd: 12.5, em_sampling_share: 0.25, f1: 1 });
    expect('f1_trial_sd' in out).toBe(false);
  });
});
