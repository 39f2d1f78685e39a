/**
 * A Tree of Clarifications trace drawn as a node-link diagram: the ambiguous question at the top,
 * each clarification (DQ → answer) below its parent, colour by what happened to the node (kept
 * and used for the answer, kept, pruned by self-verification, restored by un-pruning, admitted
 * unverified after the released search switched pruning off, dropped as a duplicate). Children
 * of an expansion made after a restart of the emptied queue hang on dashed edges; the caption
 * names the restarts and the step pruning was switched off. Hovering shows the question, the
 * answer, the verdict and the evidence passage. Valid nodes whose pair is garbled or repeats an
 * earlier valid pair get their own marks, and the caption gives the tree quality (issue 41).
 */
import { AmbiqaError } from '../../errors';
import type { Trace } from '../../trace/types';
import { tocDecisionsOf, type TocDecisions, type TocNode } from './decisions';
import { treeQuality, type TreeQuality } from './analysis';
import { isValidNode } from './tree';
import { normaliseAnswer, normaliseQuestion } from '../common/text';
import { pairFault } from '../parsing';
import { plotlyText, truncate, wrapForHover } from '../../plots/text';
import { baseLayout, colors, type Figure, type PlotlyTrace } from '../../plots/types';

export type NodeStatus = 'root' | 'used in answer' | 'kept' | 'restored' | 'admitted, pruning off' | 'pruned' | 'duplicate' | 'garbled (valid)' | 'repeats a valid node';

export function nodeStatus(node: TocNode, decisions: TocDecisions, flagged?: { garbled: ReadonlySet<number>; repeated: ReadonlySet<number> }): NodeStatus {
  // A valid node whose pair is garbled or repeats an earlier valid pair is shown as such (issue
  // 41), so a tree counted with such nodes does not look healthy.
  if (flagged?.garbled.has(node.id)) return 'garbled (valid)';
  if (flagged?.repeated.has(node.id)) return 'repeats a valid node';
  if (node.parentId === null) return 'root';
  if (node.duplicateOf !== undefined) return 'duplicate';
  if (node.pruned) return 'pruned';
  if (node.admittedWithPruningOff) return 'admitted, pruning off';
  if (decisions.validNodeIds.includes(node.id)) return node.unpruned ? 'restored' : 'used in answer';
  return node.unpruned ? 'restored' : 'kept';
}

const STATUS_STYLE: Record<NodeStatus, { color: string; symbol: string }> = {
  root: { color: '#333333', symbol: 'square' },
  'used in answer': { color: colors.correct, symbol: 'circle' },
  kept: { color: '#66a61e', symbol: 'circle-open' },
  restored: { color: colors.accent, symbol: 'diamond' },
  'admitted, pruning off': { color: '#7570b3', symbol: 'triangle-up' },
  pruned: { color: colors.incorrect, symbol: 'x' },
  duplicate: { color: '#999999', symbol: 'circle-open-dot' },
  'garbled (valid)': { color: '#e7298a', symbol: 'star' },
  'repeats a valid node': { color: '#a6761d', symbol: 'hexagon-open' },
};

export interface NodePosition {
  id: number;
  x: number;
  y: number;
}

/**
 * Tidy layout: leaves take consecutive x slots in BFS order, a parent sits over the middle of its
 * children, y = −depth. Nodes whose parent is missing hang from the root.
 */
export function layoutTree(nodes: readonly TocNode[]): Map<number, NodePosition> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const root = nodes.find((n) => n.parentId === null);
  if (!root) throw new AmbiqaError('ToC trace has no root node', 'the trace must contain node 0 with parentId null');
  const children = new Map<number, TocNode[]>();
  for (const n of nodes) {
    if (n === root) continue;
    const parent = n.parentId !== null && byId.has(n.parentId) ? n.parentId : root.id;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent)!.push(n);
  }
  for (const list of children.values()) list.sort((a, b) => a.bfsOrder - b.bfsOrder || a.id - b.id);
  const positions = new Map<number, NodePosition>();
  let nextLeaf = 0;
  const place = (node: TocNode, depth: number, seen: Set<number>): number => {
    seen.add(node.id);
    const kids = (children.get(node.id) ?? []).filter((k) => !seen.has(k.id));
    let x: number;
    if (kids.length === 0) x = nextLeaf++;
    else {
      const xs = kids.map((k) => place(k, depth + 1, seen));
      x = (Math.min(...xs) + Math.max(...xs)) / 2;
    }
    positions.set(node.id, { id: node.id, x, y: -depth });
    return x;
  };
  place(root, 0, new Set());
  return positions;
}

/** The loop step of the expansion that made each node (released search; absent for stop-when-empty trees). */
function stepOfNode(decisions: TocDecisions): Map<number, number> {
  const stepOfCall = new Map(decisions.expansions.flatMap((e) => (e.step !== undefined ? [[e.llmCallIndex, e.step] as const] : [])));
  const out = new Map<number, number>();
  for (const n of decisions.nodes) {
    const step = n.createdByCallIndex !== undefined ? stepOfCall.get(n.createdByCallIndex) : undefined;
    if (step !== undefined) out.set(n.id, step);
  }
  return out;
}

/** Ids of the nodes made by an expansion at or after the first restart of the emptied queue. */
export function nodesAfterRestart(decisions: TocDecisions): Set<number> {
  const first = decisions.restarts?.[0]?.step;
  if (first === undefined) return new Set();
  return new Set([...stepOfNode(decisions)].filter(([, step]) => step >= first).map(([id]) => id));
}

/** The caption's account of the search: stop reason, restarts, when pruning was switched off. */
export function searchSummary(decisions: TocDecisions, quality?: TreeQuality): string {
  const parts = [`stop: ${decisions.stopReason}`];
  const restarts = decisions.restarts ?? [];
  if (restarts.length > 0) parts.push(`${restarts.length} restart${restarts.length === 1 ? '' : 's'} (step ${restarts.map((r) => r.step).join(', ')})`);
  if (decisions.pruningOffAtStep !== undefined) parts.push(`pruning off after step ${decisions.pruningOffAtStep}`);
  parts.push(`${decisions.validNodeIds.length} nodes used`, `${decisions.expansions.length} expansions`);
  if (quality) {
    parts.push(
      `${quality.distinctWellFormed} distinct well-formed pairs`,
      ...(quality.garbledValid > 0 ? [`${quality.garbledValid} garbled valid`] : []),
      ...(quality.duplicateValid > 0 ? [`${quality.duplicateValid} repeated valid`] : []),
      ...(quality.rejectedPairs > 0 ? [`${quality.rejectedPairs} refused by the reader`] : []),
      `calls ${quality.liveCalls} live / ${quality.replayedCalls} replayed`,
    );
  }
  return parts.join(' · ');
}

export function tocTrace(trace: Trace): TocDecisions {
  const decisions = tocDecisionsOf(trace);
  if (!decisions) {
    throw new AmbiqaError(`trace of ${trace.questionId} is a ${trace.pipeline} trace, not a ToC one`, 'pick a trace from a run of the `toc` pipeline');
  }
  return decisions;
}

export function clarificationTreeFigure(trace: Trace, options: { title?: string; labelChars?: number } = {}): Figure {
  const decisions = tocTrace(trace);
  const nodes = decisions.nodes;
  const pos = layoutTree(nodes);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const afterRestart = nodesAfterRestart(decisions);
  const flagged = flaggedNodes(decisions);
  const quality = treeQuality(trace);
  const data: PlotlyTrace[] = [];
  for (const restarted of [false, true]) {
    const edgeX: Array<number | null> = [];
    const edgeY: Array<number | null> = [];
    for (const n of nodes) {
      const p = pos.get(n.id);
      const parentPos = n.parentId !== null ? pos.get(n.parentId) : undefined;
      if (!p || !parentPos || n.parentId === null || afterRestart.has(n.id) !== restarted) continue;
      edgeX.push(parentPos.x, p.x, null);
      edgeY.push(parentPos.y, p.y, null);
    }
    if (restarted && edgeX.length === 0) continue;
    data.push({
      type: 'scatter',
      mode: 'lines',
      name: restarted ? 'clarifies (after a restart)' : 'clarifies',
      x: edgeX,
      y: edgeY,
      line: { color: restarted ? '#7570b3' : '#bbbbbb', width: 1.5, ...(restarted ? { dash: 'dash' } : {}) },
      hoverinfo: 'skip',
      showlegend: restarted,
    });
  }
  const statuses: NodeStatus[] = ['root', 'used in answer', 'kept', 'restored', 'admitted, pruning off', 'pruned', 'duplicate', 'garbled (valid)', 'repeats a valid node'];
  const labelChars = options.labelChars ?? 28;
  for (const status of statuses) {
    const group = nodes.filter((n) => nodeStatus(n, decisions, flagged) === status && pos.has(n.id));
    if (group.length === 0) continue;
    const style = STATUS_STYLE[status];
    data.push({
      type: 'scatter',
      mode: 'markers+text',
      name: status,
      x: group.map((n) => pos.get(n.id)!.x),
      y: group.map((n) => pos.get(n.id)!.y),
      text: group.map((n) => plotlyText(truncate(n.parentId === null ? n.question : (n.answer ?? ''), labelChars))),
      textposition: 'bottom center',
      hovertext: group.map((n) => hoverFor(n, byId, decisions, afterRestart)),
      hoverinfo: 'text',
      customdata: group.map((n) => n.id),
      marker: { size: status === 'root' ? 18 : 14, color: style.color, symbol: style.symbol, line: { width: 2, color: style.color } },
    });
  }
  const depth = Math.max(0, ...nodes.map((n) => n.depth));
  const width = Math.max(1, ...[...pos.values()].map((p) => p.x));
  return {
    data,
    layout: baseLayout(options.title ?? 'Clarification tree', {
      xaxis: { visible: false, range: [-0.8, width + 0.8] },
      yaxis: { visible: false, range: [-depth - 0.6, 0.5] },
      legend: { orientation: 'h', y: -0.05, x: 0 },
      annotations: [
        {
          text: searchSummary(decisions, quality),
          xref: 'paper', yref: 'paper', x: 1, y: 1.04, xanchor: 'right', showarrow: false, font: { size: 11, color: colors.neutral },
        },
      ],
    }, options.title ? undefined : plotlyText(truncate(trace.question, 90))),
  };
}

/** Valid nodes whose pair is garbled (`pairFault`) or repeats an earlier valid node's pair. */
export function flaggedNodes(decisions: TocDecisions): { garbled: Set<number>; repeated: Set<number> } {
  const garbled = new Set<number>();
  const repeated = new Set<number>();
  const seen = new Set<string>();
  for (const n of decisions.nodes) {
    if (!isValidNode(n)) continue;
    if (pairFault(n.question, n.answer ?? '') !== null) garbled.add(n.id);
    const key = `${normaliseQuestion(n.question)}\u0000${normaliseAnswer(n.answer ?? '')}`;
    if (seen.has(key)) repeated.add(n.id);
    seen.add(key);
  }
  return { garbled, repeated };
}

function hoverFor(node: TocNode, byId: Map<number, TocNode>, decisions: TocDecisions, afterRestart: ReadonlySet<number>): string {
  const lines = [`<b>${node.parentId === null ? 'ambiguous question' : `node ${node.id} (depth ${node.depth})`}</b>`, wrapForHover(node.question)];
  if (node.answer !== null) lines.push(`<b>answer:</b> ${wrapForHover(node.answer)}`);
  if (node.verdict !== null) lines.push(`self-verification: ${node.verdict ? 'True' : 'False'}${node.unpruned ? ' (restored)' : ''}`);
  if (node.admittedWithPruningOff) {
    lines.push(`admitted unverified: pruning off after step ${decisions.pruningOffAtStep ?? '?'}${decisions.validNodeIds.includes(node.id) ? ' · used in the answer' : ''}`);
  }
  if (afterRestart.has(node.id)) lines.push('made after a restart of the emptied queue');
  if (node.evidencePassageId) lines.push(`evidence: ${plotlyText(node.evidencePassageId)}`);
  const fault = node.answer !== null ? pairFault(node.question, node.answer) : null;
  if (fault !== null) lines.push(`<b>garbled:</b> ${fault}`);
  if (node.duplicateOf !== undefined) {
    const of = byId.get(node.duplicateOf);
    lines.push(`duplicate of node ${node.duplicateOf}${of ? `: ${wrapForHover(truncate(of.question, 60))}` : ''}`);
  }
  return lines.join('<br>');
}
