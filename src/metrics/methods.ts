/**
 * What the metrics layer needs to know about one method's decisions, registered by the method
 * itself (its pipeline registry entry, src/pipelines/entry.ts) instead of switched on here by
 * `decisions.kind`: its graded judges and their silver labels, its decision statistics, and the
 * confidence a run's predictions can be ranked by. Generic code (decision statistics, judge
 * diagnostics, the report) loops over the registered analyses, so a pipeline registered from a
 * notebook gets the same treatment as a built-in one.
 *
 * The registry lives here, below the pipelines, and the pipelines fill it (an import that ran
 * from metrics up to the pipelines would invert the data flow). `src/pipelines/registry.ts`
 * registers every built-in method when it is imported; every entry point (CLI, library,
 * notebook) imports it.
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
  /** A confidence the question's prediction can be ranked by (e.g. Verify-and-Edit's consistency). */
  confidence?(trace: Trace): number | undefined;
  /** The final answer's log-probability, a second ranking (`auc_logprob`; Verify-and-Edit's code ranks by it). */
  answerLogprob?(trace: Trace): number | undefined;
}

const analyses = new Map<string, MethodAnalysis>();

/** Register (or, re-run from a notebook cell, replace) the analysis of one decisions kind. */
export function registerMethodAnalysis(analysis: MethodAnalysis): void {
  analyses.set(analysis.kind, analysis);
}

/** The analysis of a decisions kind; undefined when no registered pipeline writes that kind. */
export function methodAnalysis(kind: string): MethodAnalysis | undefined {
  return analyses.get(kind);
}

/** Every registered analysis, in registration order (built-in methods first). */
export function methodAnalyses(): MethodAnalysis[] {
  return [...analyses.values()];
}

/** Every registered judge, in registration order. */
export function registeredJudges(): MethodJudge[] {
  return methodAnalyses().flatMap((a) => a.judges ?? []);
}
