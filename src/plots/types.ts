/**
 * Figures are plain plotly specs (`{ data, layout }`), built by pure functions from traces and
 * results. They are JSON, so the same object can be written into an HTML page, rendered to PNG,
 * shown inline in a notebook or logged to MLflow without a plotting library in the core.
 */
import type { ExampleResult, RunMetrics } from '../run-files';
import type { Trace } from '../trace/types';

/** One plotly trace. Only the fields our builders set are named; plotly accepts many more. */
export interface PlotlyTrace {
  type: string;
  name?: string;
  x?: Array<number | string | null>;
  y?: Array<number | string | null>;
  mode?: string;
  text?: string | string[];
  hovertext?: string | string[];
  hoverinfo?: string;
  xaxis?: string;
  yaxis?: string;
  [key: string]: unknown;
}

export type PlotlyLayout = Record<string, unknown>;

export interface Figure {
  data: PlotlyTrace[];
  layout: PlotlyLayout;
}

/**
 * What a figure builder needs from one finished run: the files of `artifacts/runs/<name>/`
 * (see src/report/load.ts for the reader). `config` is the resolved config.yaml as parsed YAML.
 */
export interface RunData {
  name: string;
  dir?: string;
  config: Record<string, unknown>;
  results: ExampleResult[];
  traces: Trace[];
  metrics?: RunMetrics;
}

/** A sweep: one run per grid setting. */
export interface SweepData {
  name: string;
  dir?: string;
  runs: RunData[];
  /** Whatever summary file the sweep wrote (shape owned by src/experiments), if any. */
  summary?: unknown;
}

/** Our palette, fixed so that "correct" is the same colour in every figure and report. */
export const colors = {
  correct: '#1b9e77',
  incorrect: '#d95f02',
  accent: '#7570b3',
  neutral: '#666666',
  series: ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'],
} as const;

/**
 * The layout every figure starts from. The title hangs from the top edge of the figure (not the
 * middle of the top margin), and legends stand to the right of the plot (plotly's default, which
 * widens the right margin to fit): a horizontal legend above the plot shares the top margin with
 * the title and runs into it as soon as it wraps or the fonts differ (test/plots/overlap.int.test.ts).
 * A long title keeps its detail on a second, smaller line (`subtitle`).
 */
export function baseLayout(title: string, extra: PlotlyLayout = {}, subtitle?: string): PlotlyLayout {
  return {
    title: {
      text: title,
      ...(subtitle ? { subtitle: { text: subtitle, font: { size: 12, color: '#555555' } } } : {}),
      yref: 'container',
      y: 1,
      yanchor: 'top',
      pad: { t: 12 },
    },
    font: { family: 'DejaVu Sans, Arial, sans-serif', size: 13 },
    margin: { l: 64, r: 24, t: 84, b: 56 },
    plot_bgcolor: '#ffffff',
    paper_bgcolor: '#ffffff',
    hovermode: 'closest',
    ...extra,
  };
}
