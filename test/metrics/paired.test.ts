import { describe, expect, it } from 'vitest';
import { bootstrapMean } from '../../src/metrics/bootstrap';
import { holm, pairedDelta, pairedDeltaInterval, questionsForPower, sampleSd, signFlipTest } from '../../src/metrics/paired';

describe('paired bootstrap CI of the mean delta', () => {
  it('is a point when every question moved by the same amount, where per-run intervals overlap', () => {
    const a = [10, 20, 30, 40, 50];
    const b = a.map((x) => x + 5);
    const deltas = b.map((x, i) => x - a[i]);
    expect(pairedDeltaInterval(deltas)).toEqual({ mean: 5, low: 5, high: 5 });
    // The unpaired view cannot see it: the two runs' own intervals overlap widely.
    const ia = bootstrapMean(a);
    const ib = bootstrapMean(b);
    expect(ia.ciHigh).toBeGreaterThan(ib.ciLow);
  });
  it('spans the resample means of two deltas (0 and 10: a resample mean is 0, 5 or 10)', () => {
    // P(mean = 0) = P(mean = 10) = 1/4, so both 2.5% tails sit on the extremes.
    const ci = pairedDeltaInterval([0, 10]);
    expect(ci).toEqual({ mean: 5, low: 0, high: 10 });
  });
  it('one question: the interval is that question’s delta', () => {
    expect(pairedDeltaInterval([-7])).toEqual({ mean: -7, low: -7, high: -7 });
  });
  it('no question: NaN', () => {
    const ci = pairedDeltaInterval([]);
    expect(Number.isNaN(ci.mean) && Number.isNaN(ci.low) && Number.isNaN(ci.high)).toBe(true);
  });
  it('is seeded: the same seed, the same interval; another seed, another one', () => {
    const deltas = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3, 5, -8, 9, 7, -9];
    expect(pairedDeltaInterval(deltas, { seed: 3 })).toEqual(pairedDeltaInterval(deltas, { seed: 3 }));
    expect(pairedDeltaInterval(deltas, { seed: 4 }).low).not.toBe(pairedDeltaInterval(deltas, { seed: 3 }).low);
  });
});

describe('paired sign-flip randomisation test (two-sided)', () => {
  it('enumerates all flips exactly: deltas 1, 2, 3', () => {
    // The 8 sums ±1±2±3 are 6, 4, 2, 0, 0, −2, −4, −6; |sum| ≥ 6 in 2 of them.
    expect(signFlipTest([1, 2, 3])).toEqual({ p: 0.25, method: 'exact', nonZero: 3 });
  });
  it('leaves zero deltas out (they do not move the sum)', () => {
    // Non-zero deltas 1, 1: sums 2, 0, 0, −2 → |sum| ≥ 2 in 2 of 4.
    expect(signFlipTest([1, 0, 1, 0])).toEqual({ p: 0.5, method: 'exact', nonZero: 2 });
  });
  it('counts ties as at least as extreme: deltas 1, 1, 2', () => {
    // ±1±1±2: 4, 2, 2, 0, 0, −2, −2, −4 → |sum| ≥ 4 in 2 of 8.
    expect(signFlipTest([1, 1, 2]).p).toBe(0.25);
    // An observed sum of 0 is matched by every flip, also when rounding makes 0.1 + 0.2 − 0.3 ≠ 0.
    expect(signFlipTest([0.1, 0.2, -0.3]).p).toBe(1);
  });
  it('all-equal deltas: p = 1 when they are all 0; 2/2^m when they are equal and non-zero', () => {
    expect(signFlipTest([0, 0, 0, 0])).toEqual({ p: 1, method: 'exact', nonZero: 0 });
    expect(signFlipTest([2, 2, 2, 2, 2]).p).toBe(2 / 32);
    expect(signFlipTest([-2, -2, -2, -2, -2, -2]).p).toBe(2 / 64);
  });
  it('one question: p = 1 (one flip gives the same |sum|)', () => {
    expect(signFlipTest([3]).p).toBe(1);
  });
  it('no question: NaN, method none', () => {
    const r = signFlipTest([]);
    expect(Number.isNaN(r.p)).toBe(true);
    expect(r.method).toBe('none');
  });
  it('switches to a seeded Monte Carlo above 20 non-zero deltas, with the +1 correction', () => {
    // 25 equal deltas: only the 2 all-same-sign flips of 2^25 reach the observed sum, so no
    // random flip does and p = (1 + 0) / (1 + 10,000).
    const r = signFlipTest(Array(25).fill(1));
    expect(r).toEqual({ p: 1 / 10_001, method: 'monte-carlo', nonZero: 25 });
    // 11 deltas of +1 and 10 of −1: every sum of 21 odd terms is odd, so |sum| ≥ 1 always: p = 1.
    expect(signFlipTest([...Array(11).fill(1), ...Array(10).fill(-1)]).p).toBe(1);
    // Enumeration and Monte Carlo agree where both can run.
    const d = [5, 3, -1, 4, 2, 6, -2, 3, 1, 4, 2, 5];
    const exact = signFlipTest(d).p;
    const mc = signFlipTest(d, { exactLimit: 5, permutations: 20_000, seed: 7 });
    expect(mc.method).toBe('monte-carlo');
    expect(Math.abs(mc.p - exact)).toBeLessThan(0.01);
  });
});

describe('Holm step-down adjustment', () => {
  it('multiplies the i-th smallest p by (m − i + 1) and keeps the order', () => {
    // sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → running max 0.06.
    const adjusted = holm([0.01, 0.04, 0.03, 0.005]);
    expect(adjusted[0]).toBeCloseTo(0.03, 12);
    expect(adjusted[1]).toBeCloseTo(0.06, 12);
    expect(adjusted[2]).toBeCloseTo(0.06, 12);
    expect(adjusted[3]).toBeCloseTo(0.02, 12);
  });
  it('caps at 1, leaves a single p alone and NaN out of the family', () => {
    expect(holm([0.6, 0.7])).toEqual([1, 1]);
    expect(holm([0.3])).toEqual([0.3]);
    const withNaN = holm([0.02, NaN, 0.04]);
    expect(withNaN[0]).toBeCloseTo(0.04, 12); // m = 2, not 3
    expect(Number.isNaN(withNaN[1])).toBe(true);
    expect(withNaN[2]).toBeCloseTo(0.04, 12);
  });
});

describe('questions needed for 80% power', () => {
  it('uses n = ((z.975 + z.8)·sd/|δ|)², rounded up', () => {
    // deltas 0, 10, −5, 15: δ = 5, sd = √(250/3) = 9.1287; (2.80159 · 9.1287 / 5)² = 26.16 → 27.
    const d = [0, 10, -5, 15];
    expect(sampleSd(d)).toBeCloseTo(Math.sqrt(250 / 3), 12);
    expect(questionsForPower(5, sampleSd(d))).toBe(27);
    // Sign does not matter.
    expect(questionsForPower(-5, sampleSd(d))).toBe(27);
  });
  it('never asks for fewer than 6 questions (the fewest where a sign-flip test reaches p < 0.05)', () => {
    // deltas 1, 2, 3: δ = 2, sd = 1 → (2.80159/2)² = 1.96 → 2, raised to 6.
    expect(questionsForPower(2, 1)).toBe(6);
    // All-equal non-zero deltas: sd 0.
    expect(questionsForPower(4, 0)).toBe(6);
  });
  it('is undefined (null) when δ = 0 or there is no spread to estimate', () => {
    expect(questionsForPower(0, 3)).toBeNull();
    // Deltas that cancel leave a rounding residue, not an effect (was printed as 6.7e+33 questions).
    const cancelling = [10, -13.3, 3.3, 0, 0];
    const residue = cancelling.reduce((a, b) => a + b, 0) / cancelling.length;
    expect(residue).not.toBe(0);
    expect(questionsForPower(residue, sampleSd(cancelling))).toBeNull();
    expect(questionsForPower(3, NaN)).toBeNull();
  });
});

describe('pairedDelta', () => {
  it('puts the interval, the test and the power together', () => {
    expect(pairedDelta([1, 2, 3])).toMatchObject({ n: 3, meanDelta: 2, p: 0.25, pMethod: 'exact', sdDelta: 1, questionsFor80Power: 6 });
  });
  it('one question: a point CI, p = 1, no power estimate', () => {
    expect(pairedDelta([4])).toMatchObject({ n: 1, meanDelta: 4, ciLow: 4, ciHigh: 4, p: 1, questionsFor80Power: null });
  });
  it('all deltas 0: δ 0, CI [0, 0], p 1, power undefined', () => {
    expect(pairedDelta([0, 0, 0])).toMatchObject({ meanDelta: 0, ciLow: 0, ciHigh: 0, p: 1, questionsFor80Power: null });
  });
});
