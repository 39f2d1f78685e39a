/**
 * Diva's own analysis, carried by its pipeline entry into the method catalog (src/metrics/methods.ts): the
 * retrieval-verification judge and its silver label, and the shares of its routes and verdicts.
 */
import type { Example } from '../../datasets/types';
import { shares } from '../../metrics/decisions';
import { goldAnswerMatcher } from '../../metrics/judge-labels';
import type { MethodAnalysis, PassageText } from '../../metrics/methods';
import type { LabelledJudgment } from '../../run-files';
import type { Trace } from '../../trace/types';
import type { DivaDecisions } from './decisions';

const ROUTES = ['rag', 'closed-book'] as const;
const LABELS = ['Useful', 'PartialUseful', 'Useless'] as const;
const decisionsOf = (trace: Trace): DivaDecisions => trace.decisions as DivaDecisions;

/** `diva.verify`: useful when some judged passage contains a gold short answer of the question. */
function labelJudgments(trace: Trace, example: Example, passageText: PassageText): LabelledJudgment[] {
  const d = decisionsOf(trace);
  // No passages: Diva sets P = 0 without asking the judge, so there is no judgment to grade.
  if (!d.pAnswered || d.passageIds.length === 0) return [];
  const gold = goldAnswerMatcher(example);
  const texts = d.passageIds.map(passageText);
  const label = gold.empty || texts.some((t) => t === undefined) ? null : texts.some((t) => gold.any(t!));
  return d.pAnswered.map((p, i) => ({ purpose: 'diva.verify', p, ...(d.pAnsweredRaw?.[i] !== undefined ? { pRaw: d.pAnsweredRaw[i] } : {}), label }));
}

/** `decision_route_<route>` and `decision_usefulness_<label>` (shares of questions). */
function statistics(traces: readonly Trace[]): Record<string, number> {
  const decisions = traces.map(decisionsOf);
  return {
    ...shares(decisions.map((d) => d.route), 'decision_route_', ROUTES),
    ...shares(decisions.map((d) => d.usefulness), 'decision_usefulness_', LABELS),
  };
}

export const divaAnalysis: Omit<MethodAnalysis, 'kind'> = {
  judges: [{ purpose: 'diva.verify', labels: ['Yes', 'No'], silverLabel: 'a judged passage contains a gold short answer of the question' }],
  labelJudgments,
  statistics,
};
