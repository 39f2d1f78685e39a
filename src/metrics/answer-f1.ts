/**
 * Answer-F1 of one disambiguated-question node (ToC's pruning analysis): the SQuAD token F1 of the
 * node's answer against the gold DQ that matches it best, i.e. the maximum over gold DQs of the
 * maximum over that DQ's short answers. 0–100. The index of the best DQ is returned too (the
 * first one on ties; null when there are no gold DQs or nothing overlaps).
 */
import type { QaPair } from '../datasets/types';
import { tokenF1 } from './squad';

export interface AnswerF1Result {
  f1: number;
  bestDq: number | null;
}

export function answerF1(answer: string, gold: readonly QaPair[]): AnswerF1Result {
  let f1 = 0;
  let bestDq: number | null = null;
  gold.forEach((qa, i) => {
    for (const a of qa.shortAnswers) {
      const v = tokenF1(answer, a);
      if (v > f1) {
        f1 = v;
        bestDq = i;
      }
    }
  });
  return { f1: 100 * f1, bestDq };
}

/** Mean Answer-F1 over nodes (0–100), null for no nodes. */
export function meanAnswerF1(answers: readonly string[], gold: readonly QaPair[]): number | null {
  if (answers.length === 0) return null;
  return answers.reduce((s, a) => s + answerF1(a, gold).f1, 0) / answers.length;
}
