/**
 * What Verify-and-Edit decides for one question, as its trace records it: the samples and their
 * vote, the consistency compared with the threshold, and, when it edited, every verifying
 * question with the sentences retrieved for it. Carried by its registry entry
 * (`method.decisionsSchema`); the types derive from it.
 */
import { z } from 'zod';
import type { Trace } from '../../trace/types';
import { adaptiveSamplingSchema, decisionsOfKind, sampleSchema } from '../common/decisions';

export const veEditSchema = z.object({
  sentence: z.string(),
  verifyingQuestion: z.string(),
  retrievedSentences: z.array(z.string()),
  answer: z.string(),
  /** Passages the retrieved sentences came from. */
  retrievedPassageIds: z.array(z.string()).optional(),
});

export const veDecisionsSchema = z.object({
  kind: z.literal('verify-edit'),
  samples: z.array(sampleSchema),
  /** answer (normalised) → votes. */
  votes: z.record(z.string(), z.number()),
  majorityAnswer: z.string(),
  /**
   * The majority answer's share: votes / n (`consistency: vote`), or its share of the samples'
   * probability mass (`consistency: logprob`).
   */
  consistency: z.number(),
  /** How consistency was computed (absent in traces written before the option existed: vote). */
  consistencyMode: z.enum(['vote', 'logprob']).optional(),
  /** logprob mode: answer (normalised) → probability-weighted votes, scaled to n so `threshold` applies. */
  weightedVotes: z.record(z.string(), z.number()).optional(),
  /** `adaptive: true`: samples drawn of the budget, and whether the vote settled early. */
  adaptive: adaptiveSamplingSchema.optional(),
  threshold: z.number(),
  edited: z.boolean(),
  edits: z.array(veEditSchema),
  /** The rationale that was edited (the first sample giving the majority answer). */
  majorityRationale: z.string().optional(),
  /** The task the prompts were written for. */
  task: z.enum(['short', 'fact']).optional(),
  editedRationale: z.string().optional(),
  finalAnswer: z.string(),
});
export type VeDecisions = z.infer<typeof veDecisionsSchema>;

/** The trace's decisions when Verify-and-Edit wrote it; undefined otherwise. */
export const veDecisionsOf = (trace: Pick<Trace, 'decisions'>): VeDecisions | undefined => decisionsOfKind<VeDecisions>(trace, 'verify-edit');
