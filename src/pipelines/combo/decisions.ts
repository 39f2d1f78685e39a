/**
 * What COMBO decides for one question, as its trace records it: the generated and retrieved
 * passages, the judges' evidentiality and consistency, the compatibility they make, the matching
 * and the pairs in the reader's order. Carried by its registry entry; the types derive from it.
 */
import { z } from 'zod';
import type { Trace } from '../../trace/types';
import { decisionsOfKind } from '../common/decisions';

/** One (retrieved, generated) pair as the COMBO reader sees it; indices into the decisions' lists. */
export const comboPairSchema = z.object({
  /** Index into `retrievedPassageIds`. */
  retrieved: z.number(),
  /** Index into `generatedPassages`. */
  generated: z.number(),
  /** compatibility[retrieved][generated]. */
  compatibility: z.number(),
});
export type ComboPair = z.infer<typeof comboPairSchema>;

export const comboDecisionsSchema = z.object({
  kind: z.literal('combo'),
  generatedPassages: z.array(z.string()),
  retrievedPassageIds: z.array(z.string()),
  /** P(evidential) per retrieved passage. */
  evidentiality: z.array(z.number()),
  /**
   * consistency[i][j]: P(retrieved i and generated j agree); 0 where it was not judged (a row in
   * `consistencySkipped`).
   */
  consistency: z.array(z.array(z.number())),
  /**
   * compatibility[i][j]: with the `gated` rule (default) 0 for a passage judged not evidential,
   * else consistency[i][j]; with `product`, consistency[i][j] * evidentiality[i].
   */
  compatibility: z.array(z.array(z.number())),
  /** matching[i] = generated passage index paired with retrieved passage i (-1: none). */
  matching: z.array(z.number()),
  /** Which scorers produced the numbers, e.g. `llm-judge` or `embedding-cosine`. */
  scorers: z.object({ evidentiality: z.string(), consistency: z.string() }).optional(),
  /** Sum of compatibility over the pairs the reader sees. */
  matchingScore: z.number().optional(),
  /**
   * Rows whose consistency was not judged because the gate found the passage not evidential
   * (`compatibility: gated`; absent with `product`, which judges every pair).
   */
  consistencySkipped: z.array(z.boolean()).optional(),
  /**
   * The pairs in the order the reader's prompt lists them (`pairSort`: by compatibility, highest
   * first, or by retrieval rank). When there are fewer generated (or retrieved) passages than N,
   * the shorter list is repeated cyclically to N, as the released code does, so an index can
   * appear in more than one pair. Absent in traces written before issue 34.
   */
  pairs: z.array(comboPairSchema).optional(),
});
export type ComboDecisions = z.infer<typeof comboDecisionsSchema>;

export const comboDecisionsOf = (trace: Pick<Trace, 'decisions'>): ComboDecisions | undefined => decisionsOfKind<ComboDecisions>(trace, 'combo');
