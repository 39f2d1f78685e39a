/**
 * Verify-and-Edit's own analysis, carried by its pipeline entry into the method catalog:
 * the majority vote's share as a confidence (graded against the answer's correctness), the final
 * answer's log-probability as the second ranking (`auc_logprob`), the edit rate and the mean
 * consistency.
 */
import type { Example } from '../../datasets/types';
import { goldShortAnswers } from '../../metrics/judge-labels';
import type { MethodAnalysis } from '../../metrics/methods';
import { exactMatch } from '../../metrics/squad';
import type { LabelledJudgment } from '../../run-files';
import type { Trace } from '../../trace/types';
import { veSignals, type VeDecisions } from './decisions';

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
const decisionsOf = (trace: Trace): VeDecisions => trace.decisions as VeDecisions;

/**
 * `ve.consistency`: the vote share as a confidence, labelled by whether the final answer is right
 * (exact match with a gold answer, or with an alternative answer where they were loaded: the
 * correctness the released code and `em_alt` use).
 */
function labelJudgments(trace: Trace, example: Example): LabelledJudgment[] {
  const d = decisionsOf(trace);
  const answer = trace.answer ?? d.finalAnswer;
  const golds = example.answers.length > 0 ? [...example.answers, ...(example.alternativeAnswers ?? [])] : goldShortAnswers(example);
  const label = golds.length === 0 ? null : golds.some((g) => exactMatch(answer, g) === 1);
  return [{ purpose: 've.consistency', p: d.consistency, label }];
}

/** `decision_edit_rate` (share of questions edited) and `decision_consistency` (mean). */
function statistics(traces: readonly Trace[]): Record<string, number> {
  const decisions = traces.map(decisionsOf);
  return {
    decision_edit_rate: mean(decisions.map((d) => (d.edited ? 1 : 0))),
    decision_consistency: mean(decisions.map((d) => d.consistency)),
  };
}

export const veAnalysis: Omit<MethodAnalysis, 'kind'> = {
  judges: [{ purpose: 've.consistency', silverLabel: 'the final answer is right (exact match with a gold answer, or an alternative answer where the dataset has them)' }],
  labelJudgments,
  statistics,
  // Rows written before rows carried the signals: read them back from the trace, as veSignals gives them.
  confidence: (trace) => veSignals(decisionsOf(trace)).confidence,
  answerLogprob: (trace) => veSignals(decisionsOf(trace)).answerLogprob,
};
