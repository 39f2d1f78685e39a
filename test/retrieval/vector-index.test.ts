import { describe, expect, it } from 'vitest';
import { TopK } from '../../src/retrieval/topk';
import { ExactIndex, IvfIndex, recallAt } from '../../src/retrieval/vector-index';

function random(seed: number) {
  let a = seed;
  return () => {
    a = (a * 1664525 + 1013904223) >>> 0;
    return a / 4294967296;
  };
}
function gaussian(r: () => number) {
  return Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
}
function normalise(v: Float32Array) {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}
/** Clustered unit vectors, like sentence embeddings of passages on a few hundred topics. */
function clustered(n: number, d: number, clusters: number, seed: number) {
  const r = random(seed);
  const centres = Array.from({ length: clusters }, () => normalise(Float32Array.from({ length: d }, () => gaussian(r))));
  const data = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const c = centres[Math.floor(r() * clusters)];
    data.set(normalise(Float32Array.from({ length: d }, (_, j) => c[j] + 0.15 * gaussian(r))), i * d);
  }
  const queries = Array.from({ length: 50 }, () => {
    const c = centres[Math.floor(r() * clusters)];
    return normalise(Float32Array.from({ length: d }, (_, j) => c[j] + 0.15 * gaussian(r)));
  });
  return { data, queries };
}

describe('TopK', () => {
  it('keeps the k best, best first, ties by smaller id', () => {
    const top = new TopK(3);
    [[5, 0.1], [2, 0.9], [7, 0.5], [1, 0.5], [9, 0.95], [3, 0.2]].forEach(([id, s]) => top.push(id, s));
    expect(top.result()).toEqual([
      { id: 9, score: 0.95 },
      { id: 2, score: 0.9 },
      { id: 1, score: 0.5 },
    ]);
  });
});

describe('ExactIndex', () => {
  it('agrees with a naive loop over all rows', () => {
    const d = 16;
    const { data, queries } = clustered(500, d, 20, 3);
    const index = new ExactIndex(data, d);
    for (const q of queries.slice(0, 10)) {
      const naive = Array.from({ length: 500 }, (_, i) => {
        let s = 0;
        for (let j = 0; j < d; j++) s += q[j] * data[i * d + j];
        return { id: i, s };
      }).sort((a, b) => b.s - a.s || a.id - b.id);
      const got = index.search(q, 10);
      expect(got.map((g) => g.id)).toEqual(naive.slice(0, 10).map((n) => n.id));
      got.forEach((g, i) => expect(g.score).toBeCloseTo(naive[i].s, 5));
    }
  });
});

describe('IvfIndex', () => {
  it('reaches recall@10 >= 0.9 against exact search while scanning a fraction of the rows', () => {
    const d = 32;
    const n = 4000;
    const { data, queries } = clustered(n, d, 200, 11);
    const exact = new ExactIndex(data, d);
    const ivf = IvfIndex.build(data, d, { seed: 1 });
    expect(ivf.nlist).toBe(Math.round(Math.sqrt(n)));
    expect(ivf.nprobe / ivf.nlist).toBeLessThanOrEqual(0.26);
    const recall = recallAt(ivf, exact, queries, 10);
    expect(recall).toBeGreaterThanOrEqual(0.9);
    // Probing every list is exact.
    ivf.nprobe = ivf.nlist;
    expect(recallAt(ivf, exact, queries, 10)).toBe(1);
  });

  it('is deterministic for a seed', () => {
    const { data } = clustered(1000, 8, 10, 5);
    const a = IvfIndex.build(data, 8, { seed: 4 });
    const b = IvfIndex.build(data, 8, { seed: 4 });
    expect(Array.from(a.listIds)).toEqual(Array.from(b.listIds));
  });
});
