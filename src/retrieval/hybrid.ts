/**
 * Weighted reciprocal-rank fusion (Cormack et al., 2009) of any retrievers:
 *
 *   score(d) = Σ_i w_i / (c + rank_i(d))      rank 1-based; a list that misses d adds nothing
 *
 * Each retriever contributes its top `depth` passages. RRF needs no score calibration, which is
 * why it is the usual way to join BM25 and dense results. Ties go to the passage with the better
 * best rank, then to the earlier retriever's order.
 */
import { AmbiqaError } from '../errors';
import type { Passage, Retriever, ScoredPassage } from './types';
import { validateK } from './validate';

export interface HybridOptions {
  /** One weight per retriever (default all 1). */
  weights?: number[];
  /** RRF's constant c (default 60, the paper's). */
  rrfK?: number;
  /** Passages taken from each retriever (default max(k, 100)). */
  depth?: number;
}

/** Fuse ranked lists with weighted RRF; exported on its own for traces and tests. */
export function reciprocalRankFusion(lists: readonly ScoredPassage[][], weights: readonly number[], c = 60): ScoredPassage[] {
  const fused = new Map<string, { passage: Passage; score: number; best: number; order: number }>();
  let order = 0;
  lists.forEach((list, i) => {
    const w = weights[i] ?? 1;
    list.forEach((hit, r) => {
      const entry = fused.get(hit.passage.id);
      const add = w / (c + r + 1);
      if (entry) {
        entry.score += add;
        entry.best = Math.min(entry.best, r);
      } else {
        fused.set(hit.passage.id, { passage: hit.passage, score: add, best: r, order: order++ });
      }
    });
  });
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.best - b.best || a.order - b.order)
    .map((e, rank) => ({ passage: e.passage, score: e.score, rank }));
}

export class HybridRetriever implements Retriever {
  readonly name: string;
  private readonly weights: number[];

  constructor(
    readonly retrievers: Retriever[],
    private readonly options: HybridOptions = {},
  ) {
    if (retrievers.length === 0) throw new AmbiqaError('a hybrid retriever needs at least one retriever', 'list retrievers to fuse');
    this.weights = options.weights ?? retrievers.map(() => 1);
    if (this.weights.length !== retrievers.length || this.weights.some((w) => !(w >= 0))) {
      throw new AmbiqaError(
        `hybrid weights ${JSON.stringify(this.weights)} do not match the ${retrievers.length} retrievers`,
        'give one non-negative weight per retriever',
      );
    }
    const parts = retrievers.map((r, i) => (this.weights[i] === 1 ? r.name : `${this.weights[i]}*${r.name}`));
    this.name = `hybrid(${parts.join('+')})`;
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const depth = Math.max(k, this.options.depth ?? 100);
    const lists = await Promise.all(this.retrievers.map((r) => r.search(query, depth)));
    return reciprocalRankFusion(lists, this.weights, this.options.rrfK ?? 60).slice(0, k);
  }

  /** Each engine outside the process (a Lucene searcher) released with the fusion; its preflight is reached through `enginesOf` (remote/inspect.ts). */
  async close(): Promise<void> {
    await Promise.all(this.retrievers.map((r) => r.close?.()));
  }
}
