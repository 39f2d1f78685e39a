import { z } from 'zod';
import { batchCalibrationOptions } from '../common/batch-prior';
import { judgeCalibrationSchema } from '../common/judge';
import { maxTokens, verifyDemos, nShots, probabilityThreshold, seed, temperature, topP } from '../common/options';
import { answerStyleSchema } from '../common/task';

/** Diva knobs (paper: 5 passages, temperature 0.3, 300 new tokens). */
export const divaOptionsSchema = z.strictObject({
  maxInterpretations: z.int().min(1).max(20).default(5).describe('pseudo-interpretations used at most'),
  perInterpretationK: z.int().min(1).max(1000).default(10).describe('passages retrieved per interpretation before the union'),
  nPassages: z.int().min(1).max(50).default(5).describe('passages kept by mean similarity to the interpretations'),
  verification: z.boolean().default(true).describe('retrieval verification on/off (off: always Useful)'),
  verifyThreshold: probabilityThreshold(
    0.5,
    'an interpretation counts as answered by the passages when the judge gives P(yes) at least this; none answered → Useless → closed-book',
  ),
  judgeCalibration: judgeCalibrationSchema,
  verifyDemos,
  ...batchCalibrationOptions,
  adaptive: z.boolean().default(true).describe('adaptive generation on/off (off: always RAG)'),
  earlyExit: z
    .boolean()
    .default(false)
    .describe(
      "a question the model types 'none' (unambiguous) is answered by RAG on the question itself, without interpretations or verification (off: the paper's method)",
    ),
  diversifyExample: z.boolean().default(true).describe('show the worked example (an ambiguous question) in the diversification prompt'),
  diversifyUnambiguousExample: z
    .boolean()
    .default(true)
    .describe(
      "with diversifyExample, also show an unambiguous question typed 'none' (off: the ambiguous example only, the prompt before this option existed)",
    ),
  nShots: nShots(5),
  temperature: temperature(0.3, 'the answer'),
  diversifyTemperature: temperature(0.3, 'diversification'),
  topP,
  maxTokens: maxTokens(300, 'the answer'),
  diversifyMaxTokens: maxTokens(200, 'diversification'),
  answerStyle: answerStyleSchema,
  seed,
});

export type DivaOptions = z.infer<typeof divaOptionsSchema>;
