import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CostCap, CostLimitError, spendCap } from '../../src/llm/budget';
import { LlmClient } from '../../src/llm/client';
import { judgeLayers, routeJudgments } from '../../src/llm/judge-routing';
import { abortOn, wrapModel, type ModelMiddleware } from '../../src/llm/middleware';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { runMiddleware, runModel } from '../../src/llm/run-model';
import type { LanguageModelProvider, NormalisedRequest, ProviderCompletion } from '../../src/llm/types';
import { meterUsage, UsageMeter } from '../../src/llm/usage';
import { TraceRecorder } from '../../src/trace/recorder';

const YES_NO = ['Yes', 'No'];

/** A client over a scripted provider that answers `reply` and judges P(Yes) = `p`. */
function client(reply: string, model: string, p = 0.75, priced?: { cache: string }): { llm: LlmClient; provider: ScriptedProvider } {
  const provider = new ScriptedProvider(() => reply, model, () => p);
  return { llm: new LlmClient(provider, priced ? { pricing: { prompt: 1, completion: 1 }, cache: { path: priced.cache } } : {}), provider };
}

/** A layer that logs when a call enters and leaves it, and tags the request's purpose on the way in. */
function logging(name: string, log: string[]): ModelMiddleware {
  return {
    name,
    async generate(req, next) {
      log.push(`${name}>`);
      const result = await next({ ...req, purpose: `${req.purpose ?? ''}/${name}` });
      log.push(`<${name}`);
      return result;
    },
    async judge(req, next) {
      log.push(`${name}>`);
      const result = await next(req);
      log.push(`<${name}`);
      return result;
    },
  };
}

describe('wrapModel', () => {
  it('folds the list with the first layer outermost, the model innermost', async () => {
    const { llm, provider } = client('hi', 'base');
    const log: string[] = [];
    const model = wrapModel(llm, [logging('a', log), logging('b', log), logging('c', log)]);
    await model.generate({ prompt: 'q', purpose: 'p' });
    expect(log).toEqual(['a>', 'b>', 'c>', '<c', '<b', '<a']);
    // Each layer's request change reaches the next one in: the provider saw a's, then b's, then c's.
    expect(provider.received[0]!.request.purpose).toBe('p/a/b/c');
    log.length = 0;
    await model.judge({ prompt: 'q', labels: YES_NO });
    expect(log).toEqual(['a>', 'b>', 'c>', '<c', '<b', '<a']);
  });

  it('passes a call through a layer without a hook for it, and keeps the model’s names', async () => {
    const { llm, provider } = client('hi', 'base-model', 0.6);
    const log: string[] = [];
    const onlyGenerate: ModelMiddleware = { name: 'g', generate: (req, next) => (log.push('g'), next(req)) };
    const onlyJudge: ModelMiddleware = { name: 'j', judge: (req, next) => (log.push('j'), next(req)) };
    const model = wrapModel(llm, [onlyGenerate, { name: 'nothing' }, onlyJudge]);
    expect(model.provider).toBe('scripted');
    expect(model.model).toBe('base-model');
    expect(model.judgeModel).toBeUndefined();
    expect((await model.generate({ prompt: 'q' })).completions[0]!.text).toBe('hi');
    expect(log).toEqual(['g']);
    expect((await model.judge({ prompt: 'q', labels: YES_NO })).p).toBeCloseTo(0.6, 12);
    expect(log).toEqual(['g', 'j']);
    expect(provider.received).toHaveLength(1);
    expect(provider.judged).toHaveLength(1);
    // No layers: the model itself, not a view of it.
    expect(wrapModel(llm, [])).toBe(llm);
  });

  it('keeps an inner judge’s name through outer layers, and a layer may answer without calling next', async () => {
    const { llm } = client('gen', 'small');
    const { llm: judge } = client('unused', 'big', 0.9);
    const inner = wrapModel(llm, [routeJudgments(judge)]);
    expect(inner.judgeModel).toEqual({ provider: 'scripted', model: 'big' });
    const outer = wrapModel(inner, [logging('x', [])]);
    expect(outer.judgeModel).toEqual({ provider: 'scripted', model: 'big' });
    expect(outer.model).toBe('small');
  });

  it('a failing inner call reaches every outer layer as a rejection', async () => {
    const failing = new LlmClient(new ScriptedProvider([], 'empty'), { limiter: { maxRetries: 0 } });
    const meter = new UsageMeter();
    const model = wrapModel(failing, [meterUsage(meter)]);
    await expect(model.generate({ prompt: 'q' })).rejects.toThrow(/script exhausted/);
    // A call that failed adds nothing to the meter.
    expect(meter.snapshot().calls).toBe(0);
  });
});

describe('the run’s layers', () => {
  it('judge routing: judgments go to the judge’s client, generations stay; the same client is no second model', async () => {
    const gen = client('an answer', 'small', 0.1);
    const jud = client('unused', 'big', 0.9);
    const model = wrapModel(gen.llm, [routeJudgments(jud.llm)]);
    expect((await model.generate({ prompt: 'q' })).completions[0]!.text).toBe('an answer');
    expect((await model.judge({ prompt: 'q', labels: YES_NO })).p).toBeCloseTo(0.9, 12);
    expect(gen.provider.received).toHaveLength(1);
    expect(gen.provider.judged).toHaveLength(0);
    expect(jud.provider.received).toHaveLength(0);
    expect(jud.provider.judged).toHaveLength(1);
    expect(judgeLayers(gen.llm, jud.llm).map((l) => l.name)).toEqual(['judge']);
    expect(judgeLayers(gen.llm, gen.llm)).toEqual([]);
    expect(judgeLayers(gen.llm, undefined)).toEqual([]);
    expect(runModel(gen.llm, { judge: gen.llm })).toBe(gen.llm);
  });

  it('meter: counts generations and judgments that pass it; the caller reads the meter it holds', async () => {
    const { llm } = client('four', 'm');
    const meter = new UsageMeter();
    const model = wrapModel(llm, [meterUsage(meter)]);
    await model.generate({ prompt: 'q', n: 3, temperature: 1 });
    await model.judge({ prompt: 'q', labels: YES_NO });
    expect(meter.snapshot()).toMatchObject({ calls: 2, samples: 4 });
    // Calls straight to the client are not this meter's.
    await llm.generate({ prompt: 'other' });
    expect(meter.snapshot().calls).toBe(2);
    expect(llm.usage.calls).toBe(3);
  });

  it('signal: refuses calls once it fired, cancels one in flight, and keeps a request’s own signal', async () => {
    const started: string[] = [];
    const hanging: LanguageModelProvider = {
      provider: 'hanging',
      model: 'h',
      doGenerate: (request: NormalisedRequest, _i: number, options: { signal?: AbortSignal }) =>
        new Promise<ProviderCompletion>((_resolve, reject) => {
          started.push(request.purpose);
          options.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true });
        }),
    };
    const llm = new LlmClient(hanging, { limiter: { maxRetries: 0 } });
    const run = new AbortController();
    const model = wrapModel(llm, [abortOn(run.signal)]);
    const inFlight = model.generate({ prompt: 'q', purpose: 'first' });
    await new Promise((r) => setTimeout(r, 20));
    expect(started).toEqual(['first']);
    run.abort(new Error('run stopped'));
    await expect(inFlight).rejects.toThrow('run stopped');
    // After it fired: refused before the client sees the call.
    await expect(model.generate({ prompt: 'q', purpose: 'second' })).rejects.toThrow('run stopped');
    await expect(model.judge({ prompt: 'q', labels: YES_NO })).rejects.toThrow('run stopped');
    expect(started).toEqual(['first']);

    // A request's own signal still stops its call under a run signal that has not fired.
    const other = wrapModel(llm, [abortOn(new AbortController().signal)]);
    const own = new AbortController();
    const call = other.generate({ prompt: 'q', purpose: 'third', signal: own.signal });
    await new Promise((r) => setTimeout(r, 20));
    own.abort(new Error('caller gave up'));
    await expect(call).rejects.toThrow('caller gave up');
  });

  it('cost cap: one cap over generator and judge, asked only before live calls', async () => {
    const cache = join(mkdtempSync(join(tmpdir(), 'ambiqa-seam-')), 'llm.sqlite');
    const gen = client('answer', 'small', 0.5, { cache });
    const jud = client('unused', 'big', 0.5, { cache });
    const cap = new CostCap(1);
    const model = wrapModel(gen.llm, [spendCap(cap), routeJudgments(jud.llm)]);
    await model.generate({ prompt: 'a question' });
    await model.judge({ prompt: 'is it so?', labels: YES_NO });
    expect(cap.spentUsd).toBeGreaterThan(0);
    expect(cap.spentUsd).toBeCloseTo(gen.llm.usage.costUsd! + jud.llm.usage.costUsd!, 15);
    // A full cap refuses a live call on either side, but replays what was paid for.
    const full = wrapModel(gen.llm, [spendCap(new CostCap(1e-9, 1)), routeJudgments(jud.llm)]);
    await expect(full.generate({ prompt: 'new question' })).rejects.toThrow(CostLimitError);
    await expect(full.judge({ prompt: 'new judgment?', labels: YES_NO })).rejects.toThrow(CostLimitError);
    expect((await full.generate({ prompt: 'a question' })).completions[0]!.cacheHit).toBe(true);
    expect((await full.judge({ prompt: 'is it so?', labels: YES_NO })).cacheHit).toBe(true);
    // A layer placed inside judge routing would never see judgments: the order is the list's.
    const inside = new CostCap(1e-9, 1);
    const misplaced = wrapModel(gen.llm, [routeJudgments(jud.llm), spendCap(inside)]);
    await expect(misplaced.judge({ prompt: 'third?', labels: YES_NO })).resolves.toBeDefined();
    await expect(misplaced.generate({ prompt: 'third' })).rejects.toThrow(CostLimitError);
    gen.llm.close();
    jud.llm.close();
  });

  it('runModel: signal, cost cap, meter, judge — outermost first; the meter counts the judge’s calls', async () => {
    const gen = client('answer', 'small');
    const jud = client('unused', 'big', 0.8);
    const signal = new AbortController();
    const meter = new UsageMeter();
    const cap = new CostCap(1);
    expect(runMiddleware(gen.llm, { signal: signal.signal, cap, meter, judge: jud.llm }).map((l) => l.name)).toEqual(['signal', 'cost-cap', 'meter', 'judge']);
    expect(runMiddleware(gen.llm, { meter }).map((l) => l.name)).toEqual(['meter']);
    const model = runModel(gen.llm, { signal: signal.signal, cap, meter, judge: jud.llm });
    expect(model.judgeModel).toEqual({ provider: 'scripted', model: 'big' });
    await model.generate({ prompt: 'q' });
    await model.judge({ prompt: 'q', labels: YES_NO });
    expect(meter.snapshot()).toMatchObject({ calls: 2, samples: 2 });
    expect(jud.provider.judged).toHaveLength(1);
    signal.abort(new Error('stop'));
    await expect(model.judge({ prompt: 'q2', labels: YES_NO })).rejects.toThrow('stop');
    // Refused outside the meter: nothing counted, nothing sent.
    expect(meter.snapshot().calls).toBe(2);
    expect(jud.provider.judged).toHaveLength(1);
  });

  it('the trace recorder records through its own layer over the run’s model, naming the judge', async () => {
    const gen = client('answer', 'small');
    const jud = client('unused', 'big', 0.8);
    const meter = new UsageMeter();
    const rec = new TraceRecorder('closed-book', { id: 'q1', question: 'Q?' }, runModel(gen.llm, { meter, judge: jud.llm }));
    await rec.llm.generate({ prompt: 'q', purpose: 'closed-book.answer' });
    await rec.llm.judge({ prompt: 'q', labels: YES_NO, purpose: 'toc.verify' });
    expect(rec.llmCalls.map((c) => [c.purpose, c.model])).toEqual([
      ['closed-book.answer', undefined],
      ['toc.verify', 'scripted:big'],
    ]);
    expect(rec.llm.judgeModel).toEqual({ provider: 'scripted', model: 'big' });
    expect(rec.finish({ kind: 'baseline', passageIds: [] }, 'answer').judge).toEqual({ provider: 'scripted', model: 'big' });
    // The run's meter, further in, saw the same calls.
    expect(meter.snapshot().calls).toBe(2);
  });
});
