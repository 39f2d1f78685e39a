import type { ModelMiddleware } from './middleware';
import type { LanguageModel } from './types';

/**
 * The judge as a role: a layer that sends the run's judgments (`judge`) to `judge`, a model of
 * their own — a run's `judge:` section, e.g. the 1.5B catalog model verifying for the 0.5B
 * generator, or a server judging for the embedded model. Generations pass on to the model the
 * layer wraps. Each side keeps its own client, hence its own cache keys (provider, model,
 * endpoint, engine), limiter and usage meter; the layer names the judge (`judgeModel`), so the
 * wrapped view says who judges and the trace recorder marks every judgment with it. Layers outside
 * it (signal, cost cap, meter) see judgments on their way to the judge like any other call, so
 * one cap and one meter cover both models.
 */
export function routeJudgments(judge: LanguageModel): ModelMiddleware {
  return {
    name: 'judge',
    judgeModel: { provider: judge.provider, model: judge.model },
    // Not `next`: the judgment is answered by the judge's model, not the one wrapped.
    judge: (req) => judge.judge(req),
  };
}

/**
 * The judge-routing layers of a run whose judgments go to `judge` rather than to `llm`: none when
 * there is no judge, or when it is the same client (a `judge:` section equal to `llm:` shares the
 * composer's client) — the same client is no second model.
 */
export function judgeLayers(llm: LanguageModel, judge: LanguageModel | undefined): ModelMiddleware[] {
  return judge === undefined || judge === llm ? [] : [routeJudgments(judge)];
}
