/**
 * The shape of a comparison file (`ambiqa compare --out F.json`, `compare()` in the library):
 * paired deltas of several runs against a baseline, question by question. It is a seam between
 * the comparison (src/metrics/compare.ts), the report (`ambiqa report F.json` renders it), MLflow
 * and notebooks, so it is a zod schema: a reader validates what it loads and gets the types.
 * Documented field by field in docs/compare.md.
 */
import { z } from 'zod';

export const COMPARISON_KIND = 'ambiqa.comparison';

const usageSchema = z.object({
  llm_calls: z.number(),
  /** Absent when the run's token counts are unknown (metrics.json leaves them out). */
  prompt_tokens: z.number().optional(),
  completion_tokens: z.number().optional(),
  cache_hits: z.number(),
  wall_seconds: z.number(),
  /** Present when the run's metrics.json has it (a price was known for its calls). */
  cost_usd: z.number().optional(),
});

export const comparedRunSchema = z.object({
  /** The run's name (config name; a sweep point's `<sweep>.<label>`). */
  name: z.string(),
  /** The name made safe for MLflow metric keys (letters, digits, `_ - .`; see docs/compare.md). */
  key: z.string(),
  dir: z.string().optional(),
  pipeline: z.string().optional(),
  /** `name/split` (and the ASQA question kind when not the default). */
  dataset: z.string(),
  /** Questions with a result, answered and failed. */
  questions: z.number(),
  failed: z.number(),
  /** metrics.json's usage (cost_usd where present); absent for a run without metrics.json. */
  usage: usageSchema.optional(),
  /** The run's own per-run means (for the table beside the deltas). */
  means: z.record(z.string(), z.number()),
  mlflow: z.object({ runId: z.string(), experimentId: z.string(), runUrl: z.string().optional() }).optional(),
  /** A sweep point's swept values. */
  sweepValues: z.record(z.string(), z.unknown()).optional(),
  /**
   * `trials: k` runs only: trials per question (the most any question has) and the run's rows
   * (question × trial); `questions` then counts distinct questions and `failed` failed rows.
   */
  trials: z.number().optional(),
  rows: z.number().optional(),
});

/**
 * A paired row's statistics under trials (either run has rows with `trial` > 0): the two-level
 * bootstrap's variance split and power in questions × trials (src/metrics/trials.ts). Variances
 * are of one question's delta dᵢ, in squared metric points; null where not estimable.
 */
export const pairedTrialsSchema = z.object({
  /** Trials per question on each side (the most any question has). */
  baselineTrials: z.number(),
  runTrials: z.number(),
  /** Pooled within-question SD of each side (null: that side has one trial per question). */
  baselineTrialSd: z.number().nullable(),
  runTrialSd: z.number().nullable(),
  /**
   * `trial`: both runs answered the same trials of every question and trial t was paired with
   * trial t (shared sample indexes); `question`: each side's trials resampled independently.
   */
  pairing: z.enum(['trial', 'question']),
  /** Trial pairing: the pooled within-question SD of the trial-by-trial differences. */
  deltaTrialSd: z.number().nullable(),
  /** Sample variance of the per-question deltas. */
  totalVar: z.number().nullable(),
  /** Its part from sampling (trials) and the rest, from which questions were asked. */
  samplingVar: z.number().nullable(),
  questionVar: z.number().nullable(),
  /** samplingVar / totalVar in [0, 1]. */
  samplingShare: z.number().nullable(),
  power: z.object({
    /** Trials per question on both sides, one per column. */
    trials: z.array(z.number()),
    /** Questions needed for 80% power at each column's trials (null: δ = 0 or no spread). */
    questionsNeeded: z.array(z.number().nullable()),
    /** Question counts of the power grid's rows. */
    questions: z.array(z.number()),
    /** power[i][j]: power with questions[i] questions at trials[j] trials. */
    power: z.array(z.array(z.number().nullable())),
  }),
});

export const pairedRowSchema = z.object({
  run: z.string(),
  baseline: z.string(),
  metric: z.string(),
  /** Questions paired (answered by both runs, metric present in both). */
  n: z.number(),
  baselineMean: z.number(),
  runMean: z.number(),
  /** Mean of run − baseline over the paired questions (metric scale, 0–100). */
  meanDelta: z.number(),
  ciLow: z.number(),
  ciHigh: z.number(),
  /** Two-sided sign-flip randomisation test p-value (null: no question). */
  p: z.number().nullable(),
  pMethod: z.enum(['exact', 'monte-carlo', 'none']),
  /** Holm-adjusted over every row of the comparison. */
  pHolm: z.number().nullable(),
  sdDelta: z.number().nullable(),
  /** Questions needed for 80% power at the observed delta (null: δ = 0 or fewer than 2 questions). */
  questionsFor80Power: z.number().nullable(),
  /** Paired questions whose output text differs between the two runs. */
  answerChanged: z.number(),
  /** Questions of both runs that one of them failed (left out), by side. */
  failedInRun: z.number(),
  failedInBaseline: z.number(),
  /** Questions in only one of the two runs. */
  onlyInRun: z.number(),
  onlyInBaseline: z.number(),
  /** Under trials: the variance split and power (n, means, Δ, CI, p are then the two-level ones). */
  trials: pairedTrialsSchema.optional(),
});

/**
 * A paired delta within one group of questions (`--group-by`, issue 46): the row of the paired
 * table restricted to the questions whose `field` is `value`, its p Holm-adjusted across the
 * groups of that field (one family per run, metric and field).
 */
export const groupPairedRowSchema = z.object({
  field: z.string(),
  value: z.string(),
  run: z.string(),
  baseline: z.string(),
  metric: z.string(),
  n: z.number(),
  baselineMean: z.number(),
  runMean: z.number(),
  meanDelta: z.number(),
  ciLow: z.number(),
  ciHigh: z.number(),
  p: z.number().nullable(),
  pMethod: z.enum(['exact', 'monte-carlo', 'none']),
  /** Holm-adjusted across the groups of `field` for this run and metric. */
  pHolm: z.number().nullable(),
  questionsFor80Power: z.number().nullable(),
});

export const questionAnswerSchema = z.object({
  output: z.string(),
  answer: z.string().optional(),
  error: z.string().optional(),
  metrics: z.record(z.string(), z.number()),
  /** STR-EM hit per gold disambiguation (same order as the question's `dqs`), where gold was found. */
  hits: z.array(z.boolean()).optional(),
  /**
   * Under trials: the question's answered trials, and per metric the mean and SD over them (the
   * text, `metrics` and `hits` above are trial 0's, or the first answered trial's).
   */
  trials: z.object({ n: z.number(), mean: z.record(z.string(), z.number()), sd: z.record(z.string(), z.number()) }).optional(),
});

export const comparedQuestionSchema = z.object({
  id: z.string(),
  question: z.string(),
  /** Gold disambiguations (question and short answers) where the dataset was readable. */
  dqs: z.array(z.object({ question: z.string(), shortAnswers: z.array(z.string()) })).optional(),
  /** run name → what that run answered (absent: the question is not in that run). */
  answers: z.record(z.string(), questionAnswerSchema),
  /** Whether any run's output differs from the baseline's (both answered). */
  answerChanged: z.boolean(),
});

export const comparisonSchema = z.object({
  kind: z.literal(COMPARISON_KIND),
  version: z.literal(1),
  createdAt: z.string(),
  dataset: z.string(),
  baseline: z.string(),
  metrics: z.array(z.string()),
  /** How the statistics were computed (bootstrap resamples and seed, test, power). */
  method: z.object({
    resamples: z.number(),
    seed: z.number(),
    level: z.number(),
    permutations: z.number(),
    exactLimit: z.number(),
  }),
  runs: z.array(comparedRunSchema),
  rows: z.array(pairedRowSchema),
  questions: z.array(comparedQuestionSchema),
  /** `--group-by` (or the groups every run's rows recorded): the fields grouped by, and the per-group deltas. */
  groupBy: z.array(z.string()).optional(),
  groups: z.array(groupPairedRowSchema).optional(),
  /** Sentences for people: partial overlaps, failed questions left out, metrics missing. */
  notes: z.array(z.string()),
  /** Set once the comparison was logged to MLflow. */
  mlflow: z.object({ experimentName: z.string(), experimentId: z.string(), runId: z.string(), runUrl: z.string().optional() }).optional(),
});

export type Comparison = z.infer<typeof comparisonSchema>;
export type ComparedRun = z.infer<typeof comparedRunSchema>;
export type PairedRow = z.infer<typeof pairedRowSchema>;
export type GroupPairedRow = z.infer<typeof groupPairedRowSchema>;
export type ComparedQuestion = z.infer<typeof comparedQuestionSchema>;
export type QuestionAnswer = z.infer<typeof questionAnswerSchema>;
export type PairedTrials = z.infer<typeof pairedTrialsSchema>;

/** Whether a parsed JSON value is (meant to be) a comparison file. */
export function isComparisonValue(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === COMPARISON_KIND;
}
