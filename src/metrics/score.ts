/**
 * The one scorer shape every metric family exposes (after braintrust's autoevals): a function of
 * `{ output, expected }` that returns a named `Score`.
 *
 * Scale: every `score` here is on the 0–100 scale the papers report (and `ExampleResult.metrics`
 * stores). `null` means the metric is undefined for this example (e.g. STR-EM of a question that
 * has no disambiguated questions); aggregates skip nulls and say how many they skipped.
 */
import type { DatasetName, Example } from '../datasets/types';
import type { MetricAggregate } from '../run-files';
import type { BootstrapOptions } from './bootstrap';
import type { SentenceSplitter } from './sentences';

export interface Score {
  name: string;
  score: number | null;
  /** Why `score` is null (e.g. "no gold answers"); reported beside the run's numbers. */
  reason?: string;
  /** What produced the number (e.g. the D-F1 reader) and per-part details (e.g. per-DQ hits). */
  metadata?: Record<string, unknown>;
}

export type Scorer<Output, Expected, Extra extends object = object> = (
  args: { output: Output; expected: Expected } & Extra,
) => Score | Promise<Score>;

/** A scorer that needs no model and answers at once (every family except D-F1). */
export type SyncScorer<Output, Expected, Extra extends object = object> = (args: { output: Output; expected: Expected } & Extra) => Score;

/** Mean of a list, or null for an empty one (never NaN). */
export function meanOrNull(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

// ------------------------------------------------------------------------ the registry entry

/** The D-F1 reader (disambig-f1.ts): extracts the span of a long answer that answers a question. */
export interface DisambigReader {
  /** Reported beside every D-F1 value, e.g. `llm:llama-cpp/smollm2` or `qa-onnx:roberta-squad2`. */
  readonly name: string;
  /** The span of `context` that answers `question`, or '' when it has none. */
  read(question: string, context: string): Promise<string>;
  /** Release models. */
  dispose?(): Promise<void>;
}

/**
 * What a family's scorer is given for one example. `text` is the text scored: the long answer
 * (`output`) for ASQA, the short answer or label (`answer`) elsewhere.
 */
export interface ScoringInput {
  dataset: DatasetName;
  example: Example;
  text: string;
  /** Majority votes / samples in [0, 1] (Verify-and-Edit, CoT-SC), for the AUC. */
  consistency?: number;
  /** The final answer's log-probability (natural log, ≤ 0; Verify-and-Edit), for `auc_logprob`. */
  answerLogprob?: number;
  reader?: DisambigReader;
  splitter?: SentenceSplitter;
  /** Values already computed for this example by the families before it (registry order). */
  scores: Readonly<Record<string, number>>;
}

/** A per-example row as `aggregate` sees it; `id` and `trial` (absent = 0) group trials of a question. */
export interface MetricRow {
  metrics: Record<string, number>;
  id?: string;
  trial?: number;
}

/**
 * One metric family's registry entry (src/metrics/registry.ts lists them): which metrics it
 * produces, on which datasets, which are computed when a run names none, what it needs, and its
 * scorer. Scoring an example, config validation, `ambiqa score` and its help all derive from these
 * entries, so a new family is its file plus one registry line. `Name` is the union of the metric
 * names it produces, written in its declaration (`MetricFamily<'em' | 'f1'>`): the registry's
 * `MetricName` is the union over families.
 */
export interface MetricFamily<Name extends string = string> {
  /** e.g. `squad`, `str-em`. */
  family: string;
  /** The definition followed (paper, script), as the family file's comment gives it in full. */
  reference: string;
  /** Metric names it produces, in report order. */
  metrics: readonly Name[];
  datasets: readonly DatasetName[];
  /** Its metrics computed by default on its datasets, in default order. */
  defaults: readonly Name[];
  /** Needs a D-F1 reader (`ScoringInput.reader`). */
  needsReader?: boolean;
  /** Its metrics that split sentences (`ScoringInput.splitter`, recorded as `metric.sentence_splitter`). */
  splitsSentences?: readonly Name[];
  /** Metrics of other families that must be computed first (and are kept in the example's scores). */
  requires?: readonly string[];
  /**
   * Scores for the wanted metrics of this family (`want` holds only its own names). A null score
   * is left out of the example's values and its `reason` is reported; other names (e.g. the AUC's
   * per-example `consistency`) are helper values kept beside the metrics.
   */
  score(input: ScoringInput, want: ReadonlySet<string>): Score[] | Promise<Score[]>;
  /** Run-level values that are not the mean of per-example values (DR, AUC); they replace the mean. */
  aggregate?(rows: readonly MetricRow[], options: BootstrapOptions): Record<string, MetricAggregate>;
}
