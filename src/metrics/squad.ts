/**
 * SQuAD answer normalisation, exact match and token F1 — the official SQuAD v2.0 evaluation
 * script's definitions, which ASQA, ALCE, AmbigNQ, HotpotQA and Verify-and-Edit all reuse:
 *
 *   normalize(s) = white_space_fix(remove_articles(remove_punc(lower(s))))
 *
 * - lower: full Unicode lower-casing (Python `str.lower`);
 * - remove_punc: deletes ASCII `string.punctuation` only — Unicode punctuation such as “ ” – is
 *   kept, as in the reference;
 * - remove_articles: `\b(a|an|the)\b` → ' ' with Python's Unicode word boundaries (so the "a"
 *   in "éa" is NOT a separate word, unlike JavaScript's ASCII `\b`);
 * - white_space_fix: `' '.join(s.split())` with Python's Unicode whitespace.
 */
import { PY_ASCII_PUNCTUATION, PY_WORD_CLASS, pySplit } from '../text/pytext';
import type { MetricFamily, Score, SyncScorer } from './score';

const punctuation = new Set(PY_ASCII_PUNCTUATION);
const articles = new RegExp(`(?<![${PY_WORD_CLASS}])(?:a|an|the)(?![${PY_WORD_CLASS}])`, 'gu');

export function normalizeAnswer(text: string): string {
  const lower = text.toLowerCase();
  let noPunct = '';
  for (const ch of lower) if (!punctuation.has(ch)) noPunct += ch;
  return pySplit(noPunct.replace(articles, ' ')).join(' ');
}

/** Tokens of the normalised answer (SQuAD `get_tokens`). */
export function answerTokens(text: string): string[] {
  return text ? pySplit(normalizeAnswer(text)) : [];
}

/** 1 when the normalised strings are equal, else 0. */
export function exactMatch(prediction: string, gold: string): number {
  return normalizeAnswer(prediction) === normalizeAnswer(gold) ? 1 : 0;
}

/**
 * Token-level F1 in [0, 1]. As in SQuAD v2.0: if either side has no tokens, F1 is 1 when both are
 * empty (a correct "no answer") and 0 otherwise.
 */
export function tokenF1(prediction: string, gold: string): number {
  const pred = answerTokens(prediction);
  const ref = answerTokens(gold);
  if (pred.length === 0 || ref.length === 0) return pred.length === ref.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of ref) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of pred) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      same++;
      counts.set(t, c - 1);
    }
  }
  if (same === 0) return 0;
  const precision = same / pred.length;
  const recall = same / ref.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Max of a per-gold metric over the gold answers; 0 when there are none. */
export function maxOverGolds(metric: (prediction: string, gold: string) => number, prediction: string, golds: readonly string[]): number {
  let best = 0;
  for (const g of golds) best = Math.max(best, metric(prediction, g));
  return best;
}

/** Exact match against any gold answer, 0–100. Null when there are no gold answers. */
export const ExactMatch: SyncScorer<string, readonly string[]> = ({ output, expected }): Score => ({
  name: 'em',
  score: expected.length === 0 ? null : 100 * maxOverGolds(exactMatch, output, expected),
  ...(expected.length === 0 ? { reason: 'no gold answers' } : {}),
});

/** Token F1 against the best gold answer, 0–100. Null when there are no gold answers. */
export const F1: SyncScorer<string, readonly string[]> = ({ output, expected }): Score => ({
  name: 'f1',
  score: expected.length === 0 ? null : 100 * maxOverGolds(tokenF1, output, expected),
  ...(expected.length === 0 ? { reason: 'no gold answers' } : {}),
});

/** Registry entry: EM and F1 of the short answer on the short-answer QA datasets. */
export const squadFamily: MetricFamily<'em' | 'f1'> = {
  family: 'squad',
  reference: 'SQuAD v2.0 evaluate-v2.0.py (normalize_answer, compute_exact, compute_f1)',
  metrics: ['em', 'f1'],
  datasets: ['ambignq', 'situatedqa', 'hotpotqa-adversarial', '2wikimultihop'],
  defaults: ['em', 'f1'],
  score: ({ text, example }, want) => [
    ...(want.has('em') ? [ExactMatch({ output: text, expected: example.answers })] : []),
    ...(want.has('f1') ? [F1({ output: text, expected: example.answers })] : []),
  ],
};
