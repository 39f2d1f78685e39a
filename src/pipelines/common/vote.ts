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
  /** Normalised answer → probability-weighted votes, scaled so that they sum to n (abstentions included). */
  weightedVotes: Record<string, number>;
}

/**
 * Self-consistency weighted by each sample's probability (Wang et al. 2022's "unnormalised
 * weighted sum", which Verify-and-Edit uses for its consistency): an answer's score is the sum of
 * exp(log P(rationale and answer)) over the samples that gave it. The scores are rescaled to sum
 * to n, so `winnerVotes` is on the vote scale and the paper's threshold ⌈n/2⌉ keeps its meaning;
 * `consistency` is the winner's share of the probability mass. Abstaining samples keep their
 * mass in the denominator, as they count in `majorityVote`'s.
 */
export function weightedVote(answers: Array<string | null>, logprobs: number[]): WeightedVoteResult {
  if (logprobs.length !== answers.length) throw new Error('weightedVote: one log-probability per answer');
  const top = Math.max(...logprobs);
  // Subtract the largest log-probability before exp so long samples do not underflow to 0.
  const weights = logprobs.map((lp) => Math.exp(lp - top));
  const total = weights.reduce((s, w) => s + w, 0);
  const n = answers.length;
  const weightedVotes: Record<string, number> = {};
  const firstIndex = new Map<string, number>();
  answers.forEach((a, i) => {
    if (a === null) return;
    const key = normaliseAnswer(a);
    weightedVotes[key] = (weightedVotes[key] ?? 0) + (n * weights[i]) / total;
    if (!firstIndex.has(key)) firstIndex.set(key, i);
  });
  const plain = majorityVote(answers);
  let best: string | null = null;
  // Ties go to the answer that appeared first, as in `majorityVote`.
  for (const [key, score] of Object.entries(weightedVotes)) {
    const prev = best === null ? 0 : weightedVotes[best];
    if (best === null || score > prev || (score === prev && firstIndex.get(key)! < firstIndex.get(best)!)) best = key;
  }
  if (best === null) return { ...plain, weightedVotes };
  const winnerIndex = firstIndex.get(best)!;
  return {
    votes: plain.votes,
    winnerIndex,
    answer: answers[winnerIndex]!,
    winnerVotes: weightedVotes[best],
    consistency: weightedVotes[best] / n,
    weightedVotes,
  };
}
