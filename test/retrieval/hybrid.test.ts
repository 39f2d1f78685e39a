import { describe, expect, it } from 'vitest';
import { HybridRetriever, reciprocalRankFusion } from '../../src/retrieval/hybrid';
import type { Passage, Retriever, ScoredPassage } from '../../src/retrieval/types';

const p = (id: string): Passage => ({ id, title: id, text: id });
const list = (...ids: string[]): ScoredPassage[] => ids.map((id, rank) => ({ passage: p(id), score: 100 - rank, rank }));

/** A retriever that returns a fixed ranking, whatever the query. */
class Fixed implements Retriever {
  constructor(
    readonly name: string,
    private readonly ids: string[],
  ) {}
  async search(_q: string, k: number) {
    return list(...this.ids).slice(0, k);
  }
}

describe('reciprocal-rank fusion', () => {
  it('orders by Σ w/(c + rank) with 1-based ranks', () => {
    // c = 60. a: 1/61 + 1/63; b: 1/62 + 1/61; c: 1/63; d: 1/62.
    const fused = reciprocalRankFusion([list('a', 'b', 'c'), list('b', 'd', 'a')], [1, 1], 60);
    expect(fused.map((f) => f.passage.id)).toEqual(['b', 'a', 'd', 'c']);
    expect(fused[0].score).toBeCloseTo(1 / 62 + 1 / 61, 12);
    expect(fused[1].score).toBeCloseTo(1 / 61 + 1 / 63, 12);
    expect(fused.map((f) => f.rank)).toEqual([0, 1, 2, 3]);
  });

  it('weights change the order', () => {
    // a: 1/61 + w2/62, b: 1/62 + w2/61 — equal weights favour a (better best rank), w2 = 3 favours b.
    expect(reciprocalRankFusion([list('a', 'b'), list('b', 'a')], [3, 1]).map((f) => f.passage.id)).toEqual(['a', 'b']);
    expect(reciprocalRankFusion([list('a', 'b'), list('b', 'a')], [1, 3]).map((f) => f.passage.id)).toEqual(['b', 'a']);
  });

  it('breaks exact ties by the better single rank, then by first appearance', () => {
    const fused = reciprocalRankFusion([list('x', 'y'), list('y', 'x')], [1, 1], 60);
    // x and y tie exactly; both have best rank 0, x appeared first.
    expect(fused.map((f) => f.passage.id)).toEqual(['x', 'y']);
  });
});

describe('HybridRetriever', () => {
  it('fuses its retrievers and cuts to k', async () => {
    const h = new HybridRetriever([new Fixed('one', ['a', 'b', 'c']), new Fixed('two', ['b', 'd', 'a'])]);
    expect(h.name).toBe('hybrid(one+two)');
    expect((await h.search('q', 2)).map((r) => r.passage.id)).toEqual(['b', 'a']);
  });
  it('rejects mismatched weights and k <= 0', async () => {
    expect(() => new HybridRetriever([new Fixed('one', ['a'])], { weights: [1, 2] })).toThrow(/weights/);
    await expect(new HybridRetriever([new Fixed('one', ['a'])]).search('q', 0)).rejects.toThrow(/k must be a positive integer/);
  });
});
