/**
 * ToC's two tree searches, each a loop over the steps (expand, verify, un-prune).
 *
 * `released` (default) follows the main loop of the authors' run_toc.py: the queue starts as
 * [root]; each step counts as an expansion; an empty queue is refilled with the root and every
 * valid node (a restart) and the step goes on; the oldest node is popped and, unless too deep,
 * expanded; with `pruning` on, its pairs are verified and the valid ones queued, whatever their
 * depth. The search ends at `maxNodes` valid nodes, `maxTrials` restarts or `maxExpansions` steps;
 * an expansion that keeps nothing after `maxTrials` restarts or `pruningOffAfter` steps switches
 * pruning off and resets the restart count. It never ends on an empty queue.
 *
 * `stop-when-empty` is ambiqa's search before issue 34: breadth-first, nodes at `maxDepth` never
 * queued, ending when the queue empties, after `maxTrials` consecutive expansions without a
 * valid node, or at `maxNodes` / `maxExpansions`.
 */
import type { TocDecisions, TocNode } from './decisions';
import { checkAborted } from '../common/context';
import { normaliseAnswer } from '../common/text';
import { expand, type Expansion } from './expand';
import type { TocSession } from './session';
import { isValidNode, validNodes } from './tree';
import { switchesPruningOff } from './unprune';
import { admitPairs, noValidReason, type Admitted } from './verify';

export interface SearchOutcome {
  stopReason: TocDecisions['stopReason'];
  /** Released search: loop steps taken (the code's `n_expansions`). */
  steps?: number;
  restarts?: NonNullable<TocDecisions['restarts']>;
  pruningOffAtStep?: number;
  depthSkips?: NonNullable<TocDecisions['depthSkips']>;
  /** Stop-when-empty search: consecutive failed expansions when it stopped. */
  failedTrials?: number;
}

type ExpansionRecord = TocDecisions['expansions'][number];

/**
 * `earlyExit`: a root expansion whose pairs all give one answer (or one pair) found no ambiguity
 * to clarify; its first pair goes straight to the answer, unverified, and the search stops.
 */
function earlyExit(s: TocSession, e: Expansion): boolean {
  if (!s.o.earlyExit || e.node.id !== 0 || e.pairs.length === 0 || e.interpretations > 1) return false;
  const pair = e.pairs[0]!;
  s.nodes.push({
    id: s.nodes.length,
    parentId: 0,
    depth: 1,
    question: pair.question,
    answer: pair.answer,
    bfsOrder: s.nodes.length,
    expanded: false,
    verdict: null,
    pruned: false,
    unpruned: false,
    createdByCallIndex: e.callIndex,
  });
  s.expansions.push({ nodeId: 0, llmCallIndex: e.callIndex, newChildren: 1, failed: false, reason: 'one interpretation: early exit' });
  return true;
}

/** The decision record of an expansion and what it added. */
function expansionRecord(e: Expansion, admitted: Admitted | null, extra: Partial<ExpansionRecord> = {}): ExpansionRecord {
  const valid = admitted?.valid.length ?? 0;
  const reason = e.copy ? `copied demo ${e.copy.demoId}` : valid === 0 ? (admitted?.budgetCut ?? noValidReason(admitted?.children ?? [])) : admitted?.budgetCut;
  return {
    nodeId: e.node.id,
    llmCallIndex: e.callIndex,
    newChildren: valid,
    failed: valid === 0,
    ...(reason !== undefined ? { reason } : {}),
    ...(e.copy ? { copiedDemoId: e.copy.demoId } : {}),
    ...(e.rejected > 0 ? { rejectedPairs: e.rejected } : {}),
    replyShape: e.shape,
    ...(e.poolShort !== undefined ? { poolShort: e.poolShort } : {}),
    ...extra,
  };
}

/** The answers an expansion proposed (every parsed pair, before verification), for the pool's removal. */
function proposedAnswers(e: Expansion): string[] {
  return e.pairs.map((p) => p.answer).filter((a) => normaliseAnswer(a) !== '');
}

/**
 * One loop step on `node` as a span (`node <id>`): its expansion and verification run inside it,
 * so MLflow shows node → expand → verify with the calls and retrievals of each.
 */
function nodeSpan<T>(s: TocSession, node: TocNode, attributes: Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T> {
  return s.rec.span(`node ${node.id}`, { nodeId: node.id, depth: node.depth, question: node.question, ...attributes }, fn);
}

export async function releasedSearch(s: TocSession): Promise<SearchOutcome> {
  const { o, rec, nodes } = s;
  let queue: TocNode[] = [nodes[0]!];
  let step = 0;
  let restarts = 0;
  let pruning = o.pruning;
  const restartLog: NonNullable<TocDecisions['restarts']> = [];
  const depthSkips: NonNullable<TocDecisions['depthSkips']> = [];
  let pruningOffAtStep: number | undefined;
  const outcome = (stopReason: TocDecisions['stopReason']): SearchOutcome => ({
    stopReason,
    steps: step,
    restarts: restartLog,
    depthSkips,
    ...(pruningOffAtStep !== undefined ? { pruningOffAtStep } : {}),
  });

  for (;;) {
    checkAborted(s.ctx);
    if (nodes.filter(isValidNode).length >= o.maxNodes) return outcome('max-nodes');
    if (restarts >= o.maxTrials) return outcome('max-restarts');
    if (step >= o.maxExpansions) return outcome('max-expansions');
    step += 1;
    if (queue.length === 0) {
      queue = [nodes[0]!, ...validNodes(nodes)];
      restarts += 1;
      restartLog.push({ step, queue: queue.map((n) => n.id) });
    }
    const node = queue.shift()!;
    // run_toc.py: `if cur_node.depth > args.max_depth: continue` (its root has depth 1); the
    // step still counts.
    if (node.depth >= o.maxDepth) {
      depthSkips.push({ step, nodeId: node.id });
      continue;
    }
    // One RAC call now and the final answer later must both fit the budget.
    if (rec.callCount + 2 > o.maxLlmCalls) return outcome('max-calls');
    const pruningNow = pruning;
    const admitted = await nodeSpan(s, node, { step, pruning: pruningNow }, async () => {
      const e = await expand(s, node);
      if (earlyExit(s, e)) return null;
      const removed = o.dropAnsweredPassages && !e.copy ? s.pool.removeAnswered(e.passages, proposedAnswers(e)) : [];
      const admitted = await admitPairs(s, node, e.pairs, e.callIndex, {
        dedup: pruningNow ? 'valid-nodes' : 'none',
        verify: pruningNow,
        pruningOff: o.pruning && !pruningNow,
      });
      s.expansions.push(
        expansionRecord(e, admitted, { step, pruning: pruningNow, ...(removed.length > 0 ? { removedPassageIds: removed } : {}) }),
      );
      return admitted;
    });
    if (admitted === null) return outcome('unambiguous');
    queue.push(...admitted.valid);
    if (switchesPruningOff({ pruning, restarts, step }, admitted.valid.length, o)) {
      pruning = false;
      restarts = 0;
      pruningOffAtStep = step;
    }
  }
}

export async function stopWhenEmptySearch(s: TocSession): Promise<SearchOutcome> {
  const { o, rec, nodes } = s;
  const queue: TocNode[] = [nodes[0]!];
  let failures = 0;
  let expansionCount = 0;
  let depthLimited = false;
  const outcome = (stopReason: TocDecisions['stopReason']): SearchOutcome => ({ stopReason, failedTrials: failures });

  for (;;) {
    checkAborted(s.ctx);
    if (nodes.filter(isValidNode).length >= o.maxNodes) return outcome('max-nodes');
    if (failures >= o.maxTrials) return outcome('max-trials');
    if (expansionCount >= o.maxExpansions) return outcome('max-expansions');
    if (queue.length === 0) return outcome(depthLimited ? 'max-depth' : 'queue-empty');
    if (rec.callCount + 2 > o.maxLlmCalls) return outcome('max-calls');
    const node = queue.shift()!;
    expansionCount += 1;
    const result = await nodeSpan(s, node, { step: expansionCount }, async () => {
      const e = await expand(s, node);
      if (earlyExit(s, e)) return 'unambiguous' as const;
      if (e.copy) {
        s.expansions.push(expansionRecord(e, null));
        return 'copy' as const;
      }
      const removed = o.dropAnsweredPassages ? s.pool.removeAnswered(e.passages, proposedAnswers(e)) : [];
      const admitted = await admitPairs(s, node, e.pairs, e.callIndex, { dedup: 'every-node', verify: o.pruning });
      s.expansions.push(expansionRecord(e, admitted, removed.length > 0 ? { removedPassageIds: removed } : {}));
      return admitted;
    });
    if (result === 'unambiguous') return outcome('unambiguous');
    if (result === 'copy') {
      failures += 1;
      continue;
    }
    for (const child of result.valid) {
      if (child.depth < o.maxDepth) queue.push(child);
      else depthLimited = true;
    }
    failures = result.valid.length === 0 ? failures + 1 : 0;
  }
}
