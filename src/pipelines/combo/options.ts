import { z } from 'zod';
import { contextualCalibrationSchema } from '../common/judge';
import { maxTokens, nShots, probabilityThreshold, seed, temperature, topP } from '../common/options';
import { answerStyleSchema } from '../common/task';

/**
 * How a (retrieved, generated) pair's compatibility is built from the two judges. The released
 * code (yunx-z/COMBO) runs both: its main setting, `compatibility_2stage_optimal` in
 * `passage_matching/build_psg_pairs.py`, gates on evidentiality; `_product_label` is its ablation.
 */
export const compatibilityRules = ['gated', 'product'] as const;
export type CompatibilityRule = (typeof compatibilityRules)[number];

/**
 * The option issue 34 retired. Kept in the schema only to refuse it with a line that says what
 * replaced it (a strict object's generic "unknown field" would not): `skipEvidentialBelow: x` was
 * the product with rows below x zeroed, which neither rule reproduces exactly.
 */
const retiredSkipEvidentialBelow = z
  .never({
    error:
      "retired: use 'compatibility: gated' (0 for a passage with P(evidential) below 'evidentialThreshold', else P(consistent)) or 'compatibility: product'",
  })
  .optional()
  .describe("retired (issue 34): replaced by 'compatibility' and 'evidentialThreshold'");

/** COMBO knobs (paper: N = 10 pairs, RoBERTa discriminators, FiD reader). */
export const comboOptionsSchema = z.strictObject({
  nPassages: z.int().min(1).max(20).default(10).describe("N: retrieved passages and generated passages each (paper: 10)"),
  evidentialityScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(evidential) from an LLM judge or embedding similarity'),
  consistencyScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(consistent) from an LLM judge or embedding similarity'),
  judgeCalibration: contextualCalibrationSchema,
  compatibility: z
    .enum(compatibilityRules)
    .default('gated')
    .describe(
      "'gated' (the released code's main setting): 0 for a retrieved passage judged not evidential, else P(consistent), so consistency is judged only for evidential passages; 'product' (its ablation): P(consistent) · P(evidential), every one of the N² pairs judged",
    ),
  evidentialThreshold: probabilityThreshold(
    0.5,
    "'compatibility: gated': a retrieved passage is evidential when P(evidential) ≥ this (0.5: the code's argmax over its discriminator's two labels); 0 judges every pair",
  ),
  skipEvidentialBelow: retiredSkipEvidentialBelow,
  matching: z.enum(['hungarian', 'rank']).default('hungarian').describe("pairing: optimal (paper) or by rank (ablation)"),
  pairSort: z
    .enum(['compatibility', 'retrieval'])
    .default('compatibility')
    .describe("order of the pairs in the reader's prompt: by compatibility, highest first (the released code), or by the retrieved passage's rank"),
  pairOrder: z
    .enum(['generated-first', 'retrieved-first'])
    .default('generated-first')
    .describe('order of the two passages within each pair (the released code: generated first)'),
  nShots: nShots(5),
  generateTemperature: temperature(0.7, 'generated passages'),
  generateMaxTokens: maxTokens(150, 'a generated passage'),
  temperature: temperature(0, 'the reader'),
  topP,
  maxTokens: maxTokens(300, 'the reader'),
  answerStyle: answerStyleSchema,
  seed,
});

export type ComboOptions = z.infer<typeof comboOptionsSchema>;
