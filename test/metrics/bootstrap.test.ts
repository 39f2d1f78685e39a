import { describe, expect, it } from 'vitest';
import { bootstrapInterval, bootstrapMean, percentile } from '../../src/metrics/bootstrap';

describe('bootstrap CIs', () => {
  it('percentile interpolates linearly like numpy', () => {
    // numpy.percentile([1, 2, 3, 4], 25) = 1.75; 50 → 2.5; 100 → 4
    expect(percentile([1, 2, 3, 4], 25)).toBeCloseTo(1.75, 12);
    expect(percentile([1, 2, 3, 4], 50)).toBeCloseTo(2.5, 12);
    expect(percentile([1, 2, 3, 4], 100)).toBe(4);
    expect(percentile([7], 2.5)).toBe(7);
  });
  it('is reproducible with a seed and changes with it', () => {
    const values = Array.from({ length: 200 }, (_, i) => (i % 7 === 0 ? 100 : i % 3 === 0 ? 50 : 0));
    const a = bootstrapMean(values, { seed: 1 });
    expect(bootstrapMean(values, { seed: 1 })).toEqual(a);
    expect(bootstrapMean(values, { seed: 2 }).ciLow).not.toBe(a.ciLow);
    expect(a.n).toBe(200);
    expect(a.ciLow).toBeLessThan(a.mean);
    expect(a.ciHigh).toBeGreaterThan(a.mean);
  });
  it('has roughly the normal-theory width for a mean of 0/100 values', () => {
    // p = 0.3, n = 400: standard error = 100·sqrt(0.3·0.7/400) ≈ 2.29 → 95% half-width ≈ 4.5.
    const values = Array.from({ length: 400 }, (_, i) => (i % 10 < 3 ? 100 : 0));
    const ci = bootstrapMean(values, { resamples: 2000 });
    expect(ci.mean).toBeCloseTo(30, 10);
    expect(ci.ciHigh - ci.ciLow).toBeGreaterThan(2 * 3.8);
    expect(ci.ciHigh - ci.ciLow).toBeLessThan(2 * 5.2);
  });
  it('gives a zero-width interval for one value and NaN for none', () => {
    expect(bootstrapMean([42])).toEqual({ mean: 42, ciLow: 42, ciHigh: 42, n: 1 });
    const none = bootstrapMean([]);
    expect(none.n).toBe(0);
    expect(Number.isNaN(none.ciLow)).toBe(true);
  });
  it('bootstraps any statistic of the resampled indices', () => {
    const x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const max = bootstrapInterval(x.length, (idx) => Math.max(...Array.from(idx, (i) => x[i])), { seed: 3 });
    expect(max.high).toBe(10);
    expect(max.low).toBeGreaterThanOrEqual(7);
  });
});
