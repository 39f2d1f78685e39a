/**
 * The verify step: an expansion's pairs become child nodes — deduplicated, and (while pruning is
 * on) each judged against one evidence passage (self-verification); a pair judged below
 * `pruneThreshold` is a pruned node, the others are valid.
 */
import type { TocNode } from './decisions';
import { passageHasAnswer } from '../common/answers';
import { CONTENT_FREE, contentFreePassage, judgeCalibrated, priorCallsNeeded } from '../common/judge';
import { verifyPrompt } from './prompts';
import type { TocSession } from './session';
import { childNode, findDuplicate, findValidDuplicate, isValidNode, type QaPair } from './tree';

/**
 * How pairs are admitted. `dedup`: against every earlier node (`stop-when-empty`), against the
 * valid nodes (released `check_unique`), or not at all (the released code once pruning is off).
 * `verify`: self-verification on or off. `pruningOff`: the pairs are admitted because the search
 * switched pruning off (recorded on each node as `admittedWithPruningOff`).
 */
export interface AdmitRule {
  dedup: 'every-node' | 'valid-nodes' | 'none';
  verify: boolean;
  pruningOff?: boolean;
}

export interface Admitted {
  /** Every node made from the pairs, in order (duplicates, skipped and pruned ones included). */
  children: TocNode[];
  /** The valid ones among them. */
  valid: TocNode[];
  /** Why the verification budget cut the batch, when it did. */
  budgetCut?: string;
}

/**
 * Make `parent`'s pairs (from the RAC call `callIndex`) child nodes under `rule`, and add them to
 * the tree; runs as the trace span `verify`.
 */
export function admitPairs(s: TocSession, parent: TocNode, pairs: readonly QaPair[], callIndex: number, rule: AdmitRule): Promise<Admitted> {
  return s.rec.span('verify', { nodeId: parent.id, pairs: pairs.length, judged: rule.verify }, () => admit(s, parent, pairs, callIndex, rule));
}

async function admit(s: TocSession, parent: TocNode, pairs: readonly QaPair[], callIndex: number, rule: AdmitRule): Promise<Admitted> {
  const { o, rec, nodes } = s;
  const children: TocNode[] = [];
  let budgetCut: string | undefined;
  for (const pair of pairs) {
    const child = childNode(nodes.length, parent, pair, callIndex);
    children.push(child);
    const dup = rule.dedup === 'every-node' ? findDuplicate(nodes, pair) : rule.dedup === 'valid-nodes' ? findValidDuplicate(nodes, pair) : undefined;
    if (dup) {
      child.duplicateOf = dup.id;
      nodes.push(child);
      continue;
    }
    if (nodes.filter(isValidNode).length >= o.maxNodes) {
      // CHOICE: stop verifying once the cap is reached; the answer takes the first maxNodes valid
      // nodes in BFS order (released `_get_tree`), so the rest of the batch could not reach it.
      child.skipped = 'max-nodes';
      nodes.push(child);
      continue;
    }
    if (rule.verify) {
      // The judgment (plus, the first time, its content-free prior when calibrating) and the
      // final answer must fit.
      const judgeCalls = 1 + priorCallsNeeded(rec, 'toc.verify', o.judgeCalibration);
      if (rec.callCount + judgeCalls + 1 > o.maxLlmCalls) {
        child.skipped = 'max-calls';
        nodes.push(child);
        budgetCut = 'call budget reached before verification';
        continue;
      }
      await verifyNode(s, child);
    } else if (rule.pruningOff) {
      child.admittedWithPruningOff = true;
    }
    nodes.push(child);
  }
  return { children, valid: children.filter(isValidNode), ...(budgetCut ? { budgetCut } : {}) };
}

/**
 * Self-verification of one node: could its answer be a correct answer to the *original*
 * question, given the evidence passage? Sets the node's evidence, P(true), verdict and pruned.
 * The released code keeps a node only when "True" appears in the reply; an unreadable text reply
 * is likewise P(true) = 0, but counted as a parse failure.
 */
export async function verifyNode(s: TocSession, child: TocNode): Promise<void> {
  const { o, rec, ctx, example } = s;
  const answer = child.answer ?? '';
  const evidence = await s.pool.evidence({ question: child.question, answer });
  if (evidence) {
    child.evidencePassageId = evidence.id;
    child.evidenceHasAnswer = passageHasAnswer(evidence, answer);
  }
  const v = await judgeCalibrated(rec, ctx, {
    purpose: 'toc.verify',
    messages: verifyPrompt(example.question, answer, evidence, o.verifyDemos, o.verifyWording),
    // Content-free twin: question, answer and passage replaced (no passage stays no passage).
    contentFree: () => ({ messages: verifyPrompt(CONTENT_FREE, CONTENT_FREE, evidence ? contentFreePassage() : null, o.verifyDemos, o.verifyWording) }),
    labels: ['True', 'False'],
    calibration: o.judgeCalibration,
    fallback: 'False (pruned)',
  });
  child.verifyCallIndex = v.callIndex;
  child.pTrue = v.p;
  if (v.pPrior !== undefined) {
    child.pTrueRaw = v.pRaw;
    child.pTruePrior = v.pPrior;
  }
  child.verdict = v.p >= o.pruneThreshold;
  child.pruned = !child.verdict;
}

/** Why an expansion added no valid node, for its decision record. */
export function noValidReason(children: readonly TocNode[]): string {
  if (children.length === 0) return 'no pairs parsed';
  const count = (f: (n: TocNode) => boolean) => children.filter(f).length;
  return (
    `${count((n) => n.duplicateOf !== undefined)} duplicate, ${count((n) => n.pruned)} pruned, ` +
    `${count((n) => n.skipped !== undefined)} skipped`
  );
}
