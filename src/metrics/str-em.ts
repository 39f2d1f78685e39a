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
import type { MetricFamily, Score, SyncScorer } from './score';

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

const NO_DQS = 'no qa_pairs';

export const StrEm: SyncScorer<string, readonly QaPair[]> = ({ output, expected }): Score => {
  const hits = dqHits(expected, output);
  return { name: 'str_em', score: strEm(expected, output), metadata: { dq_hits: hits }, ...(expected.length === 0 ? { reason: NO_DQS } : {}) };
};

export const StrHit: SyncScorer<string, readonly QaPair[]> = ({ output, expected }): Score => ({
  name: 'str_hit',
  score: strHit(expected, output),
  metadata: { dq_hits: dqHits(expected, output) },
  ...(expected.length === 0 ? { reason: NO_DQS } : {}),
});

/** Registry entry: STR-EM and STR-HIT of ASQA long answers. */
export const strEmFamily: MetricFamily<'str_em' | 'str_hit'> = {
  family: 'str-em',
  reference: 'ALCE eval.py compute_str_em (Gao et al. 2023)',
  metrics: ['str_em', 'str_hit'],
  datasets: ['asqa'],
  defaults: ['str_em', 'str_hit'],
  score: ({ text, example }, want) => [
    ...(want.has('str_em') ? [StrEm({ output: text, expected: example.qaPairs })] : []),
    ...(want.has('str_hit') ? [StrHit({ output: text, expected: example.qaPairs })] : []),
  ],
};
