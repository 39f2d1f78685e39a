/**
 * Tree of Clarifications' own analysis, carried by its pipeline entry into the method catalog (src/metrics/methods.ts):
 * the self-verification judge and its silver label, and the decision statistics of its trees.
 */
import type { Example } from '../../datasets/types';
import { answerF1 } from '../../metrics/answer-f1';
import type { MethodAnalysis } from '../../metrics/methods';
import { shares } from '../../metrics/decisions';
import type { LabelledJudgment } from '../../run-files';
import type { Trace } from '../../trace/types';
import type { TocDecisions, TocNode } from './decisions';
import { normaliseAnswer, normaliseQuestion } from '../common/text';
import { pairFault } from '../parsing';

/** Node Answer-F1 (0–100) at or above which a ToC node counts as a correct disambiguation. */
export const TOC_ANSWER_F1_MIN = 50;

const STOP_REASONS: ReadonlyArray<TocDecisions['stopReason']> = ['max-nodes', 'max-depth', 'max-trials', 'max-restarts', 'max-expansions', 'queue-empty', 'max-calls', 'unambiguous'];

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

/** The ToC decisions of a trace (every function here is handed ToC traces only). */
const decisionsOf = (trace: Trace): TocDecisions => trace.decisions as TocDecisions;

/**
 * `toc.verify`: each node the judge scored, labelled correct when its answer matches a gold
 * disambiguation (Answer-F1 ≥ 0.5 against the short answers of any gold DQ); datasets without
 * DQs use the example's answers as one DQ. A node without an answer has no label.
 */
function labelJudgments(trace: Trace, example: Example): LabelledJudgment[] {
  const d = decisionsOf(trace);
  const gold = example.qaPairs.length > 0 ? example.qaPairs : example.answers.length > 0 ? [{ question: example.question, shortAnswers: example.answers }] : [];
  const out: LabelledJudgment[] = [];
  for (const n of d.nodes) {
    // Only nodes the judge actually scored: the root and skipped nodes have no P.
    if (n.id === 0 || n.pTrue === undefined) continue;
    const label = gold.length === 0 || n.answer === null || n.answer.trim() === '' ? null : answerF1(n.answer, gold).f1 >= TOC_ANSWER_F1_MIN;
    out.push({ purpose: 'toc.verify', p: n.pTrue, ...(n.pTrueRaw !== undefined ? { pRaw: n.pTrueRaw } : {}), label });
  }
  return out;
}

/** Tree quality of one tree (issue 41): what its valid nodes hold, and how its calls were served. */
export interface TreeQuality {
  /** Valid nodes (the answer prompt's candidates). */
  valid: number;
  /** Valid nodes whose pair the DQ/DA reader's checks refuse (`pairFault`): a label, an instruction or a passage inside. */
  garbledValid: number;
  /** Distinct (normalised question, answer) pairs among the well-formed valid nodes. */
  distinctWellFormed: number;
  /** Valid nodes repeating an earlier valid node's pair (normalised). */
  duplicateValid: number;
  /** Nodes the dedup marked duplicate (`duplicateOf`). */
  duplicateNodes: number;
  /** Candidate pairs the reader refused (never nodes; each a parse failure in the trace). */
  rejectedPairs: number;
  /** LLM calls of the question, live ones (no completion from the cache), and calls repeating an earlier call of the same question exactly (served from the cache: in-question replays). */
  calls: number;
  liveCalls: number;
  replayedCalls: number;
  /** Expansions whose prompt had fewer than `nPassages` passages (an exhausted pool). */
  poolShortExpansions: number;
}

const validOf = (nodes: readonly TocNode[]) => nodes.filter((n) => n.id !== 0 && !n.pruned && n.duplicateOf === undefined && n.skipped === undefined);

/** The tree quality of one ToC trace. */
export function treeQuality(trace: Trace): TreeQuality {
  const d = decisionsOf(trace);
  const valid = validOf(d.nodes);
  const seen = new Set<string>();
  let garbled = 0;
  let duplicateValid = 0;
  let distinct = 0;
  for (const n of valid) {
    const key = `${normaliseQuestion(n.question)}\u0000${normaliseAnswer(n.answer ?? '')}`;
    const repeat = seen.has(key);
    seen.add(key);
    if (repeat) duplicateValid += 1;
    if (pairFault(n.question, n.answer ?? '') !== null) garbled += 1;
    else if (!repeat) distinct += 1;
  }
  const requests = new Set<string>();
  let live = 0;
  let replayed = 0;
  for (const c of trace.llmCalls) {
    const key = JSON.stringify([c.purpose, c.model ?? '', c.messages, c.params]);
    const cached = c.completions.length > 0 && c.completions.every((x) => x.cacheHit);
    if (!cached) live += 1;
    else if (requests.has(key)) replayed += 1;
    requests.add(key);
  }
  return {
    valid: valid.length,
    garbledValid: garbled,
    distinctWellFormed: distinct,
    duplicateValid,
    duplicateNodes: d.nodes.filter((n) => n.duplicateOf !== undefined).length,
    rejectedPairs: d.expansions.reduce((sum, e) => sum + (e.rejectedPairs ?? 0), 0),
    calls: trace.llmCalls.length,
    liveCalls: live,
    replayedCalls: replayed,
    poolShortExpansions: d.expansions.filter((e) => e.poolShort !== undefined).length,
  };
}

/**
 * `decision_prune_rate` (share of verified nodes the judge rejected), `decision_unpruned_rate`
 * (share of those rejected nodes restored by un-pruning), `decision_unprune_blocked_rate`,
 * `decision_demo_copy_rate` (share of expansions that copied a demo), `decision_nodes_per_tree`
 * (nodes other than the root, duplicates excluded), `decision_tree_depth` (deepest node),
 * `decision_valid_nodes_per_tree`, `decision_expansions_per_tree` (RAC calls of the search), and
 * `decision_stop_<reason>` (share of questions). The released search (issue 34) adds
 * `decision_restarts_per_tree` (refills of the emptied queue), `decision_pruning_off_rate` (share
 * of trees whose search switched pruning off), `decision_admitted_unpruned_per_tree` (nodes
 * admitted unverified after that) and `decision_removed_passages_per_tree` (passages that left
 * the pool); all 0 for stop-when-empty trees. Tree quality (issue 41, `treeQuality`), per tree:
 * `decision_distinct_wellformed_pairs_per_tree`, `decision_garbled_valid_per_tree`,
 * `decision_duplicate_valid_per_tree`, `decision_duplicate_nodes_per_tree`,
 * `decision_rejected_pairs_per_tree`, `decision_llm_calls_per_tree`, `decision_live_calls_per_tree`,
 * `decision_replayed_calls_per_tree`, `decision_pool_short_expansions_per_tree`; and
 * `decision_garbled_valid_total` (over the run: the done-when bar is zero).
 */
function statistics(traces: readonly Trace[]): Record<string, number> {
  let verified = 0;
  let rejected = 0;
  let unpruned = 0;
  let blocked = 0;
  let expansions = 0;
  let copies = 0;
  const nodesPerTree: number[] = [];
  const validPerTree: number[] = [];
  const depths: number[] = [];
  const expansionsPerTree: number[] = [];
  const restarts: number[] = [];
  const pruningOff: number[] = [];
  const admittedUnpruned: number[] = [];
  const removedPassages: number[] = [];
  const decisions = traces.map(decisionsOf);
  const quality = traces.map(treeQuality);
  const perTree = (f: (q: TreeQuality) => number) => mean(quality.map(f));
  for (const d of decisions) {
    const children = d.nodes.filter((n) => n.id !== 0 && n.duplicateOf === undefined);
    nodesPerTree.push(children.length);
    validPerTree.push(children.filter((n) => !n.pruned && n.skipped === undefined).length);
    depths.push(Math.max(0, ...children.map((n) => n.depth)));
    for (const n of children) {
      if (n.verdict === null) continue;
      verified += 1;
      if (n.verdict === false) rejected += 1;
      if (n.unpruned) unpruned += 1;
      if (n.unpruneBlocked) blocked += 1;
    }
    expansions += d.expansions.length;
    copies += d.expansions.filter((e) => e.copiedDemoId !== undefined).length;
    expansionsPerTree.push(d.expansions.length);
    restarts.push(d.restarts?.length ?? 0);
    pruningOff.push(d.pruningOffAtStep !== undefined ? 1 : 0);
    admittedUnpruned.push(d.nodes.filter((n) => n.admittedWithPruningOff).length);
    removedPassages.push(d.removedPassageIds?.length ?? 0);
  }
  return {
    decision_prune_rate: verified === 0 ? 0 : rejected / verified,
    decision_unpruned_rate: rejected === 0 ? 0 : unpruned / rejected,
    decision_unprune_blocked_rate: rejected === 0 ? 0 : blocked / rejected,
    decision_demo_copy_rate: expansions === 0 ? 0 : copies / expansions,
    decision_nodes_per_tree: mean(nodesPerTree),
    decision_valid_nodes_per_tree: mean(validPerTree),
    decision_tree_depth: mean(depths),
    decision_expansions_per_tree: mean(expansionsPerTree),
    decision_restarts_per_tree: mean(restarts),
    decision_pruning_off_rate: mean(pruningOff),
    decision_admitted_unpruned_per_tree: mean(admittedUnpruned),
    decision_removed_passages_per_tree: mean(removedPassages),
    decision_distinct_wellformed_pairs_per_tree: perTree((q) => q.distinctWellFormed),
    decision_garbled_valid_per_tree: perTree((q) => q.garbledValid),
    decision_garbled_valid_total: quality.reduce((sum, q) => sum + q.garbledValid, 0),
    decision_duplicate_valid_per_tree: perTree((q) => q.duplicateValid),
    decision_duplicate_nodes_per_tree: perTree((q) => q.duplicateNodes),
    decision_rejected_pairs_per_tree: perTree((q) => q.rejectedPairs),
    decision_llm_calls_per_tree: perTree((q) => q.calls),
    decision_live_calls_per_tree: perTree((q) => q.liveCalls),
    decision_replayed_calls_per_tree: perTree((q) => q.replayedCalls),
    decision_pool_short_expansions_per_tree: perTree((q) => q.poolShortExpansions),
    ...shares(decisions.map((d) => d.stopReason), 'decision_stop_', STOP_REASONS),
  };
}

export const tocAnalysis: Omit<MethodAnalysis, 'kind'> = {
  judges: [{ purpose: 'toc.verify', labels: ['True', 'False'], silverLabel: 'the node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)' }],
  labelJudgments,
  statistics,
};
