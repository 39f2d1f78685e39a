import { z } from 'zod';
import { contextualCalibrationSchema } from '../common/judge';
import { maxTokens, nShots, probabilityThreshold, seed, temperature, topP } from '../common/options';
import { answerStyleSchema } from '../common/task';

/** COMBO knobs (paper: N = 10 pairs, RoBERTa discriminators, FiD reader). */
export const comboOptionsSchema = z.strictObject({
  nPassages: z.int().min(1).max(20).default(10).describe("N: retrieved passages and generated passages each (paper: 10)"),
  evidentialityScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(evidential) from an LLM judge or embedding similarity'),
  consistencyScorer: z.enum(['llm', 'embedding']).default('llm').describe('P(consistent) from an LLM judge or embedding similarity'),
  judgeCalibration: contextualCalibrationSchema,
  skipEvidentialBelow: probabilityThreshold(
    0,
    'skip the consistency judgments of a retrieved passage whose P(evidential) is below this and set its compatibility to 0 (saves N calls per passage; 0 never skips, as in the paper)',
  ),
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
