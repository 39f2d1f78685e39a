/**
 * What Diva decides for one question, as its trace records it: the ambiguity type and the
 * interpretations it diversified retrieval over, each interpretation's verification, the
 * usefulness label and the route it took. Carried by its registry entry; the types derive from it.
 */
import { z } from 'zod';
import type { Trace } from '../../trace/types';
import { decisionsOfKind } from '../common/decisions';

export const ambiguityTypes = ['subject', 'object', 'predicate', 'time', 'location', 'none'] as const;
export type AmbiguityType = (typeof ambiguityTypes)[number];
export const divaUsefulnessLabels = ['Useful', 'PartialUseful', 'Useless'] as const;
export type DivaUsefulness = (typeof divaUsefulnessLabels)[number];

export const divaDecisionsSchema = z.object({
  kind: z.literal('diva'),
  ambiguityType: z.enum(ambiguityTypes),
  ambiguityReason: z.string(),
  interpretations: z.array(z.string()),
  /** One per interpretation: do the passages answer it? (P(yes) ≥ `verifyThreshold`.) */
  verdicts: z.array(z.boolean()),
  /**
   * One per interpretation: P(yes) from the verification judge, calibrated when
   * `judgeCalibration` is on (absent when verification was off).
   */
  pAnswered: z.array(z.number()).optional(),
  /** With `judgeCalibration`: P(yes) per interpretation as the judge gave it. */
  pAnsweredRaw: z.array(z.number()).optional(),
  /** With `judgeCalibration`: P(yes) per interpretation on the content-free prompt. */
  pAnsweredPrior: z.array(z.number()).optional(),
  usefulness: z.enum(divaUsefulnessLabels),
  route: z.enum(['rag', 'closed-book']),
  passageIds: z.array(z.string()),
  /** Per passage id: mean cosine similarity to the interpretations (the diversification ranking). */
  passageScores: z.array(z.number()).optional(),
  /** `earlyExit`: the model typed the question unambiguous; answered by RAG on it, unverified. */
  earlyExit: z.boolean().optional(),
});
export type DivaDecisions = z.infer<typeof divaDecisionsSchema>;

export const divaDecisionsOf = (trace: Pick<Trace, 'decisions'>): DivaDecisions | undefined => decisionsOfKind<DivaDecisions>(trace, 'diva');
