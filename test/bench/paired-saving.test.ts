import { describe, expect, it } from 'vitest';
import { pairById, pairedSaving } from '../../bench/paired-saving';

describe('pairedSaving', () => {
  it('is a ratio of sums, not a mean of per-question ratios', () => {
    // Saving everything on a cheap question and nothing on a dear one: 1 − 10/12, not 50%.
    const r = pairedSaving([
      { fixed: 2, adaptive: 0 },
      { fixed: 10, adaptive: 10 },
    ]);
    expect(r.saving).toBeCloseTo(1 - 10 / 12, 12);
  });

  it('has a zero-width interval when every question saves the same share', () => {
    const rows = [3, 5, 8, 13, 21].map((fixed) => ({ fixed, adaptive: fixed / 2 }));
    const r = pairedSaving(rows);
    expect(r.saving).toBeCloseTo(0.5, 12);
    expect(r.low).toBeCloseTo(0.5, 12);
    expect(r.high).toBeCloseTo(0.5, 12);
  });

  it('brackets the point estimate with a wide interval when the saving sits on a few questions', () => {
    // An exit that saves 6 of 8 calls on 10 questions of 40 and nothing elsewhere: 18.75% in all.
    const rows = Array.from({ length: 40 }, (_, i) => ({ fixed: 8, adaptive: i % 4 === 0 ? 2 : 8 }));
    const r = pairedSaving(rows, { resamples: 2000, seed: 1 });
    expect(r.saving).toBeCloseTo(60 / 320, 12);
    expect(r.low).toBeLessThan(r.saving);
    expect(r.high).toBeGreaterThan(r.saving);
    // The share of exits is binomial(40, 1/4): its 95% interval is roughly ±0.14 around 0.25,
    // i.e. ±0.10 on the saving (6/8 of it); the bootstrap lands near that, not at 0 or 1.
    expect(r.high - r.low).toBeGreaterThan(0.12);
    expect(r.high - r.low).toBeLessThan(0.3);
    expect(r.low).toBeGreaterThan(0);
  });

  it('is reproducible from its seed', () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({ fixed: 4 + (i % 5), adaptive: i % 3 === 0 ? 2 : 4 + (i % 5) }));
    expect(pairedSaving(rows, { seed: 7 })).toEqual(pairedSaving(rows, { seed: 7 }));
    expect(pairedSaving(rows, { seed: 7 })).not.toEqual(pairedSaving(rows, { seed: 8 }));
  });

  it('says NaN, not a saving, when there is nothing to compare', () => {
    expect(pairedSaving([]).saving).toBeNaN();
    expect(pairedSaving([{ fixed: 0, adaptive: 0 }]).saving).toBeNaN();
  });
});

describe('pairById', () => {
  it('pairs the same question across runs whatever their order, and counts the unpaired', () => {
    const fixed = [
      { id: 'a', calls: 4 },
      { id: 'b', calls: 9 },
      { id: 'c', calls: 5 },
    ];
    const adaptive = [
      { id: 'c', calls: 2 },
      { id: 'a', calls: 4 },
      { id: 'd', calls: 2 },
    ];
    const { rows, unpaired } = pairById(fixed, adaptive, (q) => q.calls);
    expect(rows).toEqual([
      { fixed: 4, adaptive: 4 },
      { fixed: 5, adaptive: 2 },
    ]);
    expect(unpaired).toBe(2);
  });
});
