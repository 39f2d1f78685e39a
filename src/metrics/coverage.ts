/**
 * Answer coverage AC@k (ToC): for one question, the percentage of its gold DQs with at least one
 * short answer contained — DPR's `has_answer`, `hasAnswer` in src/retrieval/has-answer.ts, shared
 * with the retrieval module — in the top-k passages; averaged over questions by `aggregate`.
 * DQs without any short answer are not counted; a question with no such DQ has no AC@k (null).
 */
import type { QaPair } from '../datasets/types';
import type { Passage } from '../retrieval/types';
import { answerTokens, hasAnswer, hasAnswerInTokens } from '../retrieval/has-answer';

export { hasAnswer };

/** AC@k of one question (0–100), for passages in rank order. */
export function answerCoverage(ranked: ReadonlyArray<Passage | string>, qaPairs: readonly QaPair[], k: number): number | null {
  return coverageCurve(ranked, qaPairs, [k])[0].coverage;
}

/** AC@k for several k from one ranking (0–100 each). */
export function coverageCurve(ranked: ReadonlyArray<Passage | string>, qaPairs: readonly QaPair[], ks: readonly number[]): Array<{ k: number; coverage: number | null }> {
  const sets = qaPairs.map((qa) => qa.shortAnswers.filter((a) => a.trim() !== '')).filter((s) => s.length > 0);
  if (sets.length === 0) return ks.map((k) => ({ k, coverage: null }));
  const maxK = Math.max(0, ...ks);
  const passageTokens = ranked.slice(0, maxK).map((p) => answerTokens(typeof p === 'string' ? p : p.text));
  // First rank at which each DQ is covered (-1: never within maxK).
  const first = sets.map((set) => {
    const tokenised = set.map(answerTokens);
    return passageTokens.findIndex((tokens) => hasAnswerInTokens(tokens, tokenised));
  });
  return ks.map((k) => ({ k, coverage: (100 * first.filter((r) => r >= 0 && r < k).length) / sets.length }));
}
