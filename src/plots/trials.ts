/**
 * Trial spread (`trials: k`): how much a question's score moves from one trial to the next. One
 * strip per run (or sweep point): every question's mean over its trials with an error bar of ±1
 * SD across them, questions ordered by the first run's mean so that points line up across runs;
 * the run's mean with its two-level 95% CI, trial SD and sampling share in the legend. Drawn only
 * when some run's rows carry trials (the caller asks `runsWithTrials`).
 */
import { hasTrials } from '../metrics/trials';
import { scoreValues } from '../run-files';
import { commonMetric, metricOf } from './runs';
import { plotlyText } from './text';
import { baseLayout, colors, type Figure, type PlotlyTrace, type RunData } from './types';

/** Whether any of the runs answered its questions several times. */
export function runsWithTrials(runs: readonly RunData[]): boolean {
  return runs.some((r) => hasTrials(r.results));
}

export interface QuestionSpread {
  id: string;
  /** Answered trials with the metric. */
  trials: number;
  mean: number;
  /** Sample SD across trials (0 with one trial). */
  sd: number;
  values: number[];
}

/** Per question (first-seen order), the metric over its answered trials. */
export function questionSpread(run: RunData, metric: string): QuestionSpread[] {
  const byId = new Map<string, number[]>();
  for (const r of run.results) {
    if (r.error) continue;
    const v = scoreValues(r)[metric];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    const list = byId.get(r.id) ?? [];
    list.push(v);
    byId.set(r.id, list);
  }
  return [...byId].map(([id, values]) => {
    const mean = values.reduce((s, x) => s + x, 0) / values.length;
    const sd = values.length < 2 ? 0 : Math.sqrt(values.reduce((s, x) => s + (x - mean) ** 2, 0) / (values.length - 1));
    return { id, trials: values.length, mean, sd, values };
  });
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined || !Number.isFinite(x) ? '?' : x.toFixed(digits));

export function trialSpreadFigure(runs: readonly RunData[], options: { metric?: string; title?: string } = {}): Figure {
  const metric = options.metric ?? commonMetric(runs);
  const spreads = runs.map((run) => questionSpread(run, metric));
  // Question order: by the first run's mean, then any question only later runs have.
  const order = new Map<string, number>();
  [...(spreads[0] ?? [])].sort((a, b) => a.mean - b.mean || a.id.localeCompare(b.id)).forEach((q) => order.set(q.id, order.size));
  for (const s of spreads.slice(1)) for (const q of s) if (!order.has(q.id)) order.set(q.id, order.size);
  const data: PlotlyTrace[] = runs.map((run, i) => {
    const agg = metricOf(run, metric);
    const qs = spreads[i];
    const legend = agg
      ? `${plotlyText(run.name)}<br>${fmt(agg.mean)} [${fmt(agg.ciLow)}, ${fmt(agg.ciHigh)}]${agg.trialSd !== undefined ? `, SD ${fmt(agg.trialSd)}` : ''}${agg.samplingShare !== undefined ? `, sampling ${Math.round(100 * agg.samplingShare)}%` : ''}`
      : plotlyText(run.name);
    return {
      type: 'scatter',
      mode: 'markers',
      name: legend,
      // Runs side by side within a question's slot, so their bars do not hide each other.
      x: qs.map((q) => order.get(q.id)! + (runs.length > 1 ? (i - (runs.length - 1) / 2) * (0.6 / runs.length) : 0)),
      y: qs.map((q) => q.mean),
      error_y: { type: 'data', array: qs.map((q) => q.sd), thickness: 1, width: 0 },
      marker: { size: 6, color: colors.series[i % colors.series.length] },
      text: qs.map((q) => `${plotlyText(run.name)}, ${plotlyText(q.id)}: ${q.mean.toFixed(1)} ± ${q.sd.toFixed(1)} over ${q.trials} trial${q.trials === 1 ? '' : 's'} (${q.values.map((v) => v.toFixed(0)).join(', ')})`),
      hoverinfo: 'text',
    };
  });
  return {
    data,
    layout: baseLayout(options.title ?? `Trial spread: ${plotlyText(metric)} per question`, {
      xaxis: { title: { text: runs.length > 1 ? "questions (by the first run's mean)" : 'questions (by mean)' }, showticklabels: false, zeroline: false },
      yaxis: { title: { text: `${plotlyText(metric)}: mean over trials ± 1 SD` } },
    }, 'legend: run mean [two-level 95% CI], pooled trial SD, sampling share of the variance'),
  };
}
