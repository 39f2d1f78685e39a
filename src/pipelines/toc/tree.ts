/**
 * The tree's nodes: building them, which count as valid, and the dedup rules of the two searches.
 */
import type { TocNode } from './decisions';
import { normaliseAnswer, normaliseQuestion } from '../common/text';

export type QaPair = { question: string; answer: string };

/** A node that counts: not the root, not a duplicate, not skipped, not (currently) pruned. */
export function isValidNode(n: TocNode): boolean {
  return n.id !== 0 && !n.pruned && n.duplicateOf === undefined && n.skipped === undefined;
}

/** The valid nodes in BFS (creation) order. */
export function validNodes(nodes: readonly TocNode[]): TocNode[] {
  return nodes.filter(isValidNode).sort((a, b) => a.bfsOrder - b.bfsOrder);
}

/** The root: the ambiguous question, depth 0 (the released code counts it as depth 1). */
export function rootNode(question: string): TocNode {
  return { id: 0, parentId: null, depth: 0, question, answer: null, bfsOrder: 0, expanded: false, verdict: null, pruned: false, unpruned: false };
}

/** A new, not yet verified node for a DQ/DA pair of `parent`'s expansion; ids follow creation (BFS) order. */
export function childNode(id: number, parent: TocNode, pair: QaPair, callIndex: number): TocNode {
  return {
    id,
    parentId: parent.id,
    depth: parent.depth + 1,
    question: pair.question,
    answer: pair.answer,
    bfsOrder: id,
    expanded: false,
    verdict: null,
    pruned: false,
    unpruned: false,
    createdByCallIndex: callIndex,
  };
}

/** The released code's `check_unique` test: the same question, and the earlier answer contained in the new one. */
function repeats(node: TocNode, pair: QaPair): boolean {
  return normaliseQuestion(node.question) === normaliseQuestion(pair.question) && normaliseAnswer(pair.answer).includes(normaliseAnswer(node.answer ?? ''));
}

/**
 * Dedup of the `stop-when-empty` search: a pair duplicates an earlier node when the questions are
 * equal and the earlier answer is contained in the new one. CHOICE: compared after normalisation,
 * and against every earlier node (pruned ones too), so a pruned pair that comes back is not
 * verified a second time.
 */
export function findDuplicate(nodes: readonly TocNode[], pair: QaPair): TocNode | undefined {
  return nodes.find((n) => n.id !== 0 && n.duplicateOf === undefined && repeats(n, pair));
}

/**
 * Dedup of the `released` search (toc/pruning.py `check_unique`, called only while pruning is
 * on): against the *valid* nodes only, so a pair pruned before is verified again when it comes
 * back (its evidence may differ by then). CHOICE: after normalisation, and against the valid
 * nodes of the same expansion too (the code compares with the tree as it was before the
 * expansion, so a reply repeating one pair twice gets both in).
 */
export function findValidDuplicate(nodes: readonly TocNode[], pair: QaPair): TocNode | undefined {
  return nodes.find((n) => isValidNode(n) && repeats(n, pair));
}
