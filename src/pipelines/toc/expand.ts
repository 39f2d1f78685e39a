/**
 * The expand step: retrieval-augmented clarification (RAC) of one node. Passages from the pool
 * for the node's question, kNN demos, one sampled call, the DQ/DA pairs parsed; the pairs are
 * returned, not yet nodes (the verify step decides which become nodes).
 */
import type { Passage } from '../../retrieval/types';
import type { TocNode } from './decisions';
import { checkAborted, selectDemos } from '../common/context';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { normaliseAnswer } from '../common/text';
import { readDisambiguations } from '../parsing';
import type { Demo } from '../types';
import { detectDemoCopy, type DemoCopy } from './demo-copy';
import { racPrompt, racReplyText } from './prompts';
import { demoFilter, type TocSession } from './session';
import type { QaPair } from './tree';

export interface Expansion {
  node: TocNode;
  /** The RAC call's index in the trace. */
  callIndex: number;
  /** The passages the prompt showed. */
  passages: Passage[];
  demos: Demo[];
  /** The parsed pairs; empty when nothing parsed or the reply copied a demo. */
  pairs: QaPair[];
  /** Set when the reply repeated a few-shot demo's DQs (`dropDemoCopies`); `pairs` is then empty. */
  copy: DemoCopy | null;
  /** Distinct answers among the parsed pairs (earlyExit reads it). */
  interpretations: number;
  /** Candidate pairs the reader refused (garbled: a label, an instruction or a passage inside, numbers unmatched); each is a parse failure in the trace. */
  rejected: number;
  /** The reply's shape as the reader saw it (`readDisambiguations`). */
  shape: 'lines' | 'one-line' | 'mixed' | 'none';
  /** Set when the pool held fewer than `nPassages` passages for the prompt (0: none). */
  poolShort?: number;
}

/**
 * Expand `node`: RAC with the pool's passages for its question and demos chosen by kNN on its
 * question (`demosFor: node`, released `get_example`) or on the ambiguous question. A node
 * expanded again (after a restart) draws a new sample: CHOICE — the seed is offset by how often
 * the node was expanded before, so a seeded or cached model does not replay its first reply (the
 * released code's prompt usually differs by then anyway: demos and passages have left the pools).
 * Runs as the trace span `expand`.
 */
export function expand(s: TocSession, node: TocNode): Promise<Expansion> {
  return s.rec.span('expand', { nodeId: node.id }, () => expandNode(s, node));
}

async function expandNode(s: TocSession, node: TocNode): Promise<Expansion> {
  checkAborted(s.ctx);
  const { o, rec, ctx, example } = s;
  const before = s.expansions.filter((e) => e.nodeId === node.id).length;
  node.expanded = true;
  const passages = await s.pool.forNode(node);
  // An exhausted pool is a state, not an error: the released code builds the prompt from
  // whatever `cur_passages` still holds, an empty context included (issue 41).
  const poolShort = passages.length < o.nPassages ? passages.length : undefined;
  if (poolShort !== undefined) {
    rec.warn('toc.rac', `the pool held ${poolShort} of ${o.nPassages} passages for node ${node.id}`, poolShort === 0 ? 'prompt without passages' : 'prompt with fewer passages');
  }
  const demoQuestion = o.demosFor === 'node' ? { id: example.id, question: node.question, ...(example.sourceId !== undefined ? { sourceId: example.sourceId } : {}) } : example;
  const demos = await selectDemos(rec, ctx, 'toc', demoQuestion, o.nShots, 'toc.rac.demos', demoFilter(s));
  const seed = before === 0 ? o.seed : (o.seed ?? 0) + before;
  const { texts, callIndex } = await callLlm(rec, ctx, {
    purpose: 'toc.rac',
    messages: racPrompt(demos, node.question, passages, o.racPrompt),
    temperature: o.expansionTemperature,
    maxTokens: o.expansionMaxTokens,
    // CHOICE: the tree uses only the DQ/DA pairs, so generation stops where the RAC long answer
    // would begin; the pairs are the same tokens as without the stop, at half the decoding.
    stop: [...DEMO_STOPS, '\nAnswer:'],
    topP: o.topP,
    ...(seed !== undefined ? { seed } : {}),
  });
  const reply = racReplyText(texts[0], o.racPrompt);
  const parsed = readDisambiguations(reply);
  // Every refused candidate is a parse failure of its own, so a trace shows what the model said
  // and why it did not become a node.
  for (const r of parsed.rejected) {
    rec.parseFailure('toc.rac', `garbled pair (${r.reason}): DQ "${r.question}" / DA "${r.answer}"`, reply, 'not a node');
  }
  const rejected = parsed.rejected.length;
  const shape = parsed.shape;
  const copy = o.dropDemoCopies
    ? detectDemoCopy(
        parsed.pairs.map((p) => p.question),
        [node.question, example.question],
        demos,
        o.demoCopyMargin,
      )
    : null;
  if (copy) {
    rec.warn(
      'toc.rac',
      `expansion of node ${node.id} repeats demo ${copy.demoId} (${Math.round(100 * copy.demoOverlap)}% of its DQ words ` +
        `are in the demo, ${Math.round(100 * copy.questionOverlap)}% in the question)`,
      'no nodes from this expansion',
    );
    return { node, callIndex, passages, demos, pairs: [], copy, interpretations: 0, rejected, shape, ...(poolShort !== undefined ? { poolShort } : {}) };
  }
  if (parsed.pairs.length === 0) {
    const why =
      parsed.problems.slice(0, 3).join('; ') ||
      (rejected > 0 ? `${rejected} garbled pair${rejected === 1 ? '' : 's'}` : texts[0].trim() === '' ? 'empty reply' : 'no DQ/DA lines');
    rec.parseFailure('toc.rac', `no DQ/DA pairs (${why})`, reply, 'expansion counted as failed');
  }
  const pairs = parsed.pairs.map((p) => ({ question: p.question, answer: p.answer }));
  const interpretations = new Set(pairs.map((p) => normaliseAnswer(p.answer))).size;
  return { node, callIndex, passages, demos, pairs, copy: null, interpretations, rejected, shape, ...(poolShort !== undefined ? { poolShort } : {}) };
}
