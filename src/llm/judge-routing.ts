import { withSpendGuard } from './budget';
import type { LanguageModel } from './types';

/**
 * A model whose yes/no judgments (`judge`) go to another model: a run's `judge:` section, e.g. the
 * 1.5B catalog model verifying for the 0.5B generator, or a server judging for the embedded model.
 * Generations stay with `llm`. Each side keeps its own client, hence its own cache keys
 * (provider, model, endpoint, engine), limiter and usage meter; `judgeModel` names the judge so
 * that the trace recorder marks every judgment with the model that served it.
 */
export function withJudge(llm: LanguageModel, judge: LanguageModel): LanguageModel {
  // The same client (a `judge:` section equal to `llm:`) is no second model.
  if (judge === llm) return llm;
  return {
    provider: llm.provider,
    model: llm.model,
    judgeModel: { provider: judge.provider, model: judge.model },
    generate: (request) => llm.generate(request),
    judge: (request) => judge.judge(request),
    // One cap on what both spend together (a run has one cap, config.ts).
    withSpendGuard: (guard) => withJudge(withSpendGuard(llm, guard), withSpendGuard(judge, guard)),
  };
}
