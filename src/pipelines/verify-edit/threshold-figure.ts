/**
 * Verify-and-Edit's threshold ablation: accuracy, accuracy–coverage AUC and the fraction of
 * edited instances against the consistency threshold (keep the majority answer when its votes ≥
 * threshold, otherwise edit).
 *
 * Two sources:
 * - a **sweep** (one run per threshold): every number is what that run measured — exact;
 * - **one run's traces**, re-applying other thresholds to the recorded votes. The edited fraction
 *   is exact at every threshold (it depends only on votes). Accuracy and AUC are exact at a
 *   threshold only when every example's final answer under it is known: the same decision as the
 *   recorded run, or a recorded edit that the new threshold would skip (the answer is then the
 *   majority answer, whose correctness is known when it equals the recorded final answer or when a
 *   `scoreAnswer` function is given). An example the run kept but the new threshold would edit has
 *   no recorded edited answer: accuracy and AUC are left out (null) at that threshold. Record one
 *   run with threshold n + 1 (edit everything) and pass `scoreAnswer` to make every threshold exact.
 */
import { traceKey, type ExampleResult } from '../../run-files';
import type { Trace } from '../../trace/types';
import { veDecisionsOf, type VeDecisions } from './decisions';
import { accuracyCoverageAuc } from '../../metrics/calibration';
import { correctness, type CorrectnessOptions } from '../../plots/correctness';
import { noDataAnnotation } from '../../plots/consistency';
import { baseLayout, colors, type Figure, type PlotlyTrace, type RunData } from '../../plots/types';

export interface ThresholdPoint {
  threshold: number;
  /** Percent; null where it cannot be known exactly from the input. */
  accuracy: number | null;
  /** Accuracy–coverage AUC (0–100, VE's definition: src/metrics/calibration.ts); null where not exact. */
  auc: number | null;
  /** Percent of examples edited at this threshold. */
  editedFraction: number;
  /** Examples whose outcome at this threshold is known. */
  known: number;
  n: number;
  /** Where the number came from. */
  source: 'sweep' | 'recorded' | 're-applied';
}

function veTraces(traces: readonly Trace[]): Array<{ trace: Trace; d: VeDecisions }> {
  const out: Array<{ trace: Trace; d: VeDecisions }> = [];
  for (const trace of traces) {
    const d = veDecisionsOf(trace);
    if (d) out.push({ trace, d });
  }
  return out;
}

/**
 * What the threshold was compared with: the recorded score (votes, or summed sample
 * probabilities with `consistency: logprob`), else the majority answer's votes.
 */
export function majorityVotes(d: VeDecisions): number {
  if (typeof d.thresholdScore === 'number') return d.thresholdScore;
  const n = d.samples.length;
  const fromVotes = d.votes[d.majorityAnswer];
  return typeof fromVotes === 'number' ? fromVotes : Math.round(d.consistency * n);
}

const sameAnswer = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

export interface ReapplyOptions extends CorrectnessOptions {
  /** Thresholds to evaluate (default 1…n, n = samples per question). */
  thresholds?: number[];
  /** Correctness of an answer the run did not output (the majority answer of an edited example). */
  scoreAnswer?: (questionId: string, answer: string) => boolean | undefined;
}

/** Re-apply thresholds to one run's recorded votes (see the module comment for exactness). */
export function thresholdAblationFromTraces(
  traces: readonly Trace[],
  results: readonly ExampleResult[],
  options: ReapplyOptions = {},
): ThresholdPoint[] {
  const correct = correctness(results, options);
  const items = veTraces(traces).filter(({ trace }) => correct.has(traceKey(trace)));
  if (items.length === 0) return [];
  const n = Math.max(...items.map(({ d }) => d.samples.length));
  const thresholds = options.thresholds ?? Array.from({ length: n }, (_, i) => i + 1);
  const recordedThresholds = new Set(items.map(({ d }) => d.threshold));
  return thresholds.map((t) => {
    let known = 0;
    let edited = 0;
    const outcomes: Array<{ confidence: number; correct: boolean }> = [];
    for (const { trace, d } of items) {
      const votes = majorityVotes(d);
      const wouldEdit = votes < t;
      if (wouldEdit) edited += 1;
      let ok: boolean | undefined;
      if (wouldEdit === d.edited) ok = correct.get(traceKey(trace));
      else if (!wouldEdit) {
        // Recorded as edited, kept at t: the answer is the majority answer.
        ok = sameAnswer(d.majorityAnswer, d.finalAnswer)
          ? correct.get(traceKey(trace))
          : options.scoreAnswer?.(trace.questionId, d.majorityAnswer);
      }
      if (ok !== undefined) {
        known += 1;
        outcomes.push({ confidence: d.consistency, correct: ok });
      }
    }
    const exact = known === items.length;
    const accuracy = exact ? (100 * outcomes.filter((o) => o.correct).length) / items.length : null;
    return {
      threshold: t,
      accuracy,
      auc: exact ? auc(outcomes) : null,
      editedFraction: (100 * edited) / items.length,
      known,
      n: items.length,
      source: recordedThresholds.size === 1 && recordedThresholds.has(t) ? 'recorded' : 're-applied',
    };
  });
}

function auc(outcomes: ReadonlyArray<{ confidence: number; correct: boolean }>): number | null {
  return accuracyCoverageAuc(outcomes.map((o) => o.confidence), outcomes.map((o) => o.correct));
}

/** One point per run of a threshold sweep; the threshold is read from the runs' traces. */
export function thresholdAblationFromSweep(runs: readonly RunData[], options: CorrectnessOptions = {}): ThresholdPoint[] {
  const points: ThresholdPoint[] = [];
  for (const run of runs) {
    const correct = correctness(run.results, options);
    const items = veTraces(run.traces).filter(({ trace }) => correct.has(traceKey(trace)));
    if (items.length === 0) continue;
    const outcomes = items.map(({ trace, d }) => ({ confidence: d.consistency, correct: correct.get(traceKey(trace))! }));
    points.push({
      threshold: items[0].d.threshold,
      accuracy: (100 * outcomes.filter((o) => o.correct).length) / items.length,
      auc: auc(outcomes),
      editedFraction: (100 * items.filter(({ d }) => d.edited).length) / items.length,
      known: items.length,
      n: items.length,
      source: 'sweep',
    });
  }
  return points.sort((a, b) => a.threshold - b.threshold);
}

export function thresholdAblationFigure(points: readonly ThresholdPoint[], options: { title?: string } = {}): Figure {
  const x = points.map((p) => p.threshold);
  const series: Array<{ name: string; key: 'accuracy' | 'auc' | 'editedFraction'; color: string; dash?: string }> = [
    { name: 'accuracy', key: 'accuracy', color: colors.series[0] },
    { name: 'accuracy–coverage AUC', key: 'auc', color: colors.series[2] },
    { name: 'edited fraction', key: 'editedFraction', color: colors.series[1], dash: 'dot' },
  ];
  const data: PlotlyTrace[] = series.map((s) => ({
    type: 'scatter',
    mode: 'lines+markers',
    name: s.name,
    x,
    y: points.map((p) => p[s.key]),
    line: { color: s.color, dash: s.dash ?? 'solid' },
    hovertemplate: `${s.name} at threshold %{x}: %{y:.1f}<extra></extra>`,
  }));
  const missing = points.filter((p) => p.accuracy === null).map((p) => p.threshold);
  const sources = new Set(points.map((p) => p.source));
  const annotations: Array<Record<string, unknown>> = [];
  if (points.length === 0) annotations.push(noDataAnnotation('no verify-edit traces with a scored result'));
  if (missing.length > 0) {
    annotations.push({
      text: `accuracy/AUC not exact from this run's traces at threshold ${missing.join(', ')}: omitted`,
      xref: 'paper', yref: 'paper', x: 0, y: -0.3, yanchor: 'top', showarrow: false, align: 'left', font: { size: 11, color: colors.neutral },
    });
  }
  const recorded = points.filter((p) => p.source === 'recorded');
  const shapes = recorded.map((p) => ({
    type: 'line', xref: 'x', yref: 'paper', x0: p.threshold, x1: p.threshold, y0: 0, y1: 1,
    line: { color: colors.neutral, dash: 'dash', width: 1 },
  }));
  const subtitle = sources.has('sweep') ? 'one run per threshold' : 'thresholds re-applied to one run\'s recorded votes';
  return {
    data,
    layout: baseLayout(options.title ?? 'Verify-and-Edit threshold ablation', {
      xaxis: { title: { text: 'threshold (votes needed to keep the majority answer)' }, dtick: 1 },
      // A little room above 100 and below 0 so that markers on the bounds stay visible.
      yaxis: { title: { text: 'percent' }, range: [-3, 104] },
      margin: { l: 64, r: 24, t: 84, b: missing.length > 0 ? 110 : 56 },
      annotations,
      shapes,
    }, options.title ? undefined : subtitle),
  };
}
