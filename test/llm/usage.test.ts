import { describe, expect, it } from 'vitest';
import { summariseRun } from '../../src/experiments/runner';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { emptyUsage, type Usage } from '../../src/llm/types';
import { addUsage, tokensOf } from '../../src/llm/usage';
import type { ExampleResult } from '../../src/run-files';
import { TraceRecorder } from '../../src/trace/recorder';

/**
 * One usage type added by one function (`addUsage`), with token counts a provider does not report
 * kept unknown from the completion to the run's metrics.
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
    const result: ExampleResult = { id: 'q', index: 0, question: 'q?', output: 'y', format: 3, scores: {}, usage: trace.summary };
    const metrics = summariseRun([result], () => ({}), { wallSeconds: 1, total: 1, status: 'FINISHED' });
    expect(metrics.usage).toMatchObject({ llm_calls: 2, cache_hits: 0 });
    expect(metrics.usage).not.toHaveProperty('prompt_tokens');
    client.close();
  });
});
