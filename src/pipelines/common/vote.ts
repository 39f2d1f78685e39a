import { normaliseAnswer, tokenF1 } from './text';

export interface VoteResult {
  /** Normalised answer → votes (abstaining samples are not counted). */
  votes: Record<string, number>;
  /** Index of the first sample that gave the winning answer; -1 when every sample abstained. */
  winnerIndex: number;
  /** The winning answer as that sample wrote it ('' when every sample abstained). */
  answer: string;
  /** Votes of the winner. */
  winnerVotes: number;
  /** winnerVotes / number of samples (abstentions count in the denominator). */
  consistency: number;
}

/** One answer's votes and the index of the first sample that gave it. */
export interface AnswerTally {
  votes: number;
  first: number;
}

/**
 * Votes per normalised answer (SQuAD normalisation; abstentions count for nobody) and the
 * winner: most votes, a tie to the answer seen first. `majorityVote` and adaptive sampling's
 * stopping rule both decide from this, so they cannot disagree on who wins.
 */
export function tallyVotes(answers: Array<string | null>): { tally: Map<string, AnswerTally>; winner: string | null } {
  const tally = new Map<string, AnswerTally>();
  answers.forEach((answer, index) => {
    if (answer === null) return;
    const key = normaliseAnswer(answer);
    const seen = tally.get(key);
    if (seen) seen.votes += 1;
    else tally.set(key, { votes: 1, first: index });
  });
  let winner: string | null = null;
  let best: AnswerTally | undefined;
  for (const [key, t] of tally) {
    if (!best || t.votes > best.votes || (t.votes === best.votes && t.first < best.first)) {
      winner = key;
      best = t;
    }
  }
  return { tally, winner };
}

/**
 * Self-consistency majority vote over short answers, compared after SQuAD normalisation.
 * Ties go to the answer that appeared first.
 */
export function majorityVote(answers: Array<string | null>): VoteResult {
  const { tally, winner } = tallyVotes(answers);
  const votes: Record<string, number> = {};
  for (const [key, t] of tally) votes[key] = t.votes;
  if (winner === null) return { votes, winnerIndex: -1, answer: '', winnerVotes: 0, consistency: 0 };
  const { first: winnerIndex, votes: winnerVotes } = tally.get(winner)!;
  return {
    votes,
    winnerIndex,
    answer: answers[winnerIndex]!,
    winnerVotes,
    consistency: answers.length ? winnerVotes / answers.length : 0,
  };
}

/**
 * Self-consistency for long answers, where exact votes never agree: pick the medoid, the sample
 * with the highest mean token F1 to the others; its consistency is that mean. `votes` still
 * counts exact (normalised) duplicates so the distribution is visible.
 */
export function medoidVote(answers: Array<string | null>): VoteResult {
  const votes: Record<string, number> = {};
  for (const a of answers) if (a !== null) votes[normaliseAnswer(a)] = (votes[normaliseAnswer(a)] ?? 0) + 1;
  const present = answers.map((a, i) => ({ a, i })).filter((x): x is { a: string; i: number } => x.a !== null);
  if (present.length === 0) return { votes, winnerIndex: -1, answer: '', winnerVotes: 0, consistency: 0 };
  if (present.length === 1) {
    return { votes, winnerIndex: present[0].i, answer: present[0].a, winnerVotes: 1, consistency: 1 / answers.length };
  }
  let best = present[0];
  let bestScore = -1;
  for (const x of present) {
    let sum = 0;
    for (const y of present) if (y.i !== x.i) sum += tokenF1(x.a, y.a);
    const mean = sum / (answers.length - 1);
    if (mean > bestScore) {
      best = x;
      bestScore = mean;
    }
  }
  return { votes, winnerIndex: best.i, answer: best.a, winnerVotes: votes[normaliseAnswer(best.a)], consistency: bestScore };
}

export interface WeightedVoteResult extends VoteResult {
  /** Normalised answer → the sum of its samples' probabilities (on the 0…n vote scale, never rescaled). */
  weightedVotes: Record<string, number>;
}

/**
 * A sample's probability as Verify-and-Edit's released code ranks samples: exp of the *mean*
 * token log-probability of its completion (`HotpotAdv/consistency.py`, `consistency()`:
 * `np.exp(np.mean(token_logprobs[prompt_tokens:]))`), i.e. the per-token geometric mean, so a
 * long rationale is not penalised for its length. Null when unknown (no log-probability, or no
 * tokens to average).
 */
export function sampleProbability(logprob: number | undefined, completionTokens: number | undefined): number | null {
  if (logprob === undefined || !Number.isFinite(logprob) || !completionTokens || completionTokens <= 0) return null;
  return Math.exp(logprob / completionTokens);
}

/**
 * Self-consistency scored as Verify-and-Edit's paper-era code scores it (RuochenZhao/Verify-and-Edit
 * `HotpotAdv/consistency.py` from commit fd1d203, 2023-01-27, until b585f24, 2023-12-09, "fixed
 * consistency", went back to votes / 5): an answer's score is the **sum of its samples'
 * probabilities** (`sampleProbability`); the answer with the highest score wins (a tie to the answer
 * seen first, as the code's stable sort keeps insertion order) and the score itself is compared
 * with the threshold (its default 3 in `answer_again.py`, `verifying_answers.py` and
 * `commands.md`). The score is not rescaled: five samples that agree but are each only 50%
 * probable score 2.5 and are edited at threshold 3. `consistency` = score / n, in [0, 1].
 * Abstaining samples score for nobody and count in n, as in `majorityVote`.
 */
export function probabilitySumVote(answers: Array<string | null>, probabilities: readonly number[]): WeightedVoteResult {
  if (probabilities.length !== answers.length) throw new Error('probabilitySumVote: one probability per answer');
  const n = answers.length;
  const weightedVotes: Record<string, number> = {};
  const firstIndex = new Map<string, number>();
  answers.forEach((a, i) => {
    if (a === null) return;
    const key = normaliseAnswer(a);
    weightedVotes[key] = (weightedVotes[key] ?? 0) + probabilities[i];
    if (!firstIndex.has(key)) firstIndex.set(key, i);
  });
  const plain = majorityVote(answers);
  let best: string | null = null;
  for (const [key, score] of Object.entries(weightedVotes)) {
    if (best === null || score > weightedVotes[best] || (score === weightedVotes[best] && firstIndex.get(key)! < firstIndex.get(best)!)) best = key;
  }
  if (best === null) return { ...plain, weightedVotes };
  const winnerIndex = firstIndex.get(best)!;
  return {
    votes: plain.votes,
    winnerIndex,
    answer: answers[winnerIndex]!,
    winnerVotes: weightedVotes[best],
    consistency: n ? weightedVotes[best] / n : 0,
    weightedVotes,
  };
}

/**
 * The most probable sample among those giving `winnerIndex`'s answer (normalised), as the released
 * code picks the rationale to edit (`consistency()`: the argmax of the samples' probabilities within
 * the majority answer's list, the first on a tie). Samples of unknown probability are never
 * preferred; when none is known, `winnerIndex` itself.
 */
export function mostProbableSample(answers: Array<string | null>, probabilities: ReadonlyArray<number | null>, winnerIndex: number): number {
  const winner = answers[winnerIndex];
  if (winner === null || winner === undefined) return winnerIndex;
  const key = normaliseAnswer(winner);
  let best = winnerIndex;
  let bestP = probabilities[winnerIndex] ?? -Infinity;
  answers.forEach((a, i) => {
    if (a === null || normaliseAnswer(a) !== key) return;
    const p = probabilities[i] ?? -Infinity;
    if (p > bestP) {
      best = i;
      bestP = p;
    }
  });
  return best;
}
