/**
 * What the metrics layer needs to know about one method's decisions, defined by the method itself
 * (its pipeline registry entry, src/pipelines/entry.ts) instead of switched on here by
 * `decisions.kind`: its graded judges and their silver labels, its decision statistics, and how
 * to read its confidence back from a stored trace. Generic code (decision statistics, judge
 * diagnostics, the report) loops over the analyses it is handed, so a pipeline registered from a
 * notebook gets the same treatment as a built-in one.
 *
 * Nothing here is a registry: the analyses reach metrics as an argument (`MethodAnalyses`), built
 * from the pipeline registry by `methodCatalog()` (src/pipelines/registry.ts) where a run, a
 * report or a notebook is put together. An import from metrics up to the pipelines would invert
 * the data flow, and a map filled as an import side effect made every entry point import the
 * registry for nothing but that effect.
 */
import type { Example } from '../datasets/types';
import type { LabelledJudgment } from '../run-files';
import type { Trace } from '../trace/types';

/** A passage's text by corpus id; undefined when it is not at hand (no corpus, an unknown id). */
export type PassageText = (id: string) => string | undefined;

/** One graded judge of a method: the P it thresholds, and the gold-data label it is graded against. */
export interface MethodJudge {
  /** The LLM call purpose, e.g. `toc.verify`; also the key of its diagnostics (`judge.<purpose>.*`). */
  purpose: string;
  /**
   * Its labels, "yes" first, as the prompt asks for them (e.g. `['True', 'False']`); absent for
   * a confidence that is not a yes/no question (Verify-and-Edit's vote share).
   */
  labels?: readonly [string, string];
  /** The silver label in words (docs/metrics.md, "Judge diagnostics"). */
  silverLabel: string;
}

/** A method's analysis of its own decisions. Every function sees only traces of its own kind. */
export interface MethodAnalysis {
  /** The `decisions.kind` its traces carry (several pipelines may share one, e.g. the baselines). */
  readonly kind: string;
  /** Its graded judges, in the order reports list them. */
  readonly judges?: readonly MethodJudge[];
  /** The question's graded judgments with their silver labels, in trace order. */
  labelJudgments?(trace: Trace, example: Example, passageText: PassageText): LabelledJudgment[];
  /** Run-level decision statistics (`decision_*` → value) over the run's traces of this kind. */
  statistics?(traces: readonly Trace[]): Record<string, number>;
  /**
   * The confidence the question's prediction is ranked by (e.g. Verify-and-Edit's consistency),
   * read back from a stored trace. A run hands it over on `PipelineOutput.confidence` and keeps it
   * on its results row; this reads it for rows written before they carried it (`ambiqa score`,
   * figures of older runs).
   */
  confidence?(trace: Trace): number | undefined;
  /** The final answer's log-probability (`auc_logprob`), read back from a stored trace like `confidence`. */
  answerLogprob?(trace: Trace): number | undefined;
}

/** The analyses of a run's methods, by decisions kind: an argument, built from the pipeline registry. */
export interface MethodAnalyses {
  /** The analysis of a decisions kind; undefined when no method of the catalog writes that kind. */
  analysis(kind: string): MethodAnalysis | undefined;
  /** Every graded judge, in the order reports list them (built-in methods first). */
  readonly judges: readonly MethodJudge[];
}
