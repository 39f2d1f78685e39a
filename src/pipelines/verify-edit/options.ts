import { z } from 'zod';
import { maxTokens, nShots, seed, temperature, topP } from '../common/options';

/**
 * Verify-and-Edit knobs (paper: n = 5 at temperature 0.7, threshold ⌈n/2⌉, 6-shot CoT for
 * multi-hop QA and 3-shot for FEVER, 2-shot verifying questions, top-3 sentences).
 */
export const verifyEditOptionsSchema = z
  .strictObject({
    n: z.int().min(1).max(64).default(5).describe('sampled chains of thought (self-consistency)'),
    temperature: temperature(0.7, 'the sampled chains of thought'),
    threshold: z
      .int()
      .min(0)
      .optional()
      .describe('edit when the majority answer has fewer votes than this; default ⌈n/2⌉; 0 never edits'),
    consistency: z
      .enum(['vote', 'logprob'])
      .default('vote')
      .describe(
        "majority votes / n, or the paper's log-probability-weighted score (needs a provider that returns log-probabilities)",
      ),
    topSentences: z.int().min(1).max(20).default(3).describe('retrieved sentences kept per verifying question'),
    retrievalK: z.int().min(1).max(100).default(5).describe('passages retrieved per verifying question'),
    maxEditedSentences: z.int().min(1).max(50).default(8).describe('rationale sentences verified at most'),
    nShots: nShots(6),
    verifyShots: z.int().min(0).max(2).default(2).describe('demos in the verifying question/answer prompts'),
    topP,
    maxTokens: maxTokens(256, 'each chain of thought'),
    questionMaxTokens: maxTokens(64, 'a verifying question'),
    answerMaxTokens: maxTokens(64, 'a verifying answer'),
    finalMaxTokens: maxTokens(64, 'the re-answer from the edited rationale'),
    answerStyle: z.enum(['auto', 'short', 'fact']).default('auto').describe('short QA or FEVER labels (auto: by dataset)'),
    seed,
    adaptive: z
      .boolean()
      .default(false)
      .describe(
        'draw the chains in rounds and stop once neither the majority nor the edit decision can change (consistency: vote; off: the paper’s fixed n)',
      ),
  })
  .superRefine((o, ctx) => {
    if (o.threshold !== undefined && o.threshold > o.n) {
      ctx.addIssue({
        code: 'custom',
        path: ['threshold'],
        message: `threshold (${o.threshold}) must be ≤ n (${o.n}); votes can never exceed n`,
      });
    }
  })
  .overwrite((o) => ({ ...o, threshold: o.threshold ?? Math.ceil(o.n / 2) }));

export type VerifyEditOptions = z.infer<typeof verifyEditOptionsSchema>;
