import type { GenerateRequest } from '../../llm/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';
import { callLlm } from './llm';
import { normaliseAnswer } from './text';

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
 * `threshold` its votes fall on (Verify-and-Edit edits below it). The leader must be strictly
 * ahead of the runner-up by more than `remaining`: a tie would go to the answer seen first, and a
 * new answer starts at 0 votes, below any runner-up. Abstentions (null) vote for nobody.
 */
export function majoritySettled(answers: Array<string | null>, remaining: number, threshold?: number): boolean {
  if (remaining <= 0) return true;
  const votes = new Map<string, number>();
  for (const a of answers) if (a !== null) votes.set(normaliseAnswer(a), (votes.get(normaliseAnswer(a)) ?? 0) + 1);
  const counts = [...votes.values()].sort((x, y) => y - x);
  const leader = counts[0] ?? 0;
  const runnerUp = counts[1] ?? 0;
  if (leader <= runnerUp + remaining) return false;
  if (threshold === undefined) return true;
  return leader >= threshold || leader + remaining < threshold;
}

export async function sampleAdaptively(
  rec: TraceRecorder,
  ctx: PipelineContext,
  request: GenerateRequest & { purpose: string; n: number },
  answersOf: (texts: string[], firstIndex: number) => Array<string | null>,
  threshold?: number,
): Promise<{ texts: string[]; logprobs: Array<number | undefined>; answers: Array<string | null>; decision: AdaptiveDecision }> {
  const budget = request.n;
  const texts: string[] = [];
  const logprobs: Array<number | undefined> = [];
  const answers: Array<string | null> = [];
  let round = Math.min(budget, Math.floor(budget / 2) + 1);
  while (texts.length < budget) {
    const first = texts.length;
    const r = await callLlm(rec, ctx, { ...request, n: round, ...(first > 0 ? { firstSample: first } : {}) });
    texts.push(...r.texts);
    logprobs.push(...r.logprobs);
    answers.push(...answersOf(r.texts, first));
    if (majoritySettled(answers, budget - texts.length, threshold)) break;
    round = 1;
  }
  return { texts, logprobs, answers, decision: { budget, drawn: texts.length, stoppedEarly: texts.length < budget } };
}
