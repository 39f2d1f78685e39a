import { describe, expect, it } from 'vitest';
import { summariseRun } from '../../src/experiments/runner';
import { CostCap, CostLimitError, withSpendGuard } from '../../src/llm/budget';
import { LlmClient } from '../../src/llm/client';
import { LlmRequestError } from '../../src/llm/errors';
import { withJudge } from '../../src/llm/judge-routing';
import { classifyError } from '../../src/llm/limiter';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { emptyUsage, type Usage } from '../../src/llm/types';
import { addUsage, tokensOf } from '../../src/llm/usage';
import { planMetrics } from '../../src/metrics/registry';
import type { ExampleResult } from '../../src/run-files';
import { TraceRecorder } from '../../src/trace/recorder';

/**
 * Issue 37's contracts: one usage type added by one function, with unknown token counts kept
 * unknown; the cost cap installed on a model once; errors classified by their providers; and one
 * decision of which metrics run and which need a reader.
 */
describe('usage', () => {
  const call = (extra: Partial<Usage>): Usage => ({ ...emptyUsage(), calls: 1, samples: 1, ...extra });

  it('adds counts, keeps a token sum unknown when a part is, and adds cost over the priced parts', () => {
    const known = call({ promptTokens: 10, completionTokens: 2, liveSeconds: 0.5, costUsd: 1e-6 });
    const unknown = call({ promptTokens: undefined, completionTokens: undefined, cacheHits: 1 });
    expect(addUsage(known, known)).toEqual({ calls: 2, samples: 2, promptTokens: 20, completionTokens: 4, cacheHits: 0, liveSeconds: 1, costUsd: 2e-6 });
    const mixed = addUsage(known, unknown);
    expect(mixed).toMatchObject({ calls: 2, samples: 2, cacheHits: 1, liveSeconds: 0.5, costUsd: 1e-6 });
    expect(mixed.promptTokens).toBeUndefined();
    expect(tokensOf(mixed)).toBeUndefined();
    expect(addUsage(call({}), call({}))).not.toHaveProperty('costUsd');
  });

  it('a reply without token counts leaves them unknown in the result, the meter, the trace and the run, and unpriced', async () => {
    const provider = new ScriptedProvider([{ text: 'x', finishReason: 'stop', usage: { promptTokens: undefined, completionTokens: undefined } }, 'y']);
    const client = new LlmClient(provider, { pricing: { prompt: 1, completion: 2 } });
    const recorder = new TraceRecorder('vanilla', { id: 'q', question: 'q?' }, client);
    const first = await recorder.llm.generate({ prompt: 'a' });
    expect(first.usage.promptTokens).toBeUndefined();
    expect(first.completions[0]!.costUsd).toBeUndefined(); // not $0: its size is not known
    await recorder.llm.generate({ prompt: 'b' });
    expect(client.usage).toMatchObject({ calls: 2, samples: 2, promptTokens: undefined, completionTokens: undefined });
    const trace = recorder.finish({ kind: 'vanilla' } as never, 'y');
    expect(trace.summary).not.toHaveProperty('promptTokens');
    expect(trace.llmCalls[0]!.completions[0]).not.toHaveProperty('promptTokens');
    expect(trace.llmCalls[1]!.completions[0]!.promptTokens).toBeGreaterThan(0);
    const result: ExampleResult = { id: 'q', index: 0, question: 'q?', output: 'y', metrics: {}, usage: trace.summary };
    const metrics = summariseRun([result], () => ({}), { wallSeconds: 1, total: 1, status: 'FINISHED' });
    expect(metrics.usage).toMatchObject({ llm_calls: 2, cache_hits: 0 });
    expect(metrics.usage).not.toHaveProperty('prompt_tokens');
    client.close();
  });
});

describe('the cost cap on a model', () => {
  it('installed once on a model with a separate judge, counts what both clients spend', async () => {
    const llm = new LlmClient(new ScriptedProvider(() => 'answer'), { pricing: { prompt: 1, completion: 1 } });
    const judge = new LlmClient(new ScriptedProvider(() => 'Yes', 'judge-model'), { pricing: { prompt: 1, completion: 1 } });
    let stopped: CostLimitError | undefined;
    const cap = new CostCap(1, 0, 0, (e) => (stopped = e));
    const model = withSpendGuard(withJudge(llm, judge), cap);
    await model.generate({ prompt: 'a question' });
    await model.judge({ prompt: 'is it so?', labels: ['Yes', 'No'] });
    expect(cap.spentUsd).toBeCloseTo((llm.usage.costUsd ?? 0) + (judge.usage.costUsd ?? 0), 15);
    expect(llm.usage.costUsd).toBeGreaterThan(0);
    expect(judge.usage.costUsd).toBeGreaterThan(0);
    // The client itself is not capped: only the view the run installed the cap on is.
    const full = new CostCap(1e-9, 1);
    await expect(withSpendGuard(llm, full).generate({ prompt: 'another' })).rejects.toThrow(CostLimitError);
    await expect(llm.generate({ prompt: 'another' })).resolves.toBeDefined();
    expect(stopped).toBeUndefined();
    llm.close();
    judge.close();
  });
});

describe('error classification', () => {
  it('the limiter decides on the kind a provider gave; an untranslated error is other and not retried', () => {
    expect(classifyError(new LlmRequestError('m', { kind: 'server', status: 503 }))).toEqual({ kind: 'server', retryable: true, status: 503 });
    // An SDK-looking error nobody translated: the limiter does not guess from its status.
    expect(classifyError(Object.assign(new Error('HTTP 503'), { status: 503 }))).toEqual({ kind: 'other', retryable: false });
    expect(classifyError(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toMatchObject({ kind: 'aborted', retryable: false });
  });
});

describe('which metrics a run computes', () => {
  it('named metrics as named; else the defaults, less those that need a reader when it is off', () => {
    expect(planMetrics('asqa').needReader).toEqual(['d_f1', 'dr']);
    const off = planMetrics('asqa', { readerOff: true });
    expect(off.metrics).not.toContain('d_f1');
    expect(off.needReader).toEqual([]);
    expect(off.usesSplitter).toBe(true);
    const named = planMetrics('asqa', { metrics: ['str_em', 'dr'], readerOff: true });
    expect(named.metrics).toEqual(['str_em', 'dr']);
    expect(named.needReader).toEqual(['dr']);
    expect(planMetrics('fever').metrics).toEqual(['accuracy']);
  });
});
