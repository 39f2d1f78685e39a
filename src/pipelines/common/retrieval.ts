import { formatPassage, type Embedder, type Passage, type Reranker, type ScoredPassage } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';
import { dot } from './text';

/**
 * Remembers embeddings by text for the duration of one question, so passages that come back in
 * several retrievals (ToC expansions, Diva's interpretations) are embedded once.
 */
export class CachingEmbedder implements Embedder {
  private readonly cache = new Map<string, Float32Array>();

  constructor(readonly inner: Embedder) {}

  get name(): string {
    return this.inner.name;
  }

  get dimension(): number {
    return this.inner.dimension;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.cache.has(t)))];
    if (missing.length > 0) {
      const vectors = await this.inner.embed(missing);
      missing.forEach((t, i) => this.cache.set(t, vectors[i]));
    }
    return texts.map((t) => this.cache.get(t)!);
  }
}

/** Rerank by cosine similarity of sentence embeddings (METHODS.md: "cross-encoder / sentence embedder"). */
export class EmbedderReranker implements Reranker {
  readonly name: string;

  constructor(private readonly embedder: Embedder) {
    this.name = `embedder:${embedder.name}`;
  }

  async rerank(query: string, candidates: ScoredPassage[], k: number): Promise<ScoredPassage[]> {
    if (candidates.length === 0 || k <= 0) return [];
    const [q, ...vs] = await this.embedder.embed([query, ...candidates.map((c) => formatPassage(c.passage))]);
    return candidates
      .map((c, i) => ({ passage: c.passage, score: dot(q, vs[i]), i }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, k)
      .map((c, rank) => ({ passage: c.passage, score: c.score, rank }));
  }
}

/** `context`: the context's reranker, else one from its embedder; `embedder`: always the latter; `none`. */
export type RerankerChoice = 'context' | 'embedder' | 'none';

export function chooseReranker(
  ctx: PipelineContext,
  choice: RerankerChoice,
  embedder: Embedder | null,
): Reranker | null {
  if (choice === 'none') return null;
  if (choice === 'context' && ctx.reranker) return ctx.reranker;
  return embedder ? new EmbedderReranker(embedder) : null;
}

/**
 * Retrieve a pool and keep the best `keep` after reranking; both steps are recorded (the pool
 * under `purpose`, the reranked list under `purpose.rerank`). An empty retrieval is recorded as
 * a warning and returns [] — callers decide what to do without passages.
 */
export async function retrieveAndRerank(
  rec: TraceRecorder,
  ctx: PipelineContext,
  opts: { purpose: string; query: string; poolSize: number; keep: number; reranker: Reranker | null },
): Promise<{ pool: ScoredPassage[]; kept: ScoredPassage[] }> {
  const retriever = ctx.retriever!;
  const searched = rec.now();
  const pool = await retriever.search(opts.query, opts.poolSize);
  rec.recordRetrieval(opts.purpose, retriever.name, opts.query, opts.poolSize, pool, undefined, searched);
  if (pool.length === 0) {
    rec.warn(opts.purpose, `retriever ${retriever.name} returned no passages for "${opts.query}"`, 'no passages');
    return { pool, kept: [] };
  }
  if (!opts.reranker) {
    return { pool, kept: pool.slice(0, opts.keep).map((p, rank) => ({ ...p, rank })) };
  }
  const reranked = rec.now();
  const kept = await opts.reranker.rerank(opts.query, pool, opts.keep);
  rec.recordRetrieval(`${opts.purpose}.rerank`, retriever.name, opts.query, opts.keep, kept, opts.reranker.name, reranked);
  return { pool, kept };
}

/** Unique passages in first-seen order. */
export function uniquePassages(passages: Passage[]): Passage[] {
  const seen = new Set<string>();
  return passages.filter((p) => (seen.has(p.id) ? false : (seen.add(p.id), true)));
}

/** Numbered passages for a prompt's `Context:` block. */
export function formatContext(passages: Passage[]): string {
  if (passages.length === 0) return '(no passages found)';
  return passages.map((p, i) => `[${i + 1}] ${formatPassage(p)}`).join('\n');
}
