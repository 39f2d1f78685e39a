/**
 * Tree of Clarifications' own analysis, registered with its pipeline entry (src/metrics/methods.ts):
 * the self-verification judge and its silver label, and the decision statistics of its trees.
 */
import type { Example } from '../../datasets/types';
import { answerF1 } from '../../metrics/answer-f1';
import type { MethodAnalysis } from '../../metrics/methods';
import { shares } from '../../metrics/decisions';
import type { LabelledJudgment } from '../../run-files';
import type { Trace } from '../../trace/types';
import type { TocDecisions } from './decisions';

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
 * the pool); all 0 for stop-when-empty trees.
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
    ...shares(decisions.map((d) => d.stopReason), 'decision_stop_', STOP_REASONS),
  };
}

export const tocAnalysis: Omit<MethodAnalysis, 'kind'> = {
  judges: [{ purpose: 'toc.verify', labels: ['True', 'False'], silverLabel: 'the node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)' }],
  labelJudgments,
  statistics,
};
