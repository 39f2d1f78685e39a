import type { GenerateRequest, GenerateResult, JudgeRequest, JudgeResult, LanguageModel } from './types';

/**
 * The model seam. Everything a run adds around its model — the abort signal, the cost cap, the
 * usage meter, judge routing, the trace recorder — is one of these, and `wrapModel` folds a list
 * of them around a model once, where the run is wired (`runModel`, run-model.ts). A layer sees
 * the request on its way in and the result on its way out, and calls `next` to go on inward (or
 * does not: judge routing answers judgments from another model). A layer without a `generate` or
 * `judge` hook passes those calls through untouched, so no layer ever forwards a method by hand:
 * a method added to `LanguageModel` reaches every layer through `wrapModel` alone, and the order of
 * the layers is the order of one list, not of the files that happened to wrap last.
 */
export interface ModelMiddleware {
  /** For traces of the seam and error messages (`signal`, `cost-cap`, `meter`, `judge`, `trace`). */
  readonly name: string;
  generate?(req: GenerateRequest, next: (req: GenerateRequest) => Promise<GenerateResult>): Promise<GenerateResult>;
  judge?(req: JudgeRequest, next: (req: JudgeRequest) => Promise<JudgeResult>): Promise<JudgeResult>;
  /**
   * Set by a layer that sends judgments to another model than the one it wraps (judge routing):
   * the wrapped view names it as its `judgeModel`, so the trace says who judged. Layers further
   * out keep it; absent, the inner model's `judgeModel` (if any) stays.
   */
  readonly judgeModel?: { provider: string; model: string };
}

/**
 * `model` seen through `middleware`, the first in the list outermost: a call enters the first
 * layer, each layer's `next` is the one after it, and the last layer's `next` is `model` itself.
 * The view keeps the model's `provider`, `model` and `judgeModel` (a judge-routing layer replaces
 * the last). An empty list returns `model` itself.
 */
export function wrapModel(model: LanguageModel, middleware: readonly ModelMiddleware[]): LanguageModel {
  if (middleware.length === 0) return model;
  // Folded from the inside out: the last layer wraps the model, the first wraps them all.
  let generate = (req: GenerateRequest) => model.generate(req);
  let judge = (req: JudgeRequest) => model.judge(req);
  let judgeModel = model.judgeModel;
  for (const layer of [...middleware].reverse()) {
    const inner = { generate, judge };
    if (layer.generate) {
      const hook = layer.generate.bind(layer);
      generate = (req) => hook(req, inner.generate);
    }
    if (layer.judge) {
      const hook = layer.judge.bind(layer);
      judge = (req) => hook(req, inner.judge);
    }
    if (layer.judgeModel) judgeModel = { ...layer.judgeModel };
  }
  return {
    provider: model.provider,
    model: model.model,
    ...(judgeModel ? { judgeModel } : {}),
    generate,
    judge,
  };
}

/**
 * Ties every call to `signal` (a run's Ctrl-C, its cost cap, its error limit): a call made after
 * it fired is refused before it starts, and one in flight is cancelled through the client's
 * limiter. A request that brings a signal of its own stays tied to that one too: both stop it.
 */
export function abortOn(signal: AbortSignal): ModelMiddleware {
  const tie = <R extends { signal?: AbortSignal }>(req: R): R => {
    signal.throwIfAborted();
    return { ...req, signal: req.signal && req.signal !== signal ? AbortSignal.any([req.signal, signal]) : signal };
  };
  return {
    name: 'signal',
    // async: a refusal is a rejected promise, as a failed call is, never a synchronous throw.
    generate: async (req, next) => next(tie(req)),
    judge: async (req, next) => next(tie(req)),
  };
}
