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
   * In [0, 1], the confidence the AUC and the KDE rank by: votes / n (`consistency: vote`), or
   * `thresholdScore` / n (`consistency: logprob`).
   */
  consistency: z.number(),
  /**
   * What the threshold is compared with: the majority answer's votes (`vote`), or the sum of its
   * samples' probabilities (`logprob`, on the same 0…n scale). Absent in older traces (= votes).
   */
  thresholdScore: z.number().optional(),
  /** How consistency was computed (absent in traces written before the option existed: vote). */
  consistencyMode: z.enum(['vote', 'logprob']).optional(),
  /**
   * logprob mode: answer (normalised) → the sum of its samples' probabilities exp(mean token
   * log-probability), as Verify-and-Edit's paper-era code scores (traces written before issue 34
   * hold a share rescaled to n instead).
   */
  weightedVotes: z.record(z.string(), z.number()).optional(),
  /**
   * Per sample: exp(mean token log-probability of its completion), the probability the released
   * code ranks samples by; null where the provider returned no log-probabilities.
   */
  sampleProbabilities: z.array(z.number().nullable()).optional(),
  /** Which sample's rationale is edited: `most-probable` of the majority (the code's) or `first`. */
  editSample: z.enum(['most-probable', 'first']).optional(),
  /** Index of the sample whose rationale was (or would be) edited. */
  editedSampleIndex: z.number().optional(),
  /** Where the CoT demos came from: `written` (fixed, ambiqa's own rationales) or `pool` (the dataset's demo pool). */
  demoSource: z.enum(['written', 'pool']).optional(),
  /**
   * The final answer's log-probability (natural log): the summed token log-probabilities of the
   * greedy conclusion from the rationale answered from (the edited one, or the edited sample's
   * own); what `auc_logprob` ranks by. Absent when not asked (`answerLogprob: false`) or unknown.
   */
  answerLogprob: z.number().optional(),
  /** The answer that conclusion gave, when it is not the final answer (unedited questions only). */
  answerLogprobAnswer: z.string().optional(),
  /** `adaptive: true`: samples drawn of the budget, and whether the vote settled early. */
  adaptive: adaptiveSamplingSchema.optional(),
  threshold: z.number(),
  edited: z.boolean(),
  edits: z.array(veEditSchema),
  /** The rationale that was edited (sample `editedSampleIndex`; older traces: the first sample giving the majority answer). */
  majorityRationale: z.string().optional(),
  /** The task the prompts were written for. */
  task: z.enum(['short', 'fact']).optional(),
  editedRationale: z.string().optional(),
  finalAnswer: z.string(),
});
export type VeDecisions = z.infer<typeof veDecisionsSchema>;

/** The trace's decisions when Verify-and-Edit wrote it; undefined otherwise. */
export const veDecisionsOf = (trace: Pick<Trace, 'decisions'>): VeDecisions | undefined => decisionsOfKind<VeDecisions>(trace, 'verify-edit');

/**
 * The signals a Verify-and-Edit answer hands over (`PipelineOutput`): its consistency (the
 * majority's vote share, or summed sample probabilities / n), which `auc` ranks by, and the final
 * answer's log-probability where asked for (`answerLogprob: true`), which `auc_logprob` ranks by.
 */
export function veSignals(d: Pick<VeDecisions, 'consistency' | 'answerLogprob'>): { confidence: number; answerLogprob?: number } {
  return { confidence: d.consistency, ...(d.answerLogprob !== undefined ? { answerLogprob: d.answerLogprob } : {}) };
}
