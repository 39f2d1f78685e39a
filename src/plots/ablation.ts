/**
 * ToC's node-cap / depth ablation from a sweep: quality and LLM calls per question against
 * `maxNodes` (or `maxDepth`), one line per value of the other knob when the sweep varied both.
 * Each point is one child run; quality carries its bootstrap CI from metrics.json as error bars.
 */
import { AmbiqaError } from '../errors';
import { noDataAnnotation } from './consistency';
import { commonMetric, findOption, metricOf, perQuestionUsage } from './runs';
import { baseLayout, colors, type Figure, type PlotlyTrace, type RunData } from './types';

/** Where a config may keep ToC's options, most specific first. */
const TOC_PATHS = ['toc', 'pipeline'];

export type TocKnob = 'maxNodes' | 'maxDepth';

export interface TocAblationPoint {
  run: string;
  /** The knob on the x axis. */
  x: number;
  /** The other knob (one line per value); null when the config does not say. */
  series: number | null;
  quality: number;
  ciLow: number;
  ciHigh: number;
  llmCalls: number;
}

export function tocAblationPoints(runs: readonly RunData[], metric: string, knob: TocKnob = 'maxNodes'): TocAblationPoint[] {
  const other: TocKnob = knob === 'maxNodes' ? 'maxDepth' : 'maxNodes';
  const points: TocAblationPoint[] = [];
  for (const run of runs) {
    const x = findOption(run.config, knob, TOC_PATHS);
    if (typeof x !== 'number') {
      throw new AmbiqaError(`run ${run.name}: its config has no numeric ${knob}`, `the ablation needs a sweep over pipeline.options.${knob}`);
    }
    const series = findOption(run.config, other, TOC_PATHS);
    const m = metricOf(run, metric);
    if (!m) continue;
    points.push({
      run: run.name,
      x,
      series: typeof series === 'number' ? series : null,
      quality: m.mean,
      ciLow: m.ciLow,
      ciHigh: m.ciHigh,
      llmCalls: perQuestionUsage(run).llmCalls,
    });
  }
  return points.sort((a, b) => a.x - b.x);
}

export function tocAblationFigure(
  runs: readonly RunData[],
  options: { knob?: TocKnob; metric?: string; title?: string } = {},
): Figure {
  const knob = options.knob ?? 'maxNodes';
  const other = knob === 'maxNodes' ? 'maxDepth' : 'maxNodes';
  const metric = options.metric ?? (runs.length > 0 ? commonMetric(runs) : 'dr');
  const points = tocAblationPoints(runs, metric, knob);
  const series = [...new Set(points.map((p) => p.series))].sort((a, b) => (a ?? 0) - (b ?? 0));
  const data: PlotlyTrace[] = [];
  series.forEach((value, i) => {
    const line = points.filter((p) => p.series === value);
    const label = series.length > 1 || value !== null ? `${other} ${value ?? '?'}` : 'ToC';
    const color = colors.series[i % colors.series.length];
    const x = line.map((p) => p.x);
    data.push({
      type: 'scatter',
      mode: 'lines+markers',
      name: label,
      legendgroup: label,
      x,
      y: line.map((p) => p.quality),
      error_y: {
        type: 'data',
        symmetric: false,
        array: line.map((p) => p.ciHigh - p.quality),
        arrayminus: line.map((p) => p.quality - p.ciLow),
        thickness: 1,
      },
      line: { color },
      text: line.map((p) => p.run),
      hovertemplate: `%{text}<br>${knob} %{x}: ${metric} %{y:.1f}<extra>${label}</extra>`,
      xaxis: 'x',
      yaxis: 'y',
    });
    data.push({
      type: 'scatter',
      mode: 'lines+markers',
      name: `${label} (LLM calls)`,
      legendgroup: label,
      showlegend: false,
      x,
      y: line.map((p) => p.llmCalls),
      line: { color, dash: 'dot' },
      text: line.map((p) => p.run),
      hovertemplate: `%{text}<br>${knob} %{x}: %{y:.1f} LLM calls / question<extra>${label}</extra>`,
      xaxis: 'x2',
      yaxis: 'y2',
    });
  });
  const title = knob === 'maxNodes' ? 'node cap' : 'depth';
  return {
    data,
    layout: baseLayout(options.title ?? `Tree of Clarifications: ${title} ablation`, {
      xaxis: { domain: [0, 0.46], title: { text: knob }, dtick: 1 },
      yaxis: { title: { text: `${metric} (mean, 95% CI)` } },
      xaxis2: { domain: [0.54, 1], anchor: 'y2', title: { text: knob }, dtick: 1 },
      yaxis2: { anchor: 'x2', title: { text: 'LLM calls per question' }, rangemode: 'tozero' },
      ...(points.length === 0 ? { annotations: [noDataAnnotation(`no runs with a ${knob} setting`)] } : {}),
    }),
  };
}

/** The node-cap ablation: quality and LLM calls against maxNodes. */
export function nodeCapFigure(runs: readonly RunData[], options: { metric?: string; title?: string } = {}): Figure {
  return tocAblationFigure(runs, { ...options, knob: 'maxNodes' });
}

/** Kept for callers of the first version: points against maxNodes. */
export function nodeCapPoints(runs: readonly RunData[], metric: string) {
  return tocAblationPoints(runs, metric, 'maxNodes').map((p) => ({ ...p, maxNodes: p.x, maxDepth: p.series }));
}
