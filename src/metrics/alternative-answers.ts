/**
 * EM and F1 counting alternative answers: Verify-and-Edit scores adversarial HotpotQA against
 * the gold answer *and* the alternative answers its authors listed for 120 of the 308 questions
 * (RuochenZhao/Verify-and-Edit `HotpotAdv/dataset_utils.py`: `read_hotpot_data` extends each
 * question's `answer_choices` with `annotations/alt_answers.jsonlines`, and
 * `hotpot_evaluation_with_multi_answers` scores against them). ambiqa keeps `em`/`f1` against the
 * gold answer alone and reports these beside them, so both figures are always visible.
 *
 * Definition: SQuAD EM / F1 (squad.ts), max over the gold answers and the alternatives.
 * The reference instead takes the EM of the answer with the best HotpotQA F1 (the first one on a
 * tie). The two differ only when an earlier answer has the prediction's tokens in another order
 * (F1 = 1, EM = 0) and a later one matches it exactly, or where HotpotQA's F1 zeroes a yes/no
 * mismatch; CHOICE: the max, which cannot score a prediction lower for listing more answers.
 *
 * Null (with its reason) when the example carries no alternatives list, i.e. no alternatives
 * file was loaded (dataset option `alternatives`): a silent fallback to `em` would report the
 * gold-only figure under the other name.
 */
import type { MetricFamily, Score } from './score';
import { exactMatch, maxOverGolds, tokenF1 } from './squad';

const NOT_LOADED = 'no alternative-answers file was loaded (dataset.alternatives)';

export function alternativeAnswerScores(text: string, gold: readonly string[], alternatives: readonly string[] | undefined, want: ReadonlySet<string>): Score[] {
  const all = [...gold, ...(alternatives ?? [])];
  const out: Score[] = [];
  for (const [name, metric] of [
    ['em_alt', exactMatch],
    ['f1_alt', tokenF1],
  ] as const) {
    if (!want.has(name)) continue;
    if (alternatives === undefined) out.push({ name, score: null, reason: NOT_LOADED });
    else if (all.length === 0) out.push({ name, score: null, reason: 'no gold answers' });
    else out.push({ name, score: 100 * maxOverGolds(metric, text, all), metadata: { alternatives: alternatives.length } });
  }
  return out;
}

/** Registry entry: EM / F1 counting the authors' alternative answers (adversarial HotpotQA). */
export const alternativeAnswersFamily: MetricFamily<'em_alt' | 'f1_alt'> = {
  family: 'alternative-answers',
  reference: 'Verify-and-Edit (Zhao et al. 2023) HotpotAdv/dataset_utils.py hotpot_evaluation_with_multi_answers with annotations/alt_answers.jsonlines',
  metrics: ['em_alt', 'f1_alt'],
  datasets: ['hotpotqa-adversarial'],
  // Asked for by name (experiments/ve-hotpotqa.yaml): they need the alternatives file.
  defaults: [],
  score: ({ text, example }, want) => alternativeAnswerScores(text, example.answers, example.alternativeAnswers, want),
};
