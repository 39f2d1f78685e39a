/**
 * The files of a run directory and their shapes: `results.jsonl` (one `ExampleResult`, the
 * question's record, per line), `traces.jsonl` (one `Trace` per line; its schema is
 * src/trace/schema.ts), `metrics.json` (`RunMetrics`), `mlflow.json` (`MlflowRecord`) and
 * `run.json` (`RunState`). Each has one zod schema, the only definition of its shape: the types
 * are inferred from it and the readers parse with it. The runner writes them; metrics, plots,
 * reports, notebooks and merge read them and never re-run a pipeline. This module sits below all
 * of those, so none of them has to import the experiment runner to know a file's shape.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonl, writeFileAtomic } from '../common/jsonl';
import { formatIssues } from '../common/zod-issues';
import { artifactsDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import { traceSchema, traceSummarySchema } from '../trace/schema';
import type { Trace } from '../trace/types';

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
  /**
   * What `ambiqa reproduce` checks before it re-runs the config (`RunProvenance`): the code
   * version, the model files' checksums, the data files' checksums, the engine build or endpoint.
   * Written when the run starts (its first session); absent in runs written before issue 46.
   */
  provenance: 'provenance.json',
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
 *      wrote 0;
 *   3  each results line is stamped and is the question's whole record: its `target` (the gold
 *      its metrics read) and `scores` with value, reason and metadata where formats 1 and 2
 *      kept numbers (`metrics`) and no gold. Those lines are migrated when read (`readResults`).
 * Readers take every format up to this one and refuse a later one by name.
 */
export const RUN_FORMAT = 3;

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


// ---------------------------------------------------------------- results.jsonl (format 3)

/** A disambiguated question with its short answers, as a row's target keeps it (no passage). */
const targetQaPairSchema = z.object({ question: z.string(), shortAnswers: z.array(z.string()) });

/**
 * What a question is scored against: the gold its dataset's metrics read (src/metrics), copied
 * from the example when the row is built, so that reports, `ambiqa score`, judge labels and
 * figures read rows and never the dataset file. Empty lists where the dataset has none.
 */
const targetSchema = z.object({
  /** Acceptable short answers (EM/F1; ASQA: the union of the DQs' answers). */
  answers: z.array(z.string()),
  /** ASQA / AmbigNQ interpretations (an ASQA DQ asked as a question carries itself as its one pair). */
  qaPairs: z.array(targetQaPairSchema),
  /** ASQA reference long answers (ROUGE). */
  longAnswers: z.array(z.string()),
  /** FEVER's gold label. */
  label: z.enum(['SUPPORTS', 'REFUTES', 'NOT ENOUGH INFO']).optional(),
  /** Adversarial HotpotQA with an alternative-answers file loaded (`em_alt`, `f1_alt`); absent: none loaded. */
  alternativeAnswers: z.array(z.string()).optional(),
  /** The example this one was derived from (an ASQA DQ's ambiguous question). */
  sourceId: z.string().optional(),
});
export type QuestionTarget = z.output<typeof targetSchema>;

/**
 * One metric's score of a question: `value` on the 0–100 scale (null: the metric is undefined
 * for this question, `reason` says why), and what its scorer reported beside it (`metadata`:
 * ASQA's per-DQ hits, D-F1's reader spans, FEVER's predicted label, …).
 */
const questionScoreSchema = z.object({
  value: z.number().nullable(),
  reason: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /**
   * Which scoring wrote this value when it was not the run itself: the `id` of an entry of
   * metrics.json's `scoring` (`ambiqa score --run`, issue 46). Absent: scored when answered.
   */
  scoredBy: z.string().optional(),
});
export type QuestionScore = z.output<typeof questionScoreSchema>;
export type QuestionScores = Record<string, QuestionScore>;

/** One graded judgment of a question and its silver label from the gold data (docs/metrics.md). */
const labelledJudgmentSchema = z.object({
  /** The judge, e.g. `toc.verify`, `diva.verify`, `combo.evidentiality`, `ve.consistency`. */
  purpose: z.string(),
  /** The P the pipeline thresholded (calibrated when the pipeline calibrated). */
  p: z.number(),
  /** P as the judge gave it, before calibration; present only when the pipeline calibrated it. */
  pRaw: z.number().optional(),
  /** Silver label: true right / useful, false wrong / useless, null when the gold cannot say. */
  label: z.boolean().nullable(),
});
export type LabelledJudgment = z.output<typeof labelledJudgmentSchema>;

/**
 * A results.jsonl line in format 3: one question's whole record, built by one function
 * (`questionRecord`, src/experiments/record.ts). Each line carries its own `format`, so a folder
 * whose lines were written by two versions (a format-2 run resumed) still reads line by line.
 */
const exampleResultSchema = z.object({
  format: z.literal(3),
  id: z.string(),
  /** Position of the example in the run's (unsharded) selection; merged shards are ordered by it. */
  index: z.number().optional(),
  question: z.string(),
  /** What the question is scored against; absent only in lines migrated from formats 1 and 2. */
  target: targetSchema.optional(),
  /** The long answer (ASQA) or the final answer text. */
  output: z.string(),
  /** Short answer where the method produces one (EM/F1/accuracy datasets). */
  answer: z.string().optional(),
  /** Per-question scores keyed by metric name (e.g. `str_em`, `rougeLsum`); `scoreValues` gives the numbers. */
  scores: z.record(z.string(), questionScoreSchema),
  /** Copied from the trace summary so the table can be read without traces. */
  usage: traceSummarySchema,
  /**
   * The question's graded judgments with their silver labels (src/metrics/judge-labels.ts),
   * labelled when the example was scored, while the gold data and the corpus are at hand, so
   * that `metrics.json` `judges`, merges, reports and notebooks need neither. Absent for
   * questions without graded judgments.
   */
  judgments: z.array(labelledJudgmentSchema).optional(),
  /** Set when the pipeline failed on this example (the run goes on). */
  error: z.string().optional(),
  /**
   * The confidence the method ranks this prediction by, in [0, 1] (`PipelineOutput.confidence`,
   * e.g. Verify-and-Edit's consistency); absent for methods without one and in rows written before.
   */
  confidence: z.number().optional(),
  /** The final answer's log-probability (`PipelineOutput.answerLogprob`), where the method asked for it. */
  answerLogprob: z.number().optional(),
  /**
   * Which answer of the question this row is under `trials: k` (0 … k−1; absent = 0, every row
   * written before trials existed). A run's rows are keyed by (id, trial): `rowKey`.
   */
  trial: z.int().min(0).optional(),
  /**
   * The question's group under each `groupBy` field (e.g. `{kind: "disambiguated"}`), copied when
   * the row is built so that reports and `compare` group without the dataset file.
   */
  groups: z.record(z.string(), z.string()).optional(),
  /**
   * Scores this row held before `ambiqa score --run` replaced them, oldest first, each with the
   * time it was replaced: nothing a re-scoring overwrites is lost.
   */
  scoreHistory: z.array(z.object({ metric: z.string(), score: questionScoreSchema, replacedAt: z.string() })).optional(),
});
export type ExampleResult = z.output<typeof exampleResultSchema>;
/** The format-3 row by the name the record seam gives it. */
export type QuestionRecord = ExampleResult;

/**
 * A results.jsonl line of formats 1 and 2 (no `format` of its own): scores were numbers only
 * (`metrics`), and there was no target.
 */
const legacyResultSchema = exampleResultSchema.omit({ format: true, scores: true, target: true }).extend({
  metrics: z.record(z.string(), z.number()),
});

/**
 * The key of a row within its run: the question id, and `#<trial>` for trials after the first, so
 * a run without trials keys its rows by id exactly as before.
 */
export function rowKey(row: { id: string; trial?: number | undefined }): string {
  return row.trial ? `${row.id}#${row.trial}` : row.id;
}

/** The key of a trace within its run, matching its row's `rowKey`. */
export function traceKey(trace: { questionId: string; trial?: number | undefined }): string {
  return rowKey({ id: trace.questionId, trial: trace.trial });
}

/** Scores with a value only, from numbers (what a format-1 or 2 line held; test rows). */
export function scoresOf(values: Readonly<Record<string, number>>): QuestionScores {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, { value }]));
}

/** The numbers of a row's scores (`Record<string, number>`, the old `metrics`), undefined ones left out. */
export function scoreValues(row: { scores: QuestionScores }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of Object.entries(row.scores)) if (typeof s.value === 'number' && !Number.isNaN(s.value)) out[name] = s.value;
  return out;
}

/**
 * The schema of one results line, by its `format`: a format-3 line as written; a line without a
 * format (1 or 2) migrated — its numbers become scores with a value only, and it has no target;
 * a later format refused by name. Fields a schema does not name are kept as written (a later
 * minor addition is not refused).
 */
function resultLineSchema(line: unknown): z.ZodType<ExampleResult> {
  const format = line !== null && typeof line === 'object' ? (line as { format?: unknown }).format : undefined;
  if (format === undefined) {
    return legacyResultSchema.loose().transform(({ metrics, ...rest }): ExampleResult => ({
      format: 3,
      ...rest,
      scores: scoresOf(metrics),
    }));
  }
  if (format === 3) return exampleResultSchema.loose();
  const refused = `format ${JSON.stringify(format)} is not one this version of ambiqa reads (rows of formats 1 to ${RUN_FORMAT})`;
  return z.custom<ExampleResult>(() => false, { error: () => refused, path: ['format'] });
}

// ---------------------------------------------------------------- reading the JSONL files

/** Parse JSON-lines records with a schema; a line that does not fit is an error naming the file, line and field. */
function readJsonlWith<T>(path: string, schemaOf: (record: unknown) => z.ZodType<T>, what: string): T[] {
  const out: T[] = [];
  let records: unknown[];
  try {
    records = readJsonl<unknown>(path);
  } catch (error) {
    throw new AmbiqaError((error as Error).message, 'the file may have been edited by hand; re-run with --resume to rewrite it');
  }
  records.forEach((record, i) => {
    const parsed = schemaOf(record).safeParse(record);
    if (!parsed.success) {
      throw new AmbiqaError(
        `${path}: record ${i + 1} is not ${what}: ${formatIssues(parsed.error.issues).join('; ')}`,
        'the file may have been edited by hand or written by another program; re-run with --resume to rewrite it',
      );
    }
    out.push(parsed.data);
  });
  return out;
}

/** The records of a results.jsonl (a torn last line is dropped, as readJsonl does). */
export function readResults(path: string): ExampleResult[] {
  return readJsonlWith(path, resultLineSchema, 'a question result');
}

/** The traces of a traces.jsonl. */
export function readTraces(path: string): Trace[] {
  return readJsonlWith(path, () => traceSchema, 'a trace');
}

const metricAggregateSchema = z.object({
  /** Under `trials: k`, the mean of the per-question means over trials. */
  mean: jsonNumber,
  /** Bootstrap 95% confidence interval (under trials, two-level: questions, then trials within each). */
  ciLow: jsonNumber,
  ciHigh: jsonNumber,
  /** Questions (not rows: under trials a question has k rows). */
  n: z.int().min(0),
  /** `trials: k` only: trials per question (the most any question has). */
  trials: z.int().min(1).optional(),
  /** `trials: k` only: the pooled standard deviation across trials within a question. */
  trialSd: jsonNumber.optional(),
  /** `trials: k` only: the share of the mean's variance that comes from sampling (trials), in [0, 1]. */
  samplingShare: jsonNumber.optional(),
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
  /**
   * `groupBy` only: the metrics per group, by field then group value (e.g.
   * `groups.kind.disambiguated.str_em`), each with its bootstrap CI over that group's questions.
   */
  groups: z.record(z.string(), z.record(z.string(), z.record(z.string(), metricAggregateSchema))).optional(),
  /**
   * Every re-scoring of this run after it was answered (`ambiqa score --run`), oldest first: what
   * was scored, with which reader, when, and by which ambiqa version and commit. A score's
   * `scoredBy` names the entry's `id`.
   */
  scoring: z
    .array(
      z.object({
        id: z.string(),
        at: z.string(),
        metrics: z.array(z.string()),
        reader: z.string().optional(),
        version: z.string(),
        commit: z.string().optional(),
      }),
    )
    .optional(),
});
export type RunMetrics = z.output<typeof runMetricsSchema>;

// ---------------------------------------------------------------- provenance.json

/** A file the run read, by checksum: where it was and what it held. */
const recordedFileSchema = z.object({
  /** The path the run read (absolute, as the resolved config names it). */
  path: z.string(),
  /** The same path relative to the project root or the data dir, when it lies under one (found again on another clone). */
  relative: z.string().optional(),
  sha256: z.string(),
  bytes: z.int().min(0),
});
export type RecordedFile = z.output<typeof recordedFileSchema>;

/** A model of the run: an in-process file (embedded GGUF, MiniLM) or an endpoint's model. */
const recordedModelSchema = z.object({
  /** `llm`, `judge` or `embedder`: the config section (or the embedder) it serves. */
  role: z.enum(['llm', 'judge', 'embedder']),
  provider: z.string(),
  /** The catalog or manifest name, the file, or the endpoint's model name. */
  name: z.string(),
  /** In-process models: the file's sha256 (the pinned one of the catalog or manifest, else hashed when the run started). */
  sha256: z.string().optional(),
  /** In-process models: the file that was loaded. */
  file: z.string().optional(),
  /** Endpoints: the API root without credentials. */
  baseUrl: z.string().optional(),
  /**
   * Embedded generator and judge: the CPU threads it ran with (resolved from the machine's load
   * when the config left it unset; a reproduction runs with the same, as it changes floating-point order).
   */
  threads: z.int().min(1).optional(),
});
export type RecordedModel = z.output<typeof recordedModelSchema>;

/**
 * `provenance.json`: what the run needs to be re-run and checked (`ambiqa reproduce`, docs/
 * experiments.md "Reproducing a run"). The same facts are MLflow tags (`ambiqa.data.*`,
 * `ambiqa.engine.*`, `ambiqa.model.*`).
 */
const runProvenanceSchema = z.object({
  recordedAt: z.string(),
  code: z.object({
    /** The git commit of the project that composed the run; null outside a git checkout. */
    commit: z.string().nullable(),
    /** Whether tracked files had uncommitted changes (null: not known). */
    dirty: z.boolean().nullable(),
    ambiqaVersion: z.string(),
    node: z.string(),
  }),
  /** Versions of the packages that can change a number (provenance.ts `trackedPackages`). */
  packages: z.record(z.string(), z.string()),
  /** The data files the run read, by config field: `dataset`, `demos`, `ids`, `alternatives`, `corpus`. */
  data: z.record(z.string(), recordedFileSchema),
  models: z.array(recordedModelSchema),
  /** The embedded engine, when an in-process model generated or judged. */
  engine: z
    .object({
      nodeLlamaCpp: z.string(),
      /** llama.cpp's repository and release tag node-llama-cpp's binaries were built from; absent when not found. */
      llamaCpp: z.string().optional(),
      /** The CPU and its kernel features (another CPU may take other kernels: a reproduction says so, it does not refuse). */
      cpu: z.string().optional(),
    })
    .optional(),
  /** The retriever's own description (`describe()`: engine, index checksum, server URL …), when it has one. */
  retriever: z.record(z.string(), z.string()).optional(),
});
export type RunProvenance = z.output<typeof runProvenanceSchema>;

/** The JSON files of a run directory that have a schema, by `runFiles` key. */
const runJsonSchemas = { state: runStateSchema, metrics: runMetricsSchema, mlflow: mlflowRecordSchema, provenance: runProvenanceSchema } as const;
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
  // Formats 1 to 3 of these files differ only by the stamp, which the schema leaves out.
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
