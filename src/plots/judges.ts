/**
 * Judge quality figures, drawn from a run's judge diagnostics (`metrics.json` `judges`,
 * src/metrics/judge-quality.ts), so the report, MLflow and notebooks show the same numbers:
 *
 * - a reliability diagram per judge: for each P bin, the mean P (x) against the share of the
 *   bin's judgments whose silver label is positive (y), marker area by the bin's count, with the
 *   diagonal of a perfectly calibrated judge and the 0.5 threshold;
 * - P histograms by silver label: how the P of right and of wrong judgments spread, overlaid, so
 *   a reader sees where a threshold would cut.
 *
 * The verdict sentence (does P separate; can a sweep show an effect) is the subtitle of both.
 */
import { runJudgeDiagnostics } from '../metrics/judge-quality';
import type { MethodJudge } from '../metrics/methods';
import type { JudgeDiagnostics } from '../run-files';
import { noDataAnnotation } from './consistency';
import { wrapForHover } from './text';
import { baseLayout, colors, type Figure, type PlotlyTrace, type RunData } from './types';

/**
 * A run's judge diagnostics: metrics.json's `judges`, else computed from the labelled judgments
 * in its results (a run dir whose metrics.json predates them, or results given directly), with
 * the silver labels and order of `judges` (the method catalog's).
 */
export function judgesOf(run: Pick<RunData, 'results' | 'metrics'>, judges: readonly MethodJudge[]): Record<string, JudgeDiagnostics> {
  return run.metrics?.judges ?? runJudgeDiagnostics(run.results, { judges });
}

/** File-safe figure name of a judge (`toc.verify` → `toc-verify`). */
export function judgeFigureSlug(purpose: string): string {
  return purpose.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}

/**
 * The verdict as a figure subtitle, wrapped (plotly does not wrap titles) to fit the narrowest
 * figure notebooks show (640 px; test/plots/overlap.int.test.ts).
 */
function subtitle(d: JudgeDiagnostics): string {
  return wrapForHover(d.verdict, 80);
}

function aucText(d: JudgeDiagnostics): string {
  if (d.auc === null) return 'AUC n/a';
  const ci = d.aucCiLow !== null && d.aucCiHigh !== null ? ` [${d.aucCiLow.toFixed(2)}, ${d.aucCiHigh.toFixed(2)}]` : '';
  return `AUC ${d.auc.toFixed(2)}${ci}`;
}

export function judgeReliabilityFigure(d: JudgeDiagnostics): Figure {
  const bins = d.reliability ?? [];
  const maxN = Math.max(1, ...bins.map((b) => b.n));
  const data: PlotlyTrace[] = [
    {
      type: 'scatter',
      mode: 'lines',
      name: 'perfectly calibrated',
      x: [0, 1],
      y: [0, 1],
      line: { color: colors.neutral, dash: 'dot', width: 1 },
      hoverinfo: 'skip',
    },
    {
      type: 'scatter',
      mode: 'lines+markers',
      // Two lines: a one-line entry makes the legend so wide that a 640 px figure has no room for its plot.
      name: `${d.purpose}<br>${aucText(d)}, Brier ${d.brier === null ? 'n/a' : d.brier.toFixed(3)}`,
      x: bins.map((b) => b.meanP),
      y: bins.map((b) => b.positiveRate),
      text: bins.map((b) => `P in [${b.low.toFixed(2)}, ${b.high.toFixed(2)}): ${b.n} judgments`),
      marker: { color: colors.accent, size: bins.map((b) => 8 + 22 * Math.sqrt(b.n / maxN)), line: { color: '#ffffff', width: 1 } },
      line: { color: colors.accent, width: 2 },
      hovertemplate: '%{text}<br>mean P %{x:.3f}<br>share right %{y:.2f}<extra></extra>',
    },
  ];
  return {
    data,
    layout: baseLayout(`Reliability of ${d.purpose}`, {
      xaxis: { title: { text: 'P the pipeline thresholded (mean of the bin)' }, range: [-0.02, 1.02], zeroline: false },
      yaxis: { title: { text: `share right by the silver label (n=${d.labelled})` }, range: [-0.02, 1.02], zeroline: false },
      shapes: [{ type: 'line', x0: 0.5, x1: 0.5, y0: 0, y1: 1, xref: 'x', yref: 'paper', line: { color: colors.neutral, width: 1, dash: 'dash' } }],
      margin: { l: 64, r: 24, t: 110, b: 64 },
      ...(bins.length === 0 ? { annotations: [noDataAnnotation('no labelled judgments')] } : {}),
    }, subtitle(d)),
  };
}

export function judgeHistogramFigure(d: JudgeDiagnostics): Figure {
  const h = d.histogram ?? { edges: [], positive: [], negative: [] };
  const centres = h.edges.slice(0, -1).map((e, i) => (e + h.edges[i + 1]) / 2);
  const width = h.edges.length > 1 ? h.edges[1] - h.edges[0] : 0.05;
  const bar = (name: string, counts: number[], color: string, mean: number | null): PlotlyTrace => ({
    type: 'bar',
    name: `${name} (n=${counts.reduce((s, c) => s + c, 0)}${mean === null ? '' : `, mean P ${mean.toFixed(3)}`})`,
    x: centres,
    y: counts,
    width,
    marker: { color, line: { color: '#ffffff', width: 0.5 } },
    opacity: 0.6,
    hovertemplate: `${name}<br>P %{x:.3f}±${(width / 2).toFixed(3)}<br>%{y} judgments<extra></extra>`,
  });
  const total = h.positive.reduce((s, c) => s + c, 0) + h.negative.reduce((s, c) => s + c, 0);
  return {
    data: [bar('right (silver label)', h.positive, colors.correct, d.meanPPositive), bar('wrong (silver label)', h.negative, colors.incorrect, d.meanPNegative)],
    layout: baseLayout(`P of ${d.purpose} by silver label`, {
      barmode: 'overlay',
      xaxis: { title: { text: 'P the pipeline thresholded' }, range: [0, 1] },
      yaxis: { title: { text: 'judgments' }, rangemode: 'tozero' },
      shapes: [{ type: 'line', x0: 0.5, x1: 0.5, y0: 0, y1: 1, xref: 'x', yref: 'paper', line: { color: colors.neutral, width: 1, dash: 'dash' } }],
      margin: { l: 64, r: 24, t: 110, b: 64 },
      ...(total === 0 ? { annotations: [noDataAnnotation('no labelled judgments')] } : {}),
    }, subtitle(d)),
  };
}
