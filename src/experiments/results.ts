/**
 * What a run writes per example (`results.jsonl`) and in aggregate (`metrics.json`). Plots,
 * reports and notebooks read these files and `traces.jsonl` (one `Trace` per line); they never
 * re-run a pipeline.
 */
import type { TraceSummary } from '../trace/types';

export interface ExampleResult {
  id: string;
  question: string;
  /** The long answer (ASQA) or the final answer text. */
  output: string;
  /** Short answer where the method produces one (EM/F1/accuracy datasets). */
  answer?: string;
  /** Per-example metrics on a 0–100 scale, keyed by metric name (e.g. `str_em`, `rougeLsum`). */
  metrics: Record<string, number>;
  /** Copied from the trace summary so the table can be read without traces. */
  usage: TraceSummary;
  /** Set when the pipeline failed on this example (the run goes on). */
  error?: string;
  /** Position of the example in the run's (unsharded) selection; merged shards are ordered by it. */
  index?: number;
}

export interface MetricAggregate {
  mean: number;
  /** Bootstrap 95% confidence interval. */
  ciLow: number;
  ciHigh: number;
  n: number;
}

export interface RunMetrics {
  /** Questions with a result: answered plus failed. */
  n: number;
  /** Questions answered (no error); the metrics are computed over these only. */
  answered?: number;
  metrics: Record<string, MetricAggregate>;
  usage: {
    llm_calls: number;
    prompt_tokens: number;
    completion_tokens: number;
    cache_hits: number;
    wall_seconds: number;
  };
  /** Examples the run was asked to answer; `n < total` when it was stopped early. */
  total?: number;
  /** Examples whose pipeline failed (not part of the metrics; see `answered`). */
  errors?: number;
  /** How the run ended. */
  status?: 'FINISHED' | 'KILLED' | 'FAILED';
  /**
   * How the metrics were measured (`metric.reader`, `metric.sentence_splitter`) and how the
   * pipeline's judgments were read (`judge_mode`: probability | text | mixed), also MLflow params.
   */
  settings?: Record<string, string>;
  /** Decision statistics from the traces (`decision_*`, src/metrics/decisions.ts), also MLflow metrics. */
  decisions?: Record<string, number>;
}
