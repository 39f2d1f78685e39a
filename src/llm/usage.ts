import type { ModelMiddleware } from './middleware';
import { emptyUsage, type Completion, type GenerateResult, type JudgeResult, type TokenUsage, type Usage } from './types';

/**
 * Usage accounting. Every `GenerateResult` carries its own per-sample usage; a `UsageMeter`
 * adds results up for a run (`LlmClient.usage`) or for any narrower scope a caller wants (a
 * session, a question, a stage) through a `meterUsage` layer. Whatever is summed — samples into a call, calls into a
 * question, questions into a run — is summed by `addUsage`.
 *
 * Token counts include cache hits: they measure what a method costs, which must not depend on
 * whether the cache was warm. `cacheHits` and `liveSeconds` say what this run actually paid.
 */
export class UsageMeter {
  private totals: Usage = emptyUsage();

  /** Add one `generate` result: one call, n samples. */
  add(result: GenerateResult): void {
    this.totals = addUsage(this.totals, usageOf(result));
  }

  /** Add one judgment: one call, one sample. */
  addJudgement(result: JudgeResult): void {
    this.totals = addUsage(this.totals, usageOfJudgement(result));
  }

  /** A copy; later calls do not change it. */
  snapshot(): Usage {
    return { ...this.totals };
  }

  /** Return the totals so far and start again from zero. */
  reset(): Usage {
    const before = this.totals;
    this.totals = emptyUsage();
    return before;
  }
}

/** A count that is unknown when either side's is (see `addUsage`). */
function addKnown(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

/**
 * `a + b`, field by field: the one place usage is added up (a call's samples, a question's calls,
 * a run's questions, a session's spend). Counts add. A token count is unknown when either side's
 * is: a total that silently left out a call whose tokens were not reported would pass for complete
 * (vercel/ai adds the known ones instead; here a gap stays visible). Cached prompt tokens and cost
 * add over the sides that have them and stay absent when neither has: the endpoint did not say,
 * or no price is known.
 */
export function addUsage<U extends TokenUsage & Partial<Omit<Usage, keyof TokenUsage>>>(a: U, b: U): U {
  const out = { ...a, ...b } as U;
  out.promptTokens = addKnown(a.promptTokens, b.promptTokens);
  out.completionTokens = addKnown(a.completionTokens, b.completionTokens);
  for (const key of ['calls', 'samples', 'cacheHits', 'liveSeconds'] as const) {
    if (a[key] !== undefined || b[key] !== undefined) out[key] = ((a[key] ?? 0) + (b[key] ?? 0)) as U[typeof key];
  }
  for (const key of ['cachedPromptTokens', 'costUsd'] as const) {
    if (a[key] !== undefined || b[key] !== undefined) out[key] = (a[key] ?? 0) + (b[key] ?? 0);
    else delete out[key];
  }
  return out;
}

/** `after - before`, for the usage between two snapshots of one meter (unknown tokens stay unknown). */
export function diffUsage(after: Usage, before: Usage): Usage {
  const minus = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : x - y);
  return {
    calls: after.calls - before.calls,
    samples: after.samples - before.samples,
    promptTokens: minus(after.promptTokens, before.promptTokens),
    completionTokens: minus(after.completionTokens, before.completionTokens),
    cacheHits: after.cacheHits - before.cacheHits,
    liveSeconds: after.liveSeconds - before.liveSeconds,
    ...(after.costUsd !== undefined ? { costUsd: after.costUsd - (before.costUsd ?? 0) } : {}),
  };
}

/** One sample as usage: no call of its own (the call counts once), a hit or live seconds, its cost. */
export function sampleUsage(sample: { usage: TokenUsage; cacheHit: boolean; latencySeconds: number; costUsd?: number }): Usage {
  return {
    calls: 0,
    samples: 1,
    promptTokens: sample.usage.promptTokens,
    completionTokens: sample.usage.completionTokens,
    ...(sample.usage.cachedPromptTokens !== undefined ? { cachedPromptTokens: sample.usage.cachedPromptTokens } : {}),
    cacheHits: sample.cacheHit ? 1 : 0,
    liveSeconds: sample.cacheHit ? 0 : sample.latencySeconds,
    ...(sample.costUsd !== undefined ? { costUsd: sample.costUsd } : {}),
  };
}

/** Usage of one `generate` result: one call, its samples. */
export function usageOf(result: GenerateResult): Usage {
  return result.completions.map((c: Completion) => sampleUsage(c)).reduce(addUsage, { ...emptyUsage(), calls: 1 });
}

/** Usage of one judgment: one call, one sample. */
export function usageOfJudgement(result: JudgeResult): Usage {
  return addUsage({ ...emptyUsage(), calls: 1 }, sampleUsage(result));
}

/**
 * A layer that adds every call passing through it to `meter`: one per run session (its spend and
 * the progress line, `runModel`), or one per question or stage where calls run concurrently on
 * one client (snapshot differences of the client's own meter would mix them). The caller keeps
 * `meter` and reads it; the layer only writes. A call that fails adds nothing.
 */
export function meterUsage(meter: UsageMeter): ModelMiddleware {
  return {
    name: 'meter',
    async generate(req, next) {
      const result = await next(req);
      meter.add(result);
      return result;
    },
    async judge(req, next) {
      const result = await next(req);
      meter.addJudgement(result);
      return result;
    },
  };
}

/** Prompt plus completion tokens; undefined when either is unknown. */
export function tokensOf(usage: TokenUsage): number | undefined {
  return usage.promptTokens === undefined || usage.completionTokens === undefined ? undefined : usage.promptTokens + usage.completionTokens;
}
