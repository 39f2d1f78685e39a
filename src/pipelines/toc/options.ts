import { z } from 'zod';
import { batchCalibrationOptions } from '../common/batch-prior';
import { judgeCalibrationSchema } from '../common/judge';
import { maxTokens, verifyDemos, nShots, probabilityThreshold, rerankerChoice, seed, temperature, topP } from '../common/options';

/**
 * Every knob of Tree of Clarifications. Defaults follow METHODS.md and the paper's released code
 * (max_nodes 10, max_depth 3, max_trials 3, ≤ 16 expansions, top-100 pool reranked to 5, 5 shots,
 * temperature 0.7 for clarification and 0 for the answer, 300 new tokens).
 */
export const tocOptionsSchema = z
  .strictObject({
    maxNodes: z.int().min(1).max(100).default(10).describe('stop once this many valid (kept) nodes exist'),
    maxDepth: z.int().min(1).max(10).default(3).describe('deepest level a node may have (root = 0)'),
    maxTrials: z.int().min(1).max(50).default(3).describe('stop after this many consecutive failed expansions'),
    maxExpansions: z.int().min(1).max(100).default(16).describe('at most this many RAC expansions'),
    maxLlmCalls: z
      .int()
      .min(2)
      .max(1000)
      .default(50)
      .describe(
        'safety budget of LLM calls per question (expansions, judgments and the answer); high enough that maxNodes, maxTrials or maxExpansions end the search, as in the paper (docs/pipelines.md)',
      ),
    pruning: z.boolean().default(true).describe('self-verification pruning on/off'),
    earlyExit: z
      .boolean()
      .default(false)
      .describe(
        'answer directly, without the tree or verification, when the root expansion yields at most one distinct interpretation (off: the paper’s method)',
      ),
    pruneThreshold: probabilityThreshold(0.5, 'keep a node when its self-verification P(true) is at least this (0.5 = the paper\'s True/False)'),
    judgeCalibration: judgeCalibrationSchema,
    verifyDemos,
    ...batchCalibrationOptions,
    unpruneFloor: probabilityThreshold(
      0.1,
      'un-pruning never restores a node whose P(true) is below this (a confident rejection); text-mode verdicts carry no confidence and are exempt',
    ),
    minValidNodes: z
      .int()
      .min(0)
      .max(100)
      .default(2)
      .describe('un-prune (nearest the root first) until at least this many valid nodes remain'),
    answerNodes: z.int().min(0).max(100).default(10).describe('valid DQ/DA pairs (BFS order) in the answer prompt'),
    nPassages: z.int().min(1).max(50).default(5).describe('passages per RAC / answer prompt'),
    poolSize: z.int().min(1).max(1000).default(100).describe('passages retrieved per node before reranking'),
    retrievePerNode: z
      .boolean()
      .default(true)
      .describe("retrieve for each node's question (paper) or rerank the root's pool per node (released code)"),
    reranker: rerankerChoice,
    nShots: nShots(5),
    dropOverlappingDemos: z
      .boolean()
      .default(true)
      .describe("drop demos whose answers overlap the tree's answers (token F1 > demoOverlapF1)"),
    demoOverlapF1: z.number().min(0).max(1).default(0.8),
    dropDemoCopies: z
      .boolean()
      .default(true)
      .describe("an expansion whose DQs repeat a few-shot demo's text rather than the question yields no node"),
    demoCopyMargin: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe('how much more of the DQ words must come from one demo than from the question to call it a copy'),
    expansionTemperature: temperature(0.7, 'RAC expansions'),
    answerTemperature: temperature(0, 'the final answer'),
    topP,
    expansionMaxTokens: maxTokens(300, 'each RAC expansion'),
    maxTokens: maxTokens(300, 'the final answer'),
    seed,
  })
  .superRefine((o, ctx) => {
    if (o.poolSize < o.nPassages) {
      ctx.addIssue({ code: 'custom', path: ['poolSize'], message: `poolSize (${o.poolSize}) must be ≥ nPassages (${o.nPassages})` });
    }
    if (o.minValidNodes > o.maxNodes) {
      ctx.addIssue({
        code: 'custom',
        path: ['minValidNodes'],
        message: `minValidNodes (${o.minValidNodes}) must be ≤ maxNodes (${o.maxNodes})`,
      });
    }
  });

export type TocOptions = z.infer<typeof tocOptionsSchema>;
