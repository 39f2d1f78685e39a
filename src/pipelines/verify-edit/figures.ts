/**
 * The figures of Verify-and-Edit's traces, carried by its pipeline entry into the method catalog
 * (src/plots/methods.ts): the consistency KDE of correct and incorrect predictions and the
 * threshold ablation re-applied to one run; the threshold ablation across a sweep.
 */
import { exactMatch, maxOverGolds } from '../../metrics/squad';
import { consistencyKdeFigure } from '../../plots/consistency';
import type { FigureInputs, FigurePlan, MethodFigures } from '../../plots/methods';
import { veDecisionsOf } from './decisions';
import type { Trace } from '../../trace/types';
import { thresholdAblationFigure, thresholdAblationFromSweep, thresholdAblationFromTraces } from './threshold-figure';
import type { RunData } from '../../plots/types';

/**
 * The consistency KDE of a run (Verify-and-Edit and CoT self-consistency share it): each row's
 * `confidence`; for rows written before rows carried it, `confidenceOf` reads it from the trace.
 */
export function consistencyKdePlan(run: RunData, confidenceOf: (trace: Trace) => number | undefined): FigurePlan {
  return {
    name: 'consistency-kde',
    title: 'Consistency of correct and incorrect predictions',
    build: () => consistencyKdeFigure(run.traces, run.results, { confidenceOf }),
    caption:
      "Gaussian KDE (Scott bandwidth) of the majority answer's consistency (its vote share; with consistency: logprob, its summed sample probabilities / n), with the raw values as a rug; correct = em_alt where the run has it, else EM (FEVER: accuracy).",
  };
}

function forRun(run: RunData, inputs: FigureInputs): { figures: FigurePlan[] } {
  const answers = inputs.answers;
  return {
    figures: [
      consistencyKdePlan(run, (t) => veDecisionsOf(t)?.consistency),
      {
        name: 'threshold-ablation',
        title: 'Threshold ablation (re-applied to this run)',
        build: () => {
          const points = thresholdAblationFromTraces(
            run.traces,
            run.results,
            answers
              ? { scoreAnswer: (id, answer) => (answers.has(id) ? maxOverGolds(exactMatch, answer, answers.get(id)!) === 1 : undefined) }
              : {},
          );
          return points.length > 0 ? thresholdAblationFigure(points) : null;
        },
        caption: 'Edited fraction is exact at every threshold; accuracy and AUC where the outcome is known from this run and the gold answers (see src/pipelines/verify-edit/threshold-figure.ts).',
      },
    ],
  };
}

const distinct = (values: unknown[]): number => new Set(values.map((v) => JSON.stringify(v))).size;

function forSweep(runs: ReadonlyArray<RunData>): FigurePlan[] {
  const veRuns = runs.filter((r) => r.traces.some((t) => veDecisionsOf(t) !== undefined));
  const thresholds = veRuns.map((r) => r.traces.map(veDecisionsOf).find((d) => d !== undefined)?.threshold ?? null);
  if (veRuns.length < 2 || distinct(thresholds) < 2) return [];
  return [{ name: 'threshold-ablation', title: 'Threshold ablation (one run per threshold)', build: () => thresholdAblationFigure(thresholdAblationFromSweep(veRuns)) }];
}

export const veFigures: Omit<MethodFigures, 'kind'> = { forRun, forSweep };
