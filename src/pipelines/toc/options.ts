import { z } from 'zod';
import { batchCalibrationOptions } from '../common/batch-prior';
import { judgeCalibrationSchema } from '../common/judge';
import { maxTokens, verifyDemos, nShots, probabilityThreshold, rerankerChoice, seed, temperature, topP } from '../common/options';

/** The tree searches: the released code's loop, and the breadth-first search that stops on an empty queue. */
export const TOC_SEARCHES = ['released', 'stop-when-empty'] as const;

/**
 * Every knob of Tree of Clarifications. Defaults follow METHODS.md and the authors' released code
 * (gankim/tree-of-clarifications `run_toc.py`: max_nodes 10, max_depth 3, max_trials 3 restarts,
 * ≤ 16 loop steps, pruning switched off after 10; one top-100 pool for the ambiguous question
 * reranked to 5 per node; 5 shots; temperature 0.7 for clarification and 0 for the answer; 300
 * new tokens). Where the code and the paper's text differ, the other reading is an option
 * (docs/pipelines.md, "Fidelity: Tree of Clarifications").
 */
export const tocOptionsSchema = z
  .strictObject({
    search: z
      .enum(TOC_SEARCHES)
      .default('released')
      .describe(
        "'released': the authors' run_toc.py loop (an empty queue is refilled with the root and every valid node, up to maxTrials restarts; pruning switched off after pruningOffAfter steps or maxTrials restarts when an expansion keeps nothing); 'stop-when-empty': breadth-first until the queue empties or maxTrials consecutive expansions add nothing",
      ),
    maxNodes: z.int().min(1).max(100).default(10).describe('stop once this many valid (kept) nodes exist'),
    maxDepth: z.int().min(1).max(10).default(3).describe('deepest level a node may have (root = 0); nodes at this depth are not expanded'),
    maxTrials: z
      .int()
      .min(1)
      .max(50)
      .default(3)
      .describe("search 'released': restarts of the emptied queue allowed (the code's max_trials); 'stop-when-empty': consecutive failed expansions"),
    maxExpansions: z
      .int()
      .min(1)
      .max(100)
      .default(16)
      .describe("search 'released': loop steps (the code's n_expansions ≤ 15: 16 steps, a popped node too deep to expand counts); 'stop-when-empty': RAC expansions"),
    pruningOffAfter: z
      .int()
      .min(0)
      .max(100)
      .default(10)
      .describe("search 'released': once this many steps have passed (or maxTrials restarts), an expansion whose pairs are all pruned switches pruning off and resets the restart count"),
    maxLlmCalls: z
      .int()
      .min(2)
      .max(1000)
      .default(200)
      .describe(
        'safety budget of LLM calls per question (expansions, judgments and the answer); high enough that the search limits end the search, as in the released code (docs/pipelines.md)',
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
    poolSize: z.int().min(1).max(1000).default(100).describe('passages retrieved (once for the ambiguous question, or per node with retrievePerNode) before reranking'),
    retrievePerNode: z
      .boolean()
      .default(false)
      .describe("retrieve a new pool for each node's question (the paper's wording, \"retrieval is performed again\"); false: one pool for the ambiguous question, reranked against each node's question (released code)"),
    dropAnsweredPassages: z
      .boolean()
      .default(true)
      .describe("after an expansion, passages shown in its prompt that contain one of its answers leave the pool (released code's remove_dup_psgs), so later expansions see new evidence"),
    demosFor: z
      .enum(['node', 'root'])
      .default('node')
      .describe("RAC demos chosen by kNN on the expanded node's question (released code) or on the ambiguous question"),
    evidenceFrom: z
      .enum(['retrieved', 'shown'])
      .default('retrieved')
      .describe("with evidence: contains-answer, the candidates: every retrieved passage (run_toc.py passes all_passages) or only those shown in RAC prompts (toc/pruning.py get_evidence)"),
    evidence: z
      .enum(['best-shown', 'contains-answer'])
      .default('best-shown')
      .describe(
        "verification evidence: 'best-shown' — the shown passage reranked first for the pair's question (what the released get_evidence does: its answer filter is given a string and passes every passage); 'contains-answer' — the best-reranked passage among evidenceFrom's that contains the answer (ambiqa before issue 41)",
      ),
    answerSplit: z
      .enum(['whole', 'semicolon'])
      .default('whole')
      .describe("pool removal (dropAnsweredPassages): a passage leaves when it contains a DA string whole (released remove_dup_psgs) or any of its ';'-separated parts (ambiqa before issue 41)"),
    racPrompt: z
      .enum(['released', 'format-reminder'])
      .default('released')
      .describe("RAC prompt: 'released' — the instruction, demos, passages and question, as the released completion template (no format line); 'format-reminder' — closed by a line naming the DQ/DA format (ambiqa before issue 41; small models copy it into answers)"),
    verifyWording: z
      .enum(['released', 'any-reading'])
      .default('released')
      .describe("verification question: 'released' asks whether the proposed answer could be correct (the released prompt's meaning); 'any-reading' adds \"under one of its possible readings\" (ambiqa before issue 34)"),
    answerPassages: z
      .enum(['cover', 'pool'])
      .default('cover')
      .describe("answer prompt passages: 'cover' — one passage per valid pair containing its answer, then reranked (METHODS.md, toc/tree.py select_passages); 'pool' — the whole pool reranked against the ambiguous question (run_toc.py)"),
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
export type TocSearch = TocOptions['search'];
