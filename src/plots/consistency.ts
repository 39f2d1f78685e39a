/**
 * Verify-and-Edit's calibration picture: the consistency of the majority answer (votes / n) for
 * correct and for incorrect predictions, as two Gaussian KDEs with a rug of the raw values. The
 * paper's finding to reproduce: incorrect predictions concentrate at low consistency.
 */
import { rowKey, traceKey, type ExampleResult } from '../run-files';
import type { Trace } from '../trace/types';
import { correctness, type CorrectnessOptions } from './correctness';
import { kdeCurve } from './kde';
import { baseLayout, colors, type Figure, type PlotlyTrace } from './types';

export interface ConsistencyPoint {
  id: string;
  consistency: number;
  correct: boolean;
}

export interface ConsistencyOptions extends CorrectnessOptions {
  /**
   * Reads the confidence back from a trace, for results rows written before rows carried it
   * (the method's `MethodAnalysis.confidence`); a row's own `confidence` comes first.
   */
  confidenceOf?: (trace: Trace) => number | undefined;
}

/** Join each VE / CoT-SC question's consistency with the result's correctness (by question id, and trial under `trials: k`). */
export function consistencyPoints(
  traces: readonly Trace[],
  results: readonly ExampleResult[],
  options: ConsistencyOptions = {},
): ConsistencyPoint[] {
  const correct = correctness(results, options);
  const rowConfidence = new Map<string, number>();
  for (const r of results) if (r.error === undefined && r.confidence !== undefined) rowConfidence.set(rowKey(r), r.confidence);
  const points: ConsistencyPoint[] = [];
  for (const trace of traces) {
    // The confidence the method handed over with its output (Verify-and-Edit's and CoT-SC's
    // majority share), kept on the row; older rows: read back from the trace. Questions whose
    // method has none are skipped.
    const consistency = rowConfidence.get(traceKey(trace)) ?? options.confidenceOf?.(trace);
    if (consistency === undefined) continue;
    const ok = correct.get(traceKey(trace));
    if (ok === undefined) continue;
    points.push({ id: trace.questionId, consistency, correct: ok });
  }
  return points;
}

export interface ConsistencyKdeOptions extends ConsistencyOptions {
  title?: string;
  /** Grid resolution of each density curve (default 200). */
  points?: number;
}

export function consistencyKdeFigure(
  traces: readonly Trace[],
  results: readonly ExampleResult[],
  options: ConsistencyKdeOptions = {},
): Figure {
  const pts = consistencyPoints(traces, results, options);
  const groups = [
    { name: 'correct', color: colors.correct, values: pts.filter((p) => p.correct).map((p) => p.consistency) },
    { name: 'incorrect', color: colors.incorrect, values: pts.filter((p) => !p.correct).map((p) => p.consistency) },
  ];
  const data: PlotlyTrace[] = [];
  // Always show the whole [0, 1] range of consistency, so that runs can be compared by eye.
  let lo = 0;
  let hi = 1;
  for (const g of groups) {
    if (g.values.length === 0) continue;
    const curve = kdeCurve(g.values, { points: options.points });
    lo = Math.min(lo, curve.x[0]);
    hi = Math.max(hi, curve.x[curve.x.length - 1]);
    data.push({
      type: 'scatter',
      mode: 'lines',
      name: `${g.name} (n=${g.values.length})`,
      legendgroup: g.name,
      x: curve.x,
      y: curve.y,
      line: { color: g.color, width: 2 },
      fill: 'tozeroy',
      opacity: 0.6,
      hovertemplate: `${g.name}<br>consistency %{x:.2f}<br>density %{y:.3f}<extra>h=${curve.bandwidth.toFixed(3)}</extra>`,
      xaxis: 'x',
      yaxis: 'y',
    });
    data.push({
      type: 'scatter',
      mode: 'markers',
      name: `${g.name} (rug)`,
      legendgroup: g.name,
      showlegend: false,
      x: g.values,
      y: g.values.map(() => g.name),
      marker: { symbol: 'line-ns-open', color: g.color, size: 14, line: { width: 1.5 } },
      hovertemplate: `${g.name}: %{x:.2f}<extra></extra>`,
      xaxis: 'x',
      yaxis: 'y2',
    });
  }
  return {
    data,
    layout: baseLayout(options.title ?? 'Consistency of correct vs incorrect predictions', {
      xaxis: { title: { text: 'consistency (votes of the majority answer / n)' }, zeroline: false, anchor: 'y2', range: [lo, hi] },
      yaxis: { title: { text: 'density (Gaussian KDE, Scott)' }, domain: [0.22, 1], rangemode: 'tozero' },
      yaxis2: { domain: [0, 0.16], showgrid: false, categoryorder: 'array', categoryarray: ['incorrect', 'correct'] },
      margin: { l: 64, r: 24, t: 84, b: 56 },
      ...(pts.length === 0
        ? { annotations: [noDataAnnotation('no verify-edit or cot-sc traces with a scored result')] }
        : {}),
    }),
  };
}

export function noDataAnnotation(text: string): Record<string, unknown> {
  return { text, xref: 'paper', yref: 'paper', x: 0.5, y: 0.5, showarrow: false, font: { size: 14, color: colors.neutral } };
}
