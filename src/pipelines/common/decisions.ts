/**
 * Decision records that several methods share: a sampled chain-of-thought (Verify-and-Edit and
 * CoT self-consistency both vote over them) and adaptive sampling's bookkeeping.
 */
import { z } from 'zod';
import type { Decisions, Trace } from '../../trace/types';

export const sampleSchema = z.object({
  rationale: z.string(),
  answer: z.string(),
});
export type VeSample = z.infer<typeof sampleSchema>;

/** Adaptive self-consistency (option `adaptive`): the budget n, the samples drawn, early stop. */
export const adaptiveSamplingSchema = z.object({
  budget: z.number(),
  drawn: z.number(),
  stoppedEarly: z.boolean(),
});
export type AdaptiveSampling = z.infer<typeof adaptiveSamplingSchema>;

/** A typed view of a trace's decisions when its `kind` is `kind`; undefined otherwise. */
export function decisionsOfKind<D extends Decisions>(trace: Pick<Trace, 'decisions'>, kind: D['kind']): D | undefined {
  return trace.decisions.kind === kind ? (trace.decisions as D) : undefined;
}
