import type { GenerateRequest, GenerateResult, JudgeRequest, JudgeResult, LanguageModel } from '../llm/types';

/** Live counters for the progress line; the per-example numbers come from each trace's summary. */
export interface LiveUsage {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  cacheHits: number;
}

export function emptyLiveUsage(): LiveUsage {
  return { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0 };
}

/**
 * Wraps the run's model: counts calls, tokens and cache hits as they finish, and ties every call
 * to the run's abort signal, so that Ctrl-C stops calls even in a pipeline that does not pass
 * `ctx.signal` on.
 */
export function countingModel(inner: LanguageModel, usage: LiveUsage, signal?: AbortSignal): LanguageModel {
  return {
    provider: inner.provider,
    model: inner.model,
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      signal?.throwIfAborted();
      const result = await inner.generate(signal && !request.signal ? { ...request, signal } : request);
      usage.llmCalls += 1;
      for (const c of result.completions) {
        usage.promptTokens += c.usage.promptTokens;
        usage.completionTokens += c.usage.completionTokens;
        if (c.cacheHit) usage.cacheHits += 1;
      }
      return result;
    },
    async judge(request: JudgeRequest): Promise<JudgeResult> {
      signal?.throwIfAborted();
      const result = await inner.judge(signal && !request.signal ? { ...request, signal } : request);
      usage.llmCalls += 1;
      usage.promptTokens += result.usage.promptTokens;
      usage.completionTokens += result.usage.completionTokens;
      if (result.cacheHit) usage.cacheHits += 1;
      return result;
    },
  };
}
