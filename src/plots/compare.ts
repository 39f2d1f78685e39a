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
  return {
    data,
    layout: baseLayout(`Paired delta against ${plotlyText(comparison.baseline)}`, {
      xaxis: { title: { text: 'mean delta (run − baseline), metric points' }, zeroline: true, zerolinecolor: colors.neutral, zerolinewidth: 2 },
      yaxis: { automargin: true, autorange: 'reversed' },
      height: Math.max(260, 120 + 60 * runs.length),
    }, '95% CI, questions resampled jointly'),
  };
}
