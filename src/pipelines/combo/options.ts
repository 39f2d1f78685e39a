import { z } from 'zod';
import { maxTokens, nShots, seed, temperature, topP } from '../common/options';
import { answerStyleSchema } from '../common/task';

/** COMBO knobs (paper: N = 10 pairs, RoBERTa discriminators, FiD reader). */
export const comboOptionsSchema = z.strictObject({
  nPassages: z.int().min(1).max(20).default(5).describe('N: retrieved passages and generated passages each'),
  evidentialityScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(evidential) from an LLM judge or embedding similarity'),
  consistencyScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(consistent) from an LLM judge or embedding similarity'),
  judgeSamples: z.int().min(1).max(20).default(1).describe('judge samples per score; P = share of Yes'),
  judgeTemperature: temperature(0, 'the judges'),
  judgeMaxTokens: maxTokens(8, 'a Yes/No judgement'),
  skipNonEvidential: z
    .boolean()
    .default(false)
    .describe('skip consistency calls for passages with P(evidential) = 0 (their compatibility is 0 anyway)'),
  matching: z.enum(['hungarian', 'rank']).default('hungarian').describe("pairing: optimal (paper) or by rank (ablation)"),
  pairOrder: z.enum(['generated-first', 'retrieved-first']).default('generated-first'),
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
