/**
 * One question's ToC state, shared by the steps (expand, verify, un-prune, answer) and the two
 * searches that drive them: the options, the trace recorder, the tree's nodes, the evidence pool
 * and the expansions recorded so far. A test can open a session with a scripted model and call
 * one step at a time.
 */
import type { Example } from '../../datasets/types';
import type { Reranker } from '../../retrieval/types';
import { TraceRecorder } from '../../trace/recorder';
import type { TocDecisions, TocNode } from './decisions';
import { CachingEmbedder, chooseReranker } from '../common/retrieval';
import type { DemoSelectOptions, PipelineContext } from '../types';
import type { TocOptions } from './options';
import { TocPool } from './pool';
import { rootNode } from './tree';

export interface TocSession {
  readonly o: TocOptions;
  readonly rec: TraceRecorder;
  readonly ctx: PipelineContext;
  readonly example: Example;
  readonly reranker: Reranker | null;
  readonly pool: TocPool;
  /** Every node, the root first; a node's id is its index. */
  readonly nodes: TocNode[];
  readonly expansions: TocDecisions['expansions'];
}

/** A new session for `example`: the root node, an empty pool, the reranker the options ask for. */
export function openSession(o: TocOptions, example: Example, ctx: PipelineContext, rec = new TraceRecorder('toc', example, ctx.llm)): TocSession {
  rec.options = { ...o };
  const embedder = ctx.embedder ? new CachingEmbedder(ctx.embedder) : null;
  const reranker = chooseReranker(ctx, o.reranker, embedder);
  if (o.reranker !== 'none' && !reranker) {
    rec.warn('toc.rerank', 'no reranker and no embedder in the context', 'retriever order');
  }
  return { o, rec, ctx, example, reranker, pool: new TocPool(rec, ctx, o, reranker), nodes: [rootNode(example.question)], expansions: [] };
}

/** Every answer the tree has seen (kept, pruned, duplicate or skipped). */
export function treeAnswers(s: TocSession): string[] {
  return s.nodes.filter((n) => n.answer !== null).map((n) => n.answer!);
}

/**
 * `dropOverlappingDemos` (released `remove_dup_demos`): a demo any of whose answers overlaps one
 * the tree has seen (token F1 > `demoOverlapF1`) is not shown again for this question.
 */
export function demoFilter(s: TocSession): DemoSelectOptions | undefined {
  return s.o.dropOverlappingDemos ? { excludeAnswers: treeAnswers(s), overlapF1: s.o.demoOverlapF1 } : undefined;
}
