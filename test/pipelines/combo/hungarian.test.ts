import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../src/common/random';
import { maxWeightAssignment, minCostAssignment } from '../../../src/pipelines/combo/hungarian';

/** Seeded so the 200 matrices are the same on every run. */
const rng = mulberry32;

function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  const out: number[][] = [];
  for (const p of permutations(n - 1)) for (let i = 0; i <= p.length; i++) out.push([...p.slice(0, i), n - 1, ...p.slice(i)]);
  return out;
}

function bruteForceMax(w: number[][]): number {
  let best = -Infinity;
  for (const perm of permutations(w.length)) best = Math.max(best, perm.reduce((s, j, i) => s + w[i][j], 0));
  return best;
}

function isPermutation(xs: number[], n: number): boolean {
  return xs.length === n && new Set(xs).size === n && xs.every((x) => x >= 0 && x < n);
}

describe('Hungarian assignment', () => {
  it('matches brute force on 200 seeded random matrices up to 7×7', () => {
    const random = rng(20240601);
    for (let t = 0; t < 200; t++) {
      const n = 1 + Math.floor(random() * 7);
      // Mix continuous values with coarse ones so ties (common with Yes/No judges) are exercised.
      const coarse = t % 3 === 0;
      const w = Array.from({ length: n }, () => Array.from({ length: n }, () => (coarse ? Math.round(random() * 2) / 2 : random())));
      const { rowToCol, total } = maxWeightAssignment(w);
      expect(isPermutation(rowToCol, n)).toBe(true);
      expect(total).toBeCloseTo(rowToCol.reduce((s, j, i) => s + w[i][j], 0), 12);
      expect(total).toBeCloseTo(bruteForceMax(w), 9);
    }
  });

  it('minimises cost on a textbook example', () => {
    const cost = [
      [4, 1, 3],
      [2, 0, 5],
      [3, 2, 2],
    ];
    expect(minCostAssignment(cost)).toEqual({ rowToCol: [1, 0, 2], total: 5 });
  });

  it('handles rectangular matrices: every row matched when rows ≤ cols, extra rows unmatched otherwise', () => {
    const wide = maxWeightAssignment([
      [1, 9, 2],
      [8, 7, 1],
    ]);
    expect(wide).toEqual({ rowToCol: [1, 0], total: 17 });
    const tall = maxWeightAssignment([[1], [5], [3]]);
    expect(tall).toEqual({ rowToCol: [-1, 0, -1], total: 5 });
  });

  it('handles empty and negative matrices', () => {
    expect(maxWeightAssignment([])).toEqual({ rowToCol: [], total: 0 });
    expect(maxWeightAssignment([[-1, -2], [-3, -10]]).total).toBe(-5);
  });

  it('rejects ragged or non-finite matrices with a message naming the entry', () => {
    expect(() => maxWeightAssignment([[1, 2], [3]])).toThrow(/row 1/);
    expect(() => maxWeightAssignment([[1, Number.NaN]])).toThrow(/\[0\]\[1\]/);
  });
});
