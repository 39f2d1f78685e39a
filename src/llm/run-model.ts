import { spendCap } from './budget';
import { judgeLayers } from './judge-routing';
import { abortOn, wrapModel, type ModelMiddleware } from './middleware';
import { trialSamples } from './trial';
import type { LanguageModel, SpendGuard } from './types';
import { meterUsage, type UsageMeter } from './usage';

/** What a run session puts around its model; each part absent leaves its layer out. */
export interface RunModelParts {
  /** The session's signal (Ctrl-C, the cost cap tripping): calls after it are refused, calls in flight cancelled. */
  signal?: AbortSignal;
  /** The run's cost cap (`llm.maxCostUsd`): one cap over what the generator and the judge spend together. */
  cap?: SpendGuard;
  /** Where the session's usage is added up (its spend, the progress line); the caller reads it. */
  meter?: UsageMeter;
  /** The client of the run's `judge:` section: judgments go there (the same client as `base`: no second model). */
  judge?: LanguageModel;
  /**
   * The run answers each question more than once (`trials: k`): sampled calls draw the sample
   * indexes of the trial they run in (`inTrial`, trial.ts), so trials do not replay each other.
   */
  trials?: boolean;
  /**
   * Who the run is (`<run folder>@<its first start>`): stored beside each cache entry its live
   * calls write, and reported by a later replay as `cachedFrom`, so a run's trace says which of
   * its answers another run computed (`ambiqa reproduce` names them).
   */
  cacheWriter?: string;
}

/** The run model's `cache-writer` layer: every call carries the run's name for the cache. */
export function stampCacheWriter(writer: string): ModelMiddleware {
  return {
    name: 'cache-writer',
    generate: (req, next) => next({ ...req, cacheWriter: writer }),
    judge: (req, next) => next({ ...req, cacheWriter: writer }),
  };
}

/**
 * The layers of a run's model, outermost first:
 * 1. `signal` — a stopped session refuses a call before any other layer sees it;
 * 2. `cost-cap` — attaches the cap, outside judge routing so both clients spend under it;
 * 3. `meter` — counts every call the session makes, judgments to the judge included;
 * 4. `trial` — under `trials: k`, a sampled call moves to its trial's sample indexes (trial.ts),
 *    inside the meter and the cap, which count a call whatever its indexes;
 * 5. `cache-writer` — names the run on each call, for the cache entries its live calls store;
 * 6. `judge` — innermost: the last hop of a judgment is the judge's client.
 * The persistent cache, the limiter and the per-call cost stay in the clients (`LlmClient`): a
 * cache keyed per sample and per model, and a cap asked only before live calls, need to stand
 * between the cache and the provider, where no outer layer reaches.
 */
export function runMiddleware(base: LanguageModel, parts: RunModelParts): ModelMiddleware[] {
  return [
    ...(parts.signal ? [abortOn(parts.signal)] : []),
    ...(parts.cap ? [spendCap(parts.cap)] : []),
    ...(parts.meter ? [meterUsage(parts.meter)] : []),
    ...(parts.trials ? [trialSamples()] : []),
    ...(parts.cacheWriter ? [stampCacheWriter(parts.cacheWriter)] : []),
    ...judgeLayers(base, parts.judge),
  ];
}

/**
 * The run's model: `base` (the `llm:` client) wrapped once, for a whole session, in the layers of
 * `runMiddleware`. The one place a run wraps its model; per-question views (the trace recorder)
 * wrap this one with `wrapModel` too, never by hand.
 */
export function runModel(base: LanguageModel, parts: RunModelParts = {}): LanguageModel {
  return wrapModel(base, runMiddleware(base, parts));
}
