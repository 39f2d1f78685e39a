import { z } from 'zod';
import { maxTokens, nShots, rerankerChoice, seed, temperature, topP } from '../common/options';
import { answerStyleSchema } from '../common/task';

export const closedBookOptionsSchema = z.strictObject({
  nShots: nShots(5),
  temperature: temperature(0, 'the answer'),
  topP,
  maxTokens: maxTokens(300, 'the answer'),
  answerStyle: answerStyleSchema,
  seed,
});
export type ClosedBookOptions = z.infer<typeof closedBookOptionsSchema>;

export const vanillaRagOptionsSchema = z
  .strictObject({
    nShots: nShots(5),
    nPassages: z.int().min(1).max(50).default(5).describe('passages in the prompt'),
    poolSize: z.int().min(1).max(1000).default(5).describe('passages retrieved before reranking to nPassages'),
    reranker: rerankerChoice.default('none'),
    temperature: temperature(0, 'the answer'),
    topP,
    maxTokens: maxTokens(300, 'the answer'),
    answerStyle: answerStyleSchema,
    seed,
  })
  .superRefine((o, ctx) => {
    if (o.poolSize < o.nPassages) {
      ctx.addIssue({ code: 'custom', path: ['poolSize'], message: `poolSize (${o.poolSize}) must be ≥ nPassages (${o.nPassages})` });
    }
  });
export type VanillaRagOptions = z.infer<typeof vanillaRagOptionsSchema>;

export const cotOptionsSchema = z.strictObject({
  nShots: nShots(6),
  temperature: temperature(0, 'the chain of thought'),
  topP,
  maxTokens: maxTokens(256, 'the chain of thought'),
  answerStyle: answerStyleSchema,
  seed,
});
export type CotOptions = z.infer<typeof cotOptionsSchema>;

export const cotScOptionsSchema = z.strictObject({
  n: z.int().min(1).max(64).default(5).describe('sampled chains of thought'),
  nShots: nShots(6),
  temperature: temperature(0.7, 'the sampled chains of thought'),
  topP,
  maxTokens: maxTokens(256, 'each chain of thought'),
  answerStyle: answerStyleSchema,
  seed,
  adaptive: z
    .boolean()
    .default(false)
    .describe('draw the samples in rounds and stop once the majority cannot change (short answers; off: the paper’s fixed n)'),
});
export type CotScOptions = z.infer<typeof cotScOptionsSchema>;
