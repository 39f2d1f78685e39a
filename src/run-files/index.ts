/**
 * The files of a run directory and their shapes: `results.jsonl` (one `ExampleResult` per line),
 * `traces.jsonl` (one `Trace` per line), `metrics.json` (`RunMetrics`), `mlflow.json`
 * (`MlflowRecord`) and `run.json` (`RunState`). The runner writes them; metrics, plots, reports,
 * notebooks and merge read them and never re-run a pipeline. This module sits below all of
 * those, so none of them has to import the experiment runner to know a file's shape.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonl, writeFileAtomic } from '../common/jsonl';
import { formatIssues } from '../common/zod-issues';
import { artifactsDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { Trace, TraceSummary } from '../trace/types';

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

/**
 * The format of a run directory, stamped as `format` in its `config.yaml` (src/experiments/
 * config.ts), `run.json`, `metrics.json` and `mlflow.json`; the JSONL files follow the
 * directory's. A file without the stamp is format 1 (written before there was one):
 *   1  `llm:` and `judge:` of config.yaml hold every provider's fields;
 *   2  each holds its provider's fields only; the JSON files are stamped; a token count a
 *      provider did not report is left out (traces, results, metrics.json) where format 1
 *      wrote 0.
 * Readers take every format up to this one and refuse a later one by name.
 */
export const RUN_FORMAT = 2;

/**
 * A number as JSON keeps it: `JSON.stringify` writes NaN and ±Infinity (a mean over no
 * questions) as null, read back as NaN so that the type stays a number.
 */
const jsonNumber = z.union([z.number(), z.null().transform(() => Number.NaN)]);

/** Where a run's MLflow ids are kept, so that `--resume`, `merge` and people can find the run. */
const mlflowRecordSchema = z.object({
  experimentName: z.string(),
  experimentId: z.string(),
  runId: z.string(),
  runName: z.string(),
  parentRunId: z.string().optional(),
  /** The UI address of the run (for people). */
  runUrl: z.string().optional(),
  /** Set by reports when the address may not open (its local server has stopped). */
  runUrlNote: z.string().optional(),
});
export type MlflowRecord = z.output<typeof mlflowRecordSchema>;

const runStateSchema = z.object({
  status: z.enum(['RUNNING', 'FINISHED', 'KILLED', 'FAILED']),
  /** Wall seconds summed over every session of the run (an interrupted session counts up to its last checkpoint). */
  wallSeconds: jsonNumber,
  sessions: z.int().min(0),
  startedAt: z.string(),
  updatedAt: z.string(),
  total: z.int().min(0),
  done: z.int().min(0),
  error: z.string().optional(),
  /** US dollars of live LLM calls over every session (finished questions and abandoned ones). */
  costUsd: jsonNumber.optional(),
  /** Live LLM samples and judgments over every session (what `costUsd` was spent on). */
  liveCalls: z.int().min(0).optional(),
  /** Why the last session stopped early when it was not a failure (e.g. the cost cap). */
  stoppedBy: z.string().optional(),
});
export type RunState = z.output<typeof runStateSchema>;

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
  /**
   * The confidence the method ranks this prediction by, in [0, 1] (`PipelineOutput.confidence`,
   * e.g. Verify-and-Edit's consistency); absent for methods without one and in rows written before.
   */
  confidence?: number;
  /** The final answer's log-probability (`PipelineOutput.answerLogprob`), where the method asked for it. */
  answerLogprob?: number;
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

// ---------------------------------------------------------------- results.jsonl and traces.jsonl

const labelledJudgmentSchema = z.object({ purpose: z.string(), p: z.number(), pRaw: z.number().optional(), label: z.boolean().nullable() });

/**
 * A results.jsonl line as it is read back: the fields every reader relies on are checked, the
 * rest pass through as written (loose: fields a later version adds are kept, not refused). Lines
 * carry no format stamp of their own; the folder's run.json does.
 */
const exampleResultSchema = z.looseObject({
  id: z.string(),
  question: z.string(),
  output: z.string(),
  answer: z.string().optional(),
  metrics: z.record(z.string(), z.number()),
  usage: z.looseObject({ llmCalls: z.number() }),
  error: z.string().optional(),
  index: z.number().optional(),
  judgments: z.array(labelledJudgmentSchema).optional(),
  confidence: z.number().optional(),
  answerLogprob: z.number().optional(),
});

/**
 * A traces.jsonl line as it is read back: the trace's frame (who, which question, the call and
 * retrieval lists, the summary, the output) and its decisions' `kind`; each method's own fields
 * are its decisions schema's business (src/pipelines/<method>/decisions.ts).
 */
const traceSchema = z.looseObject({
  pipeline: z.string(),
  questionId: z.string(),
  question: z.string(),
  llm: z.looseObject({ provider: z.string(), model: z.string() }),
  demoIds: z.array(z.string()),
  llmCalls: z.array(z.looseObject({ index: z.number(), purpose: z.string(), completions: z.array(z.looseObject({ text: z.string() })) })),
  retrievals: z.array(z.looseObject({ purpose: z.string(), query: z.string() })),
  parseFailures: z.array(z.looseObject({ purpose: z.string() })),
  decisions: z.looseObject({ kind: z.string() }),
  summary: z.looseObject({ llmCalls: z.number() }),
  output: z.string(),
});

/** Parse JSON-lines records with a schema; a line that does not fit is an error naming the file, line and field. */
function readJsonlWith<T>(path: string, schema: z.ZodType, what: string): T[] {
  const out: T[] = [];
  let records: unknown[];
  try {
    records = readJsonl<unknown>(path);
  } catch (error) {
    throw new AmbiqaError((error as Error).message, 'the file may have been edited by hand; re-run with --resume to rewrite it');
  }
  records.forEach((record, i) => {
    const parsed = schema.safeParse(record);
    if (!parsed.success) {
      throw new AmbiqaError(
        `${path}: record ${i + 1} is not ${what}: ${formatIssues(parsed.error.issues).join('; ')}`,
        'the file may have been edited by hand or written by another program; re-run with --resume to rewrite it',
      );
    }
    out.push(parsed.data as T);
  });
  return out;
}

/** The records of a results.jsonl (a torn last line is dropped, as readJsonl does). */
export function readResults(path: string): ExampleResult[] {
  return readJsonlWith<ExampleResult>(path, exampleResultSchema, 'a question result');
}

/** The traces of a traces.jsonl. */
export function readTraces(path: string): Trace[] {
  return readJsonlWith<Trace>(path, traceSchema, 'a trace');
}

const metricAggregateSchema = z.object({
  mean: jsonNumber,
  /** Bootstrap 95% confidence interval. */
  ciLow: jsonNumber,
  ciHigh: jsonNumber,
  n: z.int().min(0),
});
export type MetricAggregate = z.output<typeof metricAggregateSchema>;

/** The statistics of P before calibration (a subset of `JudgeDiagnostics`). */
const judgeRawDiagnosticsSchema = z.object({
  /** AUC of P (the P the pipeline thresholded) against the silver label; null when a class is empty. */
  auc: z.number().nullable(),
  /** Bootstrap 95% CI of the AUC, questions resampled; null when it cannot be computed. */
  aucCiLow: z.number().nullable(),
  aucCiHigh: z.number().nullable(),
  /** Mean squared error of P against the 0/1 silver label. */
  brier: z.number().nullable(),
  meanPPositive: z.number().nullable(),
  meanPNegative: z.number().nullable(),
  /** Share of labelled judgments with P ≥ 0.5 (what the papers' threshold keeps). */
  shareAtLeastHalf: z.number().nullable(),
});
export type JudgeRawDiagnostics = z.output<typeof judgeRawDiagnosticsSchema>;

const reliabilityBinSchema = z.object({
  /** Bin bounds on P: [low, high), the last bin closed. */
  low: z.number(),
  high: z.number(),
  n: z.int().min(0),
  /** Mean P of the bin's judgments (x of the diagram). */
  meanP: jsonNumber,
  /** Share of them whose silver label is positive (y of the diagram). */
  positiveRate: jsonNumber,
});
export type ReliabilityBin = z.output<typeof reliabilityBinSchema>;

/** How well one judge's P separates right from wrong on a run (src/metrics/judge-quality.ts). */
const judgeDiagnosticsSchema = judgeRawDiagnosticsSchema.extend({
  purpose: z.string(),
  /** The silver label in words, e.g. "node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)". */
  silverLabel: z.string(),
  /** Judgments of this purpose in the run, and how many of them got a silver label. */
  judgments: z.int().min(0),
  labelled: z.int().min(0),
  positives: z.int().min(0),
  negatives: z.int().min(0),
  /** False when the AUC's CI contains 0.5 or too few judgments are labelled. */
  separates: z.boolean(),
  /** One plain sentence for summaries and reports (says when a threshold sweep cannot show an effect). */
  verdict: z.string(),
  /** Labelled judgments needed in each class before the AUC is trusted (judge-quality.ts). */
  minPerClass: z.int().optional(),
  /** Questions with at least one labelled judgment (the bootstrap resamples these). */
  questions: z.int().optional(),
  /** The same statistics of P before calibration, when the pipeline calibrated this judge. */
  raw: judgeRawDiagnosticsSchema.optional(),
  /** Reliability diagram: labelled judgments in equal-width P bins (empty bins left out). */
  reliability: z.array(reliabilityBinSchema).optional(),
  /** P histogram by silver label: counts per equal-width bin of [0, 1] (`edges` has one more entry). */
  histogram: z.object({ edges: z.array(z.number()), positive: z.array(z.int()), negative: z.array(z.int()) }).optional(),
});
export type JudgeDiagnostics = z.output<typeof judgeDiagnosticsSchema>;

const runMetricsSchema = z.object({
  /** Questions with a result: answered plus failed. */
  n: z.int().min(0),
  /** Questions answered (no error); the metrics are computed over these only. */
  answered: z.int().min(0).optional(),
  metrics: z.record(z.string(), metricAggregateSchema),
  usage: z.object({
    llm_calls: jsonNumber,
    /**
     * Token sums over the results; absent when some call's tokens were not reported (unknown,
     * not 0). Format-1 files always have numbers, counting such calls as 0.
     */
    prompt_tokens: jsonNumber.optional(),
    completion_tokens: jsonNumber.optional(),
    cache_hits: jsonNumber,
    wall_seconds: jsonNumber,
    /** US dollars of the run's live calls (sum of `TraceSummary.costUsd`); absent when no price is known. */
    cost_usd: jsonNumber.optional(),
    /**
     * `judgeCalibration: batch`: the calibration judgments made before the first question
     * (judge-priors.json), not part of any question's counts above.
     */
    calibration_llm_calls: jsonNumber.optional(),
    calibration_prompt_tokens: jsonNumber.optional(),
    /** The persistent retrieval cache (a retrieval server's answers): this session's replays and live queries. */
    retrieval_cache_hits: jsonNumber.optional(),
    retrieval_cache_misses: jsonNumber.optional(),
  }),
  /** Examples the run was asked to answer; `n < total` when it was stopped early. */
  total: z.int().min(0).optional(),
  /** Examples whose pipeline failed (not part of the metrics; see `answered`). */
  errors: z.int().min(0).optional(),
  /** How the run ended. */
  status: z.enum(['FINISHED', 'KILLED', 'FAILED']).optional(),
  /**
   * How the metrics were measured (`metric.reader`, `metric.sentence_splitter`) and how the
   * pipeline's judgments were read (`judge_mode`: probability | text | mixed), also MLflow params.
   */
  settings: z.record(z.string(), z.string()).optional(),
  /** Decision statistics from the traces (`decision_*`, src/metrics/decisions.ts), also MLflow metrics. */
  decisions: z.record(z.string(), jsonNumber).optional(),
  /**
   * Judge quality per graded judge, keyed by purpose (`toc.verify`, `diva.verify`,
   * `combo.evidentiality`, `combo.consistency`, `ve.consistency`): P against a silver label from
   * the gold data (docs/metrics.md). Also MLflow metrics `judge.<purpose>.<field>`.
   */
  judges: z.record(z.string(), judgeDiagnosticsSchema).optional(),
});
export type RunMetrics = z.output<typeof runMetricsSchema>;

/** The JSON files of a run directory that have a schema, by `runFiles` key. */
const runJsonSchemas = { state: runStateSchema, metrics: runMetricsSchema, mlflow: mlflowRecordSchema } as const;
export type RunJsonFile = keyof typeof runJsonSchemas;
export type RunJson<K extends RunJsonFile> = z.output<(typeof runJsonSchemas)[K]>;

/**
 * Read one of a run directory's JSON files with its schema (null when it is not there), from any
 * format up to `RUN_FORMAT`. A sweep's `mlflow.json` has a run's shape. Errors name the file.
 */
export function readRunJson<K extends RunJsonFile>(path: string, kind: K): RunJson<K> | null {
  if (!existsSync(path)) return null;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${path}: not valid JSON (${(error as Error).message})`, 'the file may be from an interrupted run; re-run with --resume');
  }
  const format = value !== null && typeof value === 'object' ? ((value as { format?: unknown }).format ?? 1) : 1;
  if (typeof format !== 'number' || !Number.isInteger(format) || format < 1 || format > RUN_FORMAT) {
    throw new AmbiqaError(
      `${path}: format ${JSON.stringify(format)} is not one this version of ambiqa reads (formats 1 to ${RUN_FORMAT})`,
      'read the run with the version of ambiqa that wrote it, or a newer one',
    );
  }
  // Formats 1 and 2 of these files differ only by the stamp, which the schema leaves out.
  const schema = runJsonSchemas[kind];
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const lines = formatIssues(parsed.error.issues, { schema, input: value });
    throw new AmbiqaError(`${path}: not a ${runFiles[kind]} ambiqa wrote: ${lines.join('; ')}`, 'the file may have been edited by hand; restore it, or start the run again');
  }
  return parsed.data as RunJson<K>;
}

/** Write one of a run directory's JSON files, stamped with the format it is written in. */
export function writeRunJson<K extends RunJsonFile>(path: string, _kind: K, value: RunJson<K>): void {
  writeJson(path, { format: RUN_FORMAT, ...value });
}
