/**
 * The files of a run directory and their shapes: `results.jsonl` (one `ExampleResult` per line),
 * `traces.jsonl` (one `Trace` per line), `metrics.json` (`RunMetrics`), `mlflow.json`
 * (`MlflowRecord`) and `run.json` (`RunState`). The runner writes them; metrics, plots, reports,
 * notebooks and merge read them and never re-run a pipeline. This module sits below all of
 * those, so none of them has to import the experiment runner to know a file's shape.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/jsonl';
import { artifactsDir } from '../config/paths';
import type { TraceSummary } from '../trace/types';

export type { Trace, TraceSummary } from '../trace/types';

/** The file names of a run directory. */
export const runFiles = {
  config: 'config.yaml',
  results: 'results.jsonl',
  traces: 'traces.jsonl',
  metrics: 'metrics.json',
  mlflow: 'mlflow.json',
  /** Session bookkeeping: status, wall seconds over all sessions, sessions count. */
  state: 'run.json',
  /**
   * `judgeCalibration: batch` only: the judge's label priors from a calibration sample of
   * demo-pool questions, judged once before the first question, with every calibration call
   * (src/pipelines/common/batch-prior.ts). Absent in every other run.
   */
  judgePriors: 'judge-priors.json',
} as const;

export function runsDir(): string {
  return join(artifactsDir(), 'runs');
}

export function sweepsDir(): string {
  return join(artifactsDir(), 'sweeps');
}

/** Where a run's MLflow ids are kept, so that `--resume`, `merge` and people can find the run. */
export interface MlflowRecord {
  experimentName: string;
  experimentId: string;
  runId: string;
  runName: string;
  parentRunId?: string;
  /** The UI address of the run (for people). */
  runUrl?: string;
  /** Set by reports when the address may not open (its local server has stopped). */
  runUrlNote?: string;
}

export interface RunState {
  status: 'RUNNING' | 'FINISHED' | 'KILLED' | 'FAILED';
  /** Wall seconds summed over every session of the run (an interrupted session counts up to its last checkpoint). */
  wallSeconds: number;
  sessions: number;
  startedAt: string;
  updatedAt: string;
  total: number;
  done: number;
  error?: string;
  /** US dollars of live LLM calls over every session (finished questions and abandoned ones). */
  costUsd?: number;
  /** Live LLM samples and judgments over every session (what `costUsd` was spent on). */
  liveCalls?: number;
  /** Why the last session stopped early when it was not a failure (e.g. the cost cap). */
  stoppedBy?: string;
}

export function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

export function writeJson(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
}


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
  /**
   * The question's graded judgments with their silver labels (src/metrics/judge-labels.ts),
   * labelled when the example was scored, while the gold data and the corpus are at hand, so
   * that `metrics.json` `judges`, merges, reports and notebooks need neither. Absent in results
   * written before judge diagnostics existed and for questions without graded judgments.
   */
  judgments?: LabelledJudgment[];
}

/** One graded judgment of a question and its silver label from the gold data (docs/metrics.md). */
export interface LabelledJudgment {
  /** The judge, e.g. `toc.verify`, `diva.verify`, `combo.evidentiality`, `ve.consistency`. */
  purpose: string;
  /** The P the pipeline thresholded (calibrated when the pipeline calibrated). */
  p: number;
  /** P as the judge gave it, before calibration; present only when the pipeline calibrated it. */
  pRaw?: number;
  /** Silver label: true right / useful, false wrong / useless, null when the gold cannot say. */
  label: boolean | null;
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
    /** US dollars of the run's live calls (sum of `TraceSummary.costUsd`); absent when no price is known. */
    cost_usd?: number;
    /**
     * `judgeCalibration: batch`: the calibration judgments made before the first question
     * (judge-priors.json), not part of any question's counts above.
     */
    calibration_llm_calls?: number;
    calibration_prompt_tokens?: number;
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
  /**
   * Judge quality per graded judge, keyed by purpose (`toc.verify`, `diva.verify`,
   * `combo.evidentiality`, `combo.consistency`, `ve.consistency`): P against a silver label from
   * the gold data (docs/metrics.md). Also MLflow metrics `judge.<purpose>.<field>`.
   */
  judges?: Record<string, JudgeDiagnostics>;
}

/** How well one judge's P separates right from wrong on a run (src/metrics/judge-quality.ts). */
export interface JudgeDiagnostics {
  purpose: string;
  /** The silver label in words, e.g. "node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)". */
  silverLabel: string;
  /** Judgments of this purpose in the run, and how many of them got a silver label. */
  judgments: number;
  labelled: number;
  positives: number;
  negatives: number;
  /** AUC of P (the P the pipeline thresholded) against the silver label; null when a class is empty. */
  auc: number | null;
  /** Bootstrap 95% CI of the AUC, questions resampled; null when it cannot be computed. */
  aucCiLow: number | null;
  aucCiHigh: number | null;
  /** Mean squared error of P against the 0/1 silver label. */
  brier: number | null;
  meanPPositive: number | null;
  meanPNegative: number | null;
  /** Share of labelled judgments with P ≥ 0.5 (what the papers' threshold keeps). */
  shareAtLeastHalf: number | null;
  /** False when the AUC's CI contains 0.5 or too few judgments are labelled. */
  separates: boolean;
  /** One plain sentence for summaries and reports (says when a threshold sweep cannot show an effect). */
  verdict: string;
  /** Labelled judgments needed in each class before the AUC is trusted (judge-quality.ts). */
  minPerClass?: number;
  /** Questions with at least one labelled judgment (the bootstrap resamples these). */
  questions?: number;
  /** The same statistics of P before calibration, when the pipeline calibrated this judge. */
  raw?: JudgeRawDiagnostics;
  /** Reliability diagram: labelled judgments in equal-width P bins (empty bins left out). */
  reliability?: ReliabilityBin[];
  /** P histogram by silver label: counts per equal-width bin of [0, 1] (`edges` has one more entry). */
  histogram?: { edges: number[]; positive: number[]; negative: number[] };
}

/** The statistics of P before calibration (a subset of `JudgeDiagnostics`). */
export type JudgeRawDiagnostics = Pick<
  JudgeDiagnostics,
  'auc' | 'aucCiLow' | 'aucCiHigh' | 'brier' | 'meanPPositive' | 'meanPNegative' | 'shareAtLeastHalf'
>;

export interface ReliabilityBin {
  /** Bin bounds on P: [low, high), the last bin closed. */
  low: number;
  high: number;
  n: number;
  /** Mean P of the bin's judgments (x of the diagram). */
  meanP: number;
  /** Share of them whose silver label is positive (y of the diagram). */
  positiveRate: number;
}
