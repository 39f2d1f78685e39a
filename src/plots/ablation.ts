/**
 * ToC's node-cap / depth ablation from a sweep: quality and LLM calls per question against
 * `maxNodes`, one line per `maxDepth` when the sweep varied depth too. Each point is one child
 * run; quality carries its bootstrap CI from metrics.json as error bars.
 */
import { AmbiqaError } from '../errors';
import { noDataAnnotation } from './consistency';
import { commonMetric, findOption, metricOf, perQuestionUsage } from './runs';
import { baseLayout, colors, type Figure, type PlotlyTrace, type RunData } from './types';

/** Where a config may keep ToC's options, most specific first. */
const TOC_PATHS = ['toc', 'pipeline'];

export interface NodeCapPoint {
  run: string;
  maxNodes: number;
  maxDepth: number | null;
  quality: number;
  ciLow: number;
  ciHigh: number;
  llmCalls: number;
}

export function nodeCapPoints(runs: readonly RunData[], metric: string): NodeCapPoint[] {
  const points: NodeCapPoint[] = [];
  for (const run of runs) {
    const maxNodes = findOption(run.config, 'maxNodes', TOC_PATHS);
    if (typeof maxNodes !== 'number') {
      throw new AmbiqaError(`run ${run.name}: its config has no numeric maxNodes`, 'the node-cap ablation needs a sweep over toc.maxNodes');
    }
    const depth = findOption(run.config, 'maxDepth', TOC_PATHS);
    const m = metricOf(run, metric);
    if (!m) continue;
    points.push({
      run: run.name,
      maxNodes,
      maxDepth: typeof depth === 'number' ? depth : null,
      quality: m.mean,
      ciLow: m.ciLow,
      ciHigh: m.ciHigh,
      llmCalls: perQuestionUsage(run).llmCalls,
    });
  }
  return points.sort((a, b) => a.maxNodes - b.maxNodes);
}

export function nodeCapFigure(runs: readonly RunData[], options: { metric?: string; title?: string } = {}): Figure {
  const metric = options.metric ?? (runs.length > 0 ? commonMetric(runs) : 'dr');
  const points = nodeCapPoints(runs, metric);
  const depths = [...new Set(points.map((p) => p.maxDepth))].sort((a, b) => (a ?? 0) - (b ?? 0));
  const data: PlotlyTrace[] = [];
  depths.forEach((depth, i) => {
    const line = points.filter((p) => p.maxDepth === depth);
    const label = depths.length > 1 || depth !== null ? `maxDepth ${depth ?? '?'}` : 'ToC';
    const color = colors.series[i % colors.series.length];
    const x = line.map((p) => p.maxNodes);
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
      hovertemplate: `%{text}<br>maxNodes %{x}: ${metric} %{y:.1f}<extra>${label}</extra>`,
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
      hovertemplate: `%{text}<br>maxNodes %{x}: %{y:.1f} LLM calls / question<extra>${label}</extra>`,
      xaxis: 'x2',
      yaxis: 'y2',
    });
  });
  return {
    data,
    layout: baseLayout(options.title ?? 'Tree of Clarifications: node cap ablation', {
      xaxis: { domain: [0, 0.46], title: { text: 'maxNodes' }, dtick: 1 },
      yaxis: { title: { text: `${metric} (mean, 95% CI)` } },
      xaxis2: { domain: [0.54, 1], anchor: 'y2', title: { text: 'maxNodes' }, dtick: 1 },
      yaxis2: { anchor: 'x2', title: { text: 'LLM calls per question' }, rangemode: 'tozero' },
      legend: { orientation: 'h', y: 1.08, x: 0 },
      ...(points.length === 0 ? { annotations: [noDataAnnotation('no runs with a maxNodes setting')] } : {}),
    }),
  };
}
