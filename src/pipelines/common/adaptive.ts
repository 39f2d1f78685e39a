import type { GenerateRequest } from '../../llm/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';
import { callLlm } from './llm';
import { tallyVotes } from './vote';

/**
 * Adaptive self-consistency: draw the n samples in rounds and stop once more samples could not
 * change the outcome. The first round is a bare majority of the budget (⌊n/2⌋ + 1 samples, so
 * that unanimous questions stop there), then one sample per round. Samples keep their indices
 * (`firstSample`), hence their seeds and cache keys: the samples drawn are exactly the first ones
 * a fixed-budget run would draw, and the vote over them is the same vote.
 */
export interface AdaptiveDecision {
  /** Samples the fixed budget would draw (n). */
  budget: number;
  /** Samples actually drawn. */
  drawn: number;
  stoppedEarly: boolean;
}

/**
 * True when `remaining` more votes cannot change the majority vote's winner, nor which side of
 * `threshold` its votes fall on (Verify-and-Edit edits below it). The winner is decided as
 * `majorityVote` decides it: most votes, a tie to the answer seen first. So a rival that could
 * only draw level with the leader cannot take it when the leader was seen first, and an answer not
 * seen yet would be seen after the leader: it must get more votes than the leader has, not as many.
 * Any one rival may take every remaining vote. Abstentions (null) vote for nobody.
 */
export function majoritySettled(answers: Array<string | null>, remaining: number, threshold?: number): boolean {
  if (remaining <= 0) return true;
  const { tally, winner } = tallyVotes(answers);
  if (winner === null) return false;
  const leader = tally.get(winner)!;
  for (const rival of tally.values()) {
    if (rival === leader) continue;
    const most = rival.votes + remaining;
    if (most > leader.votes || (most === leader.votes && rival.first < leader.first)) return false;
  }
  if (remaining > leader.votes) return false; // an answer not seen yet could still overtake
  if (threshold === undefined) return true;
  return leader.votes >= threshold || leader.votes + remaining < threshold;
}

export async function sampleAdaptively(
  rec: TraceRecorder,
  ctx: PipelineContext,
  request: GenerateRequest & { purpose: string; n: number },
  answersOf: (texts: string[], firstIndex: number) => Array<string | null>,
  threshold?: number,
): Promise<{ texts: string[]; logprobs: Array<number | undefined>; completionTokens: Array<number | undefined>; answers: Array<string | null>; decision: AdaptiveDecision }> {
  const budget = request.n;
  const texts: string[] = [];
  const logprobs: Array<number | undefined> = [];
  const completionTokens: Array<number | undefined> = [];
  const answers: Array<string | null> = [];
  let round = Math.min(budget, Math.floor(budget / 2) + 1);
  while (texts.length < budget) {
    const first = texts.length;
    const r = await callLlm(rec, ctx, { ...request, n: round, ...(first > 0 ? { firstSample: first } : {}) });
    texts.push(...r.texts);
    logprobs.push(...r.logprobs);
    completionTokens.push(...r.completionTokens);
    answers.push(...answersOf(r.texts, first));
    if (majoritySettled(answers, budget - texts.length, threshold)) break;
    round = 1;
  }
  return { texts, logprobs, completionTokens, answers, decision: { budget, drawn: texts.length, stoppedEarly: texts.length < budget } };
}
