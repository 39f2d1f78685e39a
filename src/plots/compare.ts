/**
 * A comparison's figure: each run's paired mean delta against the baseline with its 95% CI, one
 * colour per metric, runs down the y axis. An interval that does not cross the zero line is a
 * difference the questions resolve; the p-value (Holm-adjusted) is in the hover text.
 */
import type { Comparison } from '../run-files/comparison';
import { plotlyText } from './text';
import { baseLayout, colors, type Figure, type PlotlyTrace } from './types';

const fmtP = (p: number | null) => (p === null ? 'n/a' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

export function comparisonFigure(comparison: Comparison, options: { metrics?: readonly string[] } = {}): Figure {
  const metrics = options.metrics ?? comparison.metrics;
  const runs = comparison.runs.filter((r) => r.name !== comparison.baseline).map((r) => r.name);
  const data: PlotlyTrace[] = metrics.map((metric, i) => {
    const rows = runs.map((run) => comparison.rows.find((r) => r.run === run && r.metric === metric));
    return {
      type: 'scatter',
      mode: 'markers',
      name: plotlyText(metric),
      x: rows.map((r) => (r && Number.isFinite(r.meanDelta) ? r.meanDelta : null)),
      y: runs.map((run) => plotlyText(run)),
      error_x: {
        type: 'data',
        symmetric: false,
        array: rows.map((r) => (r ? r.ciHigh - r.meanDelta : 0)),
        arrayminus: rows.map((r) => (r ? r.meanDelta - r.ciLow : 0)),
        thickness: 2,
      },
      marker: { size: 10, color: colors.series[i % colors.series.length] },
      hovertext: rows.map((r) =>
        r
          ? `${plotlyText(r.run)} − ${plotlyText(r.baseline)}, ${plotlyText(metric)}: ${r.meanDelta.toFixed(1)} [${r.ciLow.toFixed(1)}, ${r.ciHigh.toFixed(1)}]<br>p ${fmtP(r.p)} (Holm ${fmtP(r.pHolm)}), ${r.n} questions`
          : '',
      ),
      hoverinfo: 'text',
    };
  });
  data.push(...trialSamplingTraces(comparison, metrics, runs));
  return {
    data,
    layout: baseLayout(`Paired delta against ${plotlyText(comparison.baseline)}`, {
      xaxis: { title: { text: 'mean delta (run − baseline), metric points' }, zeroline: true, zerolinecolor: colors.neutral, zerolinewidth: 2 },
      yaxis: { automargin: true, autorange: 'reversed' },
      height: Math.max(260, 120 + 60 * runs.length),
    }, comparison.rows.some((r) => r.trials) ? '95% CI, two-level bootstrap (questions, then trials); thick bar: the sampling part alone' : '95% CI, questions resampled jointly'),
  };
}

/**
 * Under trials, a thick short bar over each delta: ±1.96·sqrt(samplingVar / n), the interval the
 * trials' sampling noise alone would give; what the thin 95% CI adds beyond it is questions.
 */
function trialSamplingTraces(comparison: Comparison, metrics: readonly string[], runs: readonly string[]): PlotlyTrace[] {
  if (!comparison.rows.some((r) => r.trials)) return [];
  return metrics.map((metric, i) => {
    const rows = runs.map((run) => comparison.rows.find((r) => r.run === run && r.metric === metric));
    const half = rows.map((r) => (r?.trials?.samplingVar != null && r.n > 0 ? Z_SAMPLING * Math.sqrt(r.trials.samplingVar / r.n) : 0));
    return {
      type: 'scatter',
      mode: 'markers',
      name: `${plotlyText(metric)}: sampling part`,
      legendgroup: plotlyText(metric),
      x: rows.map((r) => (r && Number.isFinite(r.meanDelta) ? r.meanDelta : null)),
      y: runs.map((run) => plotlyText(run)),
      error_x: { type: 'data', array: half, thickness: 7, width: 0, color: colors.series[i % colors.series.length] },
      marker: { size: 1, color: colors.series[i % colors.series.length], opacity: 0.5 },
      opacity: 0.45,
      hovertext: rows.map((r, j) =>
        r?.trials
          ? `${plotlyText(r.run)}, ${plotlyText(metric)}: sampling ±${half[j].toFixed(1)}; ${r.trials.samplingShare === null ? '?' : Math.round(100 * r.trials.samplingShare)}% of the per-question variance is sampling (${r.trials.baselineTrials}/${r.trials.runTrials} trials)`
          : '',
      ),
      hoverinfo: 'text',
    };
  });
}

/** z₀.₉₇₅ for the sampling bar. */
const Z_SAMPLING = 1.959963984540054;
