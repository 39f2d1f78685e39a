/**
 * STR-EM and STR-HIT (ALCE, Gao et al. 2023, `eval.py` `compute_str_em`) for ASQA long answers.
 *
 * - A DQ is *hit* when any of its short answers, SQuAD-normalised, is a substring of the
 *   SQuAD-normalised output (`exact_presence`). Note: plain substring, so "1990" is found in
 *   "19901", as in the reference.
 * - STR-EM of a question = 100 × mean of its DQ hits; STR-HIT = 100 if every DQ is hit, else 0.
 * - The run-level value is the mean over questions. A question without DQs has no STR-EM (the
 *   reference would produce NaN); here it is `null` and left out of the mean.
 */
import type { QaPair } from '../datasets/types';
import { normalizeAnswer } from './squad';
import type { Score, SyncScorer } from './score';

/** ALCE `exact_presence`: is any normalised short answer a substring of the normalised text? */
export function exactPresence(shortAnswers: readonly string[], text: string): boolean {
  const normalisedText = normalizeAnswer(text);
  return shortAnswers.some((a) => normalisedText.includes(normalizeAnswer(a)));
}

/** One hit flag per DQ, in the file's order. */
export function dqHits(qaPairs: readonly QaPair[], output: string): boolean[] {
  const normalisedText = normalizeAnswer(output);
  return qaPairs.map((qa) => qa.shortAnswers.some((a) => normalisedText.includes(normalizeAnswer(a))));
}

export function strEm(qaPairs: readonly QaPair[], output: string): number | null {
  if (qaPairs.length === 0) return null;
  const hits = dqHits(qaPairs, output);
  return (100 * hits.filter(Boolean).length) / hits.length;
}

export function strHit(qaPairs: readonly QaPair[], output: string): number | null {
  if (qaPairs.length === 0) return null;
  return dqHits(qaPairs, output).every(Boolean) ? 100 : 0;
}

export const StrEm: SyncScorer<string, readonly QaPair[]> = ({ output, expected }): Score => {
  const hits = dqHits(expected, output);
  return { name: 'str_em', score: strEm(expected, output), metadata: { dq_hits: hits } };
};

export const StrHit: SyncScorer<string, readonly QaPair[]> = ({ output, expected }): Score => ({
  name: 'str_hit',
  score: strHit(expected, output),
});
