/**
 * The baselines' analysis, carried by their pipeline entries into the method catalog: CoT self-consistency's vote
 * share (its mean, a confidence for the accuracy–coverage AUC, and the consistency KDE); the
 * single-call baselines decide nothing worth a statistic.
 */
import type { MethodAnalysis } from '../../metrics/methods';
import type { MethodFigures } from '../../plots/methods';
import type { Trace } from '../../trace/types';
import type { SelfConsistencyDecisions } from './decisions';
import { consistencyKdePlan } from '../verify-edit/figures';

const decisionsOf = (trace: Trace): SelfConsistencyDecisions => trace.decisions as SelfConsistencyDecisions;
const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

export const cotScAnalysis: Omit<MethodAnalysis, 'kind'> = {
  statistics: (traces) => ({ decision_consistency: mean(traces.map((t) => decisionsOf(t).consistency)) }),
  // For rows written before rows carried it; CoT-SC hands it over as `PipelineOutput.confidence`.
  confidence: (trace) => decisionsOf(trace).consistency,
};

export const cotScFigures: Omit<MethodFigures, 'kind'> = {
  forRun: (run) => ({ figures: [consistencyKdePlan(run, (t) => (t.decisions.kind === 'cot-sc' ? decisionsOf(t).consistency : undefined))] }),
};
