/**
 * The un-prune step, in its two forms.
 *
 * - The released search's: once an expansion's pairs are all pruned after `maxTrials` restarts or
 *   `pruningOffAfter` loop steps, pruning (and its dedup) is switched off for the rest of the
 *   question and the restart count reset (run_toc.py main loop), so the tree still fills up. This
 *   is the released code's whole answer to "too few nodes survive"; it has no restoring step.
 * - The restore after the search (METHODS.md step 3, the paper's "un-prune in breadth-first order
 *   until enough remain"): pruned nodes nearest the root first, until `minValidNodes` are valid,
 *   never one the judge rejected with confidence (P(true) below `unpruneFloor`). It runs after
 *   either search. CHOICE: kept after the released search too, where it acts only on a tree that
 *   still has fewer than `minValidNodes` valid nodes — rare, since once pruning is switched off
 *   every pair is admitted; `minValidNodes: 0` gives the released code's behaviour exactly.
 */
import type { TocNode } from './decisions';
import type { TocOptions } from './options';
import type { TocSession } from './session';
import { isValidNode } from './tree';

/** The released search's loop state that the switch reads. */
export interface PruningState {
  /** Pruning is still on (the code's `do_pruning`). */
  pruning: boolean;
  /** Restarts since the search began or pruning was last reset (the code's `n_restarts`). */
  restarts: number;
  /** Loop steps so far, this one included (the code's `n_expansions`). */
  step: number;
}

/**
 * Whether this step switches pruning off: pruning is on, the step's expansion added no valid
 * node, and `maxTrials` restarts or `pruningOffAfter` steps have passed. (run_toc.py: `if
 * do_pruning: if n_restarts >= max_trials or n_expansions >= 10`, reached only when no pair is left.)
 */
export function switchesPruningOff(state: PruningState, addedValid: number, o: Pick<TocOptions, 'maxTrials' | 'pruningOffAfter'>): boolean {
  return state.pruning && addedValid === 0 && (state.restarts >= o.maxTrials || state.step >= o.pruningOffAfter);
}

export interface Restored {
  unprunedNodeIds: number[];
  unpruneBlockedNodeIds: number[];
}

/**
 * Restore pruned nodes nearest the root first until `minValidNodes` are valid. A text-mode
 * verdict is 0 or 1 and says nothing about confidence, so the floor applies to probability
 * judgments only.
 */
export function restorePruned(s: TocSession): Restored {
  const { o, rec, nodes } = s;
  const out: Restored = { unprunedNodeIds: [], unpruneBlockedNodeIds: [] };
  const validCount = () => nodes.filter(isValidNode).length;
  if (!o.pruning || validCount() >= o.minValidNodes) return out;
  const candidates = nodes
    .filter((n: TocNode) => n.pruned && n.verdict === false && n.duplicateOf === undefined && n.skipped === undefined)
    .sort((a, b) => a.depth - b.depth || a.bfsOrder - b.bfsOrder);
  for (const n of candidates) {
    if (validCount() >= o.minValidNodes) break;
    const confident = n.verifyCallIndex !== undefined && rec.llmCalls[n.verifyCallIndex]?.judge?.mode === 'probability';
    if (confident && (n.pTrue ?? 0) < o.unpruneFloor) {
      n.unpruneBlocked = true;
      out.unpruneBlockedNodeIds.push(n.id);
      continue;
    }
    n.pruned = false;
    n.unpruned = true;
    out.unprunedNodeIds.push(n.id);
  }
  return out;
}
