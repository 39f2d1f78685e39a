/**
 * Silver labels for graded judges: for every judgment a pipeline made with a P it thresholded,
 * whether the gold data says the judgment should have been "yes". Each method defines its own
 * judges and labels them (`MethodAnalysis.judges` / `labelJudgments`, defined with its pipeline
 * entry, e.g. src/pipelines/toc/analysis.ts, and handed over in the method catalog); the definitions, and why they were chosen, are in
 * docs/metrics.md, "Judge diagnostics". This file holds what they share and the dispatch by
 * `decisions.kind`.
 *
 * Labels are computed when a question is scored (the gold example and the corpus are at hand
 * then) and stored with its result (`ExampleResult.judgments`); judge-quality.ts turns them
 * into per-run statistics.
 */
import type { Example } from '../datasets/types';
import { answerTokens, hasAnswerInTokens } from '../retrieval/has-answer';
import type { LabelledJudgment } from '../run-files';
import type { Trace } from '../trace/types';
import type { MethodAnalyses, MethodJudge, PassageText } from './methods';

export type { PassageText } from './methods';

/** A judge's purpose, e.g. `toc.verify` (the LLM call purpose of its judgments). */
export type JudgePurpose = string;

/** The purposes of the given judges (the catalog's `judges`), in the order reports list them. */
export function judgePurposes(judges: readonly MethodJudge[]): JudgePurpose[] {
  return judges.map((j) => j.purpose);
}

/** A judge's silver label in words (JudgeDiagnostics.silverLabel); 'unknown' for a purpose none of `judges` has. */
export function silverLabel(purpose: JudgePurpose, judges: readonly MethodJudge[]): string {
  return judges.find((j) => j.purpose === purpose)?.silverLabel ?? 'unknown';
}

/** Every gold short answer of an example: its DQs' answers and its flat answer list, deduplicated. */
export function goldShortAnswers(example: Example): string[] {
  const all = [...example.qaPairs.flatMap((q) => q.shortAnswers), ...example.answers];
  return [...new Set(all.filter((a) => a.trim() !== ''))];
}

/**
 * The question's graded judgments with their silver labels, in trace order, from its method's
 * analysis in `methods` (the method catalog). `passageText` finds retrieved passages' texts
 * (Diva, COMBO); without it those judgments are unlabelled. A trace whose method has no labeller
 * has none.
 */
export function labelJudgments(trace: Trace, example: Example, methods: MethodAnalyses, passageText: PassageText = () => undefined): LabelledJudgment[] {
  return methods.analysis(trace.decisions.kind)?.labelJudgments?.(trace, example, passageText) ?? [];
}

/** Tokenised gold answers, and which of them a text contains (by index); the Diva and COMBO silver labels' test. */
export function goldAnswerMatcher(example: Example): { any: (text: string) => boolean; which: (text: string) => Set<number>; empty: boolean } {
  const answers = goldShortAnswers(example).map(answerTokens).filter((t) => t.length > 0);
  return {
    empty: answers.length === 0,
    any: (text) => hasAnswerInTokens(answerTokens(text), answers),
    which: (text) => {
      const tokens = answerTokens(text);
      const found = new Set<number>();
      answers.forEach((a, i) => {
        if (hasAnswerInTokens(tokens, [a])) found.add(i);
      });
      return found;
    },
  };
}
