/**
 * What Tree of Clarifications decides for one question, as its trace records it: the tree's
 * nodes, each expansion, the restarts and the step pruning was switched off (released search),
 * why the search ended, and what the answer prompt was given. The schema is carried by ToC's
 * registry entry (`method.decisionsSchema`); the types derive from it.
 */
import { z } from 'zod';
import type { Trace } from '../../trace/types';

export const tocNodeSchema = z.object({
  /** `0` is the root (the ambiguous question); children get increasing ids in BFS order. */
  id: z.number(),
  parentId: z.number().nullable(),
  depth: z.number(),
  question: z.string(),
  /** Root: null. */
  answer: z.string().nullable(),
  /** Order in which the node was created (= BFS order). */
  bfsOrder: z.number(),
  /** The node's expansion (RAC call) if it was expanded. */
  expanded: z.boolean(),
  /** Evidence passage used for self-verification. */
  evidencePassageId: z.string().optional(),
  /**
   * Self-verification verdict: P(true) ≥ the `pruneThreshold` option; null when pruning was off or
   * the node is the root or was never verified.
   */
  verdict: z.boolean().nullable(),
  /**
   * P(true) the verdict thresholded: from the self-verification judge (0/1 when it fell back to
   * text), calibrated when `judgeCalibration` is on.
   */
  pTrue: z.number().optional(),
  /** With `judgeCalibration`: P(true) as the judge gave it, before calibration. */
  pTrueRaw: z.number().optional(),
  /** With `judgeCalibration`: P(true) on the content-free prompt (the judge's prior). */
  pTruePrior: z.number().optional(),
  /** Un-pruning would have restored this node, but the judge rejected it below `unpruneFloor`. */
  unpruneBlocked: z.boolean().optional(),
  /** Pruned by self-verification (after un-pruning was applied). */
  pruned: z.boolean(),
  /** Was pruned, then restored because too few nodes survived. */
  unpruned: z.boolean(),
  /** Dropped as a duplicate of an earlier node. */
  duplicateOf: z.number().optional(),
  /** Whether the evidence passage contains the node's answer (hasAnswer). */
  evidenceHasAnswer: z.boolean().optional(),
  /** LLM call (index into `llmCalls`) of the expansion that produced the node. */
  createdByCallIndex: z.number().optional(),
  /** LLM call of the node's self-verification. */
  verifyCallIndex: z.number().optional(),
  /**
   * Set when the node was neither verified nor kept because the search ended first: the valid-node
   * cap was reached mid-expansion, or the LLM-call budget left no room to verify it.
   */
  skipped: z.enum(['max-nodes', 'max-calls']).optional(),
  /**
   * Admitted unverified because the released search had switched pruning (and its dedup) off
   * (`pruningOffAtStep`); absent when pruning was on, or off from the start.
   */
  admittedWithPruningOff: z.boolean().optional(),
});
export type TocNode = z.infer<typeof tocNodeSchema>;

/**
 * Why the search ended. Both searches: `max-nodes`, `max-expansions`, `max-calls` (the safety
 * budget), `unambiguous` (`earlyExit` found at most one distinct interpretation at the root and
 * answered directly). Released search: `max-restarts` (`maxTrials` restarts of the emptied
 * queue). Stop-when-empty search: `max-trials` (consecutive failed expansions), `queue-empty`,
 * `max-depth` (the queue emptied because nodes at `maxDepth` are not queued).
 */
export const tocStopReasons = ['max-nodes', 'max-depth', 'max-trials', 'max-restarts', 'max-expansions', 'queue-empty', 'max-calls', 'unambiguous'] as const;

export const tocExpansionSchema = z.object({
  nodeId: z.number(),
  llmCallIndex: z.number(),
  newChildren: z.number(),
  failed: z.boolean(),
  reason: z.string().optional(),
  /** The expansion repeated this few-shot demo's DQs instead of clarifying the question; no node was made. */
  copiedDemoId: z.string().optional(),
  /** Released search: the loop step (1-based, the code's `n_expansions`) of this expansion. */
  step: z.number().optional(),
  /** Released search: whether pruning was on for this expansion's pairs. */
  pruning: z.boolean().optional(),
  /** Passages of this expansion's prompt that contained one of its answers and left the pool (`dropAnsweredPassages`). */
  removedPassageIds: z.array(z.string()).optional(),
  /** Candidate pairs of the reply the DQ/DA reader refused as garbled (issue 41); each is also a parse failure. Absent in older traces. */
  rejectedPairs: z.number().optional(),
  /** The reply's shape as the reader saw it: `lines` (released), `one-line` (`DQ n: …|DA n: …`), `mixed`, `none`. */
  replyShape: z.enum(['lines', 'one-line', 'mixed', 'none']).optional(),
  /** The pool held fewer than `nPassages` passages for this prompt (0: none left); the expansion went on with what there was, as the released code does. */
  poolShort: z.number().optional(),
});

export const tocDecisionsSchema = z.object({
  kind: z.literal('toc'),
  nodes: z.array(tocNodeSchema),
  expansions: z.array(tocExpansionSchema),
  /** Which search built the tree (absent in traces written before issue 34: `stop-when-empty`). */
  search: z.enum(['released', 'stop-when-empty']).optional(),
  stopReason: z.enum(tocStopReasons),
  /** Released search: loop steps taken (expansions plus popped nodes too deep to expand). */
  steps: z.number().optional(),
  /** Released search: every restart — the step at which the empty queue was refilled, and with which node ids (the root, then the valid nodes in BFS order). */
  restarts: z.array(z.object({ step: z.number(), queue: z.array(z.number()) })).optional(),
  /** Released search: the step whose expansion switched pruning off (absent when it stayed on). */
  pruningOffAtStep: z.number().optional(),
  /** Released search: nodes popped at or below `maxDepth`, not expanded, each still a step. */
  depthSkips: z.array(z.object({ step: z.number(), nodeId: z.number() })).optional(),
  /** Passages that left the pool (`dropAnsweredPassages`), in the order they left. */
  removedPassageIds: z.array(z.string()).optional(),
  /** Node ids given to the answer-generation prompt, in BFS order. */
  validNodeIds: z.array(z.number()),
  /** Passages given to the final prompt. */
  answerPassageIds: z.array(z.string()),
  /** Node ids restored by un-pruning (nearest the root first). */
  unprunedNodeIds: z.array(z.number()).optional(),
  /** Consecutive failed expansions when the search stopped. */
  failedTrials: z.number().optional(),
  /** Pruned nodes un-pruning left pruned because their P(true) was below `unpruneFloor`. */
  unpruneBlockedNodeIds: z.array(z.number()).optional(),
});
export type TocDecisions = z.infer<typeof tocDecisionsSchema>;

/** The trace's decisions when ToC wrote it; undefined for any other method's trace. */
export function tocDecisionsOf(trace: Pick<Trace, 'decisions'>): TocDecisions | undefined {
  return trace.decisions.kind === 'toc' ? (trace.decisions as TocDecisions) : undefined;
}
