/**
 * Multi-query retrieval, Diva's retrieval diversification: retrieve for each query (the
 * pseudo-interpretations of an ambiguous question), take the union, and keep the k passages with
 * the highest mean cosine similarity to all queries, so the kept set serves every interpretation
 * rather than the one that retrieves best.
 */
import { AmbiqaError } from '../errors';
import { dot } from './vector-index';
import { formatPassage, type Embedder, type Passage, type Retriever, type ScoredPassage } from './types';
import { validateK } from './validate';

export interface MultiQueryOptions {
  /** Passages retrieved per query before the union (default 20). */
  perQueryK?: number;
  /** Stored passage vectors (e.g. DenseRetriever.vectorOf) to skip re-embedding. */
  vectorOf?: (passage: Passage) => Float32Array | undefined;
}

export class MultiQueryRetriever implements Retriever {
  readonly name: string;

  constructor(
    readonly base: Retriever,
    readonly embedder: Embedder,
    private readonly options: MultiQueryOptions = {},
  ) {
    this.name = `multi-query(${base.name})`;
  }

  /** The base engine's release (a Lucene searcher); its preflight is reached through `enginesOf` (remote/inspect.ts). */
  async close(): Promise<void> {
    await this.base.close?.();
  }

  /** A single query is the one-interpretation case. */
  search(query: string, k: number): Promise<ScoredPassage[]> {
    return this.searchMany([query], k);
  }

  async searchMany(queries: readonly string[], k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const perQuery = this.options.perQueryK ?? 20;
    validateK(perQuery, 'perQueryK');
    const cleaned = queries.map((q) => q.trim()).filter((q) => q.length > 0);
    if (cleaned.length === 0) throw new AmbiqaError('multi-query retrieval got no queries', 'pass at least one non-empty query');
    const lists = await Promise.all(cleaned.map((q) => this.base.search(q, perQuery)));
    const union = new Map<string, Passage>();
    for (const list of lists) for (const hit of list) if (!union.has(hit.passage.id)) union.set(hit.passage.id, hit.passage);
    const passages = [...union.values()];
    const queryVectors = await this.embedder.embed(cleaned);
    const stored = passages.map((p) => this.options.vectorOf?.(p));
    const missing = passages.filter((_, i) => !stored[i]);
    const fresh = missing.length ? await this.embedder.embed(missing.map(formatPassage)) : [];
    let f = 0;
    const vectors = stored.map((v) => v ?? fresh[f++]);
    const d = this.embedder.dimension;
    const scored = passages.map((passage, i) => {
      let sum = 0;
      for (const q of queryVectors) sum += dot(q, 0, vectors[i], 0, d);
      return { passage, score: sum / queryVectors.length, order: i };
    });
    scored.sort((a, b) => b.score - a.score || a.order - b.order);
    return scored.slice(0, k).map((s, rank) => ({ passage: s.passage, score: s.score, rank }));
  }
}
