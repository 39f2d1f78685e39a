/**
 * What the baselines record: CoT self-consistency's samples and vote; the single-call baselines
 * (closed-book, vanilla RAG, CoT) the passages they were shown and CoT's rationale. Carried by
 * their registry entries; the types derive from the schemas.
 */
import { z } from 'zod';
import type { Trace } from '../../trace/types';
import { adaptiveSamplingSchema, decisionsOfKind, sampleSchema } from '../common/decisions';

export const selfConsistencyDecisionsSchema = z.object({
  kind: z.literal('cot-sc'),
  samples: z.array(sampleSchema),
  votes: z.record(z.string(), z.number()),
  majorityAnswer: z.string(),
  consistency: z.number(),
  /** `adaptive: true`: samples drawn of the budget, and whether the vote settled early. */
  adaptive: adaptiveSamplingSchema.optional(),
});
export type SelfConsistencyDecisions = z.infer<typeof selfConsistencyDecisionsSchema>;

export const baselineDecisionsSchema = z.object({
  kind: z.literal('baseline'),
  passageIds: z.array(z.string()),
  /** CoT: the generated rationale. */
  rationale: z.string().optional(),
});
export type BaselineDecisions = z.infer<typeof baselineDecisionsSchema>;

export const selfConsistencyDecisionsOf = (trace: Pick<Trace, 'decisions'>): SelfConsistencyDecisions | undefined =>
  decisionsOfKind<SelfConsistencyDecisions>(trace, 'cot-sc');
