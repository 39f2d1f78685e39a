import { z } from 'zod';
import { maxTokens, nShots, seed, temperature, topP } from '../common/options';

/**
 * Verify-and-Edit knobs (paper: n = 5 at temperature 0.7, threshold ⌈n/2⌉, 6-shot CoT for
 * multi-hop QA and 3-shot for FEVER, top-3 sentences). Where the paper's text and the authors'
 * released code (RuochenZhao/Verify-and-Edit, `HotpotAdv/`) disagree, the default follows the
 * code and the other reading is an option; docs/pipelines.md, "Fidelity: Verify-and-Edit",
 * lists each step.
 */
export const verifyEditOptionsSchema = z
  .strictObject({
    n: z.int().min(1).max(64).default(5).describe('sampled chains of thought (self-consistency)'),
    temperature: temperature(0.7, 'the sampled chains of thought'),
    threshold: z
      .number()
      .min(0)
      .optional()
      .describe(
        'edit when the majority answer scores below this (votes, or summed sample probabilities with consistency: logprob); default ⌈n/2⌉; 0 never edits',
      ),
    consistency: z
      .enum(['vote', 'logprob'])
      .default('vote')
      .describe(
        "vote: the majority answer's votes (the paper's text and today's code); logprob: the sum of its samples' probabilities exp(mean token log-probability), as the paper-era code (needs a provider that returns log-probabilities)",
      ),
    editSample: z
      .enum(['most-probable', 'first'])
      .default('most-probable')
      .describe(
        "whose rationale is edited: the most probable sample giving the majority answer (the released code), or the first one (the paper's text leaves it open)",
      ),
    cotDemos: z
      .enum(['auto', 'written', 'pool'])
      .default('auto')
      .describe(
        "CoT demos: written (fixed, the first training questions with step-by-step rationales ambiqa wrote, as the released code's fixed demos), pool (the dataset's demo pool, gold supporting sentences as rationales), auto (written where ambiqa has them: hotpotqa-adversarial)",
      ),
    answerLogprob: z
      .boolean()
      .default(true)
      .describe(
        "score the final answer's log-probability for auc_logprob (the released code's AUC ranking): one short greedy call per unedited question",
      ),
    topSentences: z.int().min(1).max(20).default(3).describe('retrieved sentences kept per verifying question'),
    retrievalK: z.int().min(1).max(100).default(5).describe('passages retrieved per verifying question'),
    maxEditedSentences: z.int().min(1).max(50).default(8).describe('rationale sentences verified at most'),
    nShots: nShots(6),
    verifyShots: z.int().min(0).max(2).default(2).describe('demos in the verifying-question prompt (the code: 2)'),
    verifyAnswerShots: z.int().min(0).max(3).default(3).describe('demos in the verifying-answer prompt (the code: 3)'),
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
    if (o.threshold !== undefined && o.consistency === 'vote' && !Number.isInteger(o.threshold)) {
      ctx.addIssue({
        code: 'custom',
        path: ['threshold'],
        message: `threshold (${o.threshold}) counts votes with consistency: vote and must be a whole number (fractions apply to consistency: logprob)`,
      });
    }
  })
  .overwrite((o) => ({ ...o, threshold: o.threshold ?? Math.ceil(o.n / 2) }));

export type VerifyEditOptions = z.infer<typeof verifyEditOptionsSchema>;
