import {
  emptyUsage,
  type GenerateRequest,
  type GenerateResult,
  type JudgeRequest,
  type JudgeResult,
  type LanguageModel,
  type UsageTotals,
} from './types';

/**
 * Usage accounting. Every `GenerateResult` carries its own per-sample usage; a `UsageMeter`
 * adds results up for a run (`LlmClient.usage`) or for any narrower scope a caller wants (a
 * question, a stage) via `meteredModel`.
 *
 * Token counts include cache hits: they measure what a method costs, which must not depend on
 * whether the cache was warm. `cacheHits` and `liveSeconds` say what this run actually paid.
 */
export class UsageMeter {
  private totals: UsageTotals = emptyUsage();

  /** Add one `generate` result: one call, n samples. */
  add(result: GenerateResult): void {
    addResult(this.totals, result);
  }

  /** Add one judgment: one call, one sample. */
  addJudgement(result: JudgeResult): void {
    addJudgeResult(this.totals, result);
  }

  /** A copy; later calls do not change it. */
  snapshot(): UsageTotals {
    return { ...this.totals };
  }

  /** Return the totals so far and start again from zero. */
  reset(): UsageTotals {
    const before = this.totals;
    this.totals = emptyUsage();
    return before;
  }
}

export function addResult(totals: UsageTotals, result: GenerateResult): void {
  totals.calls += 1;
  for (const c of result.completions) {
    totals.samples += 1;
    totals.promptTokens += c.usage.promptTokens;
    totals.completionTokens += c.usage.completionTokens;
    if (c.cacheHit) totals.cacheHits += 1;
    else totals.liveSeconds += c.latencySeconds;
    if (c.costUsd !== undefined) totals.costUsd = (totals.costUsd ?? 0) + c.costUsd;
  }
}

export function addJudgeResult(totals: UsageTotals, result: JudgeResult): void {
  totals.calls += 1;
  totals.samples += 1;
  totals.promptTokens += result.usage.promptTokens;
  totals.completionTokens += result.usage.completionTokens;
  if (result.cacheHit) totals.cacheHits += 1;
  else totals.liveSeconds += result.latencySeconds;
  if (result.costUsd !== undefined) totals.costUsd = (totals.costUsd ?? 0) + result.costUsd;
}

/** Usage of a single result, as totals. */
export function usageOf(result: GenerateResult): UsageTotals {
  const totals = emptyUsage();
  addResult(totals, result);
  return totals;
}

export function addUsage(a: UsageTotals, b: UsageTotals): UsageTotals {
  return {
    calls: a.calls + b.calls,
    samples: a.samples + b.samples,
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    cacheHits: a.cacheHits + b.cacheHits,
    liveSeconds: a.liveSeconds + b.liveSeconds,
    ...(a.costUsd !== undefined || b.costUsd !== undefined ? { costUsd: (a.costUsd ?? 0) + (b.costUsd ?? 0) } : {}),
  };
}

/** `after - before`, for the usage between two snapshots of one meter. */
export function diffUsage(after: UsageTotals, before: UsageTotals): UsageTotals {
  return {
    calls: after.calls - before.calls,
    samples: after.samples - before.samples,
    promptTokens: after.promptTokens - before.promptTokens,
    completionTokens: after.completionTokens - before.completionTokens,
    cacheHits: after.cacheHits - before.cacheHits,
    liveSeconds: after.liveSeconds - before.liveSeconds,
    ...(after.costUsd !== undefined ? { costUsd: after.costUsd - (before.costUsd ?? 0) } : {}),
  };
}

/**
 * A view of `model` that meters its own calls, e.g. one per question when questions run
 * concurrently on one client (snapshot differences of the shared meter would mix them), or one
 * per run session (the progress line). With `signal`, every call is tied to it, so that an
 * interrupt stops calls even where a caller does not pass a signal on.
 */
export function meteredModel(model: LanguageModel, options: { signal?: AbortSignal } = {}): LanguageModel & { readonly usage: UsageMeter } {
  const usage = new UsageMeter();
  const { signal } = options;
  return {
    provider: model.provider,
    model: model.model,
    ...(model.judgeModel ? { judgeModel: model.judgeModel } : {}),
    usage,
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      signal?.throwIfAborted();
      const result = await model.generate(signal && !request.signal ? { ...request, signal } : request);
      usage.add(result);
      return result;
    },
    async judge(request: JudgeRequest): Promise<JudgeResult> {
      signal?.throwIfAborted();
      const result = await model.judge(signal && !request.signal ? { ...request, signal } : request);
      usage.addJudgement(result);
      return result;
    },
  };
}
