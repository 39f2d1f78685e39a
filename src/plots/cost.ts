/**
 * Cost against quality: one point per run (usually one pipeline each), x = tokens (prompt +
 * completion) or wall seconds per question, y = a quality metric with its 95% CI. This is the
 * Diva-vs-ToC comparison (Diva: better D-F1 at a third of the latency and half the tokens).
 */
import { noDataAnnotation } from './consistency';
import { commonMetric, metricOf, perQuestionUsage, pipelineOf } from './runs';
import { baseLayout, colors, type Figure, type RunData } from './types';

export type CostAxis = 'tokens' | 'seconds' | 'llmCalls';

export interface CostPoint {
  label: string;
  pipeline: string;
  cost: number;
  quality: number;
  ciLow: number;
  ciHigh: number;
}

const COST_LABEL: Record<CostAxis, string> = {
  tokens: 'tokens per question (prompt + completion)',
  seconds: 'seconds per question',
  llmCalls: 'LLM calls per question',
};

export function costPoints(runs: readonly RunData[], metric: string, cost: CostAxis): CostPoint[] {
  const points: CostPoint[] = [];
  for (const run of runs) {
    const m = metricOf(run, metric);
    if (!m) continue;
    const usage = perQuestionUsage(run);
    const spent = usage[cost];
    if (spent === undefined) continue; // tokens not reported: no point to place
    points.push({
      label: run.name,
      pipeline: pipelineOf(run),
      cost: spent,
      quality: m.mean,
      ciLow: m.ciLow,
      ciHigh: m.ciHigh,
    });
  }
  return points;
}

export function costQualityFigure(
  runs: readonly RunData[],
  options: { metric?: string; cost?: CostAxis; title?: string } = {},
): Figure {
  const metric = options.metric ?? (runs.length > 0 ? commonMetric(runs, ['dr', 'str_em', 'd_f1', 'rougeLsum', 'accuracy', 'em']) : 'dr');
  const cost = options.cost ?? 'tokens';
  const points = costPoints(runs, metric, cost);
  const pipelines = [...new Set(points.map((p) => p.pipeline))];
  return {
    data: pipelines.map((pipeline, i) => {
      const group = points.filter((p) => p.pipeline === pipeline);
      return {
        type: 'scatter',
        mode: 'markers+text',
        name: pipeline,
        x: group.map((p) => p.cost),
        y: group.map((p) => p.quality),
        text: group.map((p) => p.label),
        textposition: 'top center',
        // Labels near the plot edge stay readable.
        cliponaxis: false,
        marker: { size: 12, color: colors.series[i % colors.series.length] },
        error_y: {
          type: 'data',
          symmetric: false,
          array: group.map((p) => p.ciHigh - p.quality),
          arrayminus: group.map((p) => p.quality - p.ciLow),
          thickness: 1,
        },
        hovertemplate: `%{text}<br>${COST_LABEL[cost]}: %{x:.1f}<br>${metric}: %{y:.1f}<extra>${pipeline}</extra>`,
      };
    }),
    layout: baseLayout(options.title ?? `Cost against quality (${metric})`, {
      xaxis: { title: { text: COST_LABEL[cost] }, rangemode: 'tozero' },
      yaxis: { title: { text: `${metric} (mean, 95% CI)` } },
      ...(points.length === 0 ? { annotations: [noDataAnnotation(`no runs with ${metric}`)] } : {}),
    }),
  };
}
