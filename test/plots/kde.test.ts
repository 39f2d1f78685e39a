import { describe, expect, it } from 'vitest';
import { gaussianKde, kdeCurve, linspace, sampleStd, scottBandwidth } from '../../src/plots/kde';

// Reference values computed by hand from f(x) = 1/(n·h) Σ φ((x − xᵢ)/h), h = s·n^(−1/5), s the
// sample standard deviation (n − 1), with a separate Python script using only `math`.
describe('Gaussian KDE with Scott bandwidth', () => {
  it('matches the hand computation for two points', () => {
    // s = sqrt(0.5) = 0.7071068, h = 0.7071068 · 2^(−0.2) = 0.6155722
    const kde = gaussianKde([0, 1]);
    expect(kde.bandwidth).toBeCloseTo(0.6155722066724582, 12);
    // f(0) = (φ(0) + φ(1/h)) / (2h) = (0.3989423 + 0.1066147) / 1.2311444 = 0.4106474
    expect(kde.density(0)).toBeCloseTo(0.4106474407782997, 12);
    expect(kde.density(1)).toBeCloseTo(0.4106474407782997, 12);
    expect(kde.density(0.5)).toBeCloseTo(0.46598003715096326, 12);
    expect(kde.density(2)).toBeCloseTo(0.08825902937707558, 12);
  });

  it('matches the hand computation for discrete consistency scores', () => {
    const samples = [0.2, 0.4, 0.4, 1.0];
    expect(scottBandwidth(samples)).toBeCloseTo(0.2625298103069861, 12);
    const kde = gaussianKde(samples);
    expect(kde.density(0.0)).toBeCloseTo(0.5224963349417663, 12);
    expect(kde.density(0.4)).toBeCloseTo(1.071908157233875, 12);
    expect(kde.density(0.7)).toBeCloseTo(0.6551941057930643, 12);
    expect(kde.density(1.2)).toBeCloseTo(0.2917995780554909, 12);
  });

  it('uses the sample (n − 1) standard deviation', () => {
    expect(sampleStd([2, 4, 4, 4, 5, 5, 7, 9])).toBeCloseTo(Math.sqrt(32 / 7), 12);
    expect(sampleStd([3])).toBe(0);
  });

  it('falls back to a fixed sigma when all samples are equal', () => {
    expect(scottBandwidth([1, 1, 1])).toBeCloseTo(0.1 * 3 ** -0.2, 12);
    expect(scottBandwidth([1, 1, 1], 0.5)).toBeCloseTo(0.5 * 3 ** -0.2, 12);
    expect(gaussianKde([1], { fallbackSigma: 0.2 }).density(1)).toBeCloseTo(1 / (0.2 * Math.sqrt(2 * Math.PI)), 12);
  });

  it('honours an explicit bandwidth and rejects a non-positive one', () => {
    expect(gaussianKde([0], { bandwidth: 1 }).density(0)).toBeCloseTo(1 / Math.sqrt(2 * Math.PI), 12);
    expect(() => gaussianKde([0], { bandwidth: 0 })).toThrow(/positive/);
    expect(() => gaussianKde([])).toThrow(/no samples/);
  });

  it('evaluates a curve that integrates to about 1 over 3 bandwidths beyond the data', () => {
    const curve = kdeCurve([0.2, 0.4, 0.4, 1.0], { points: 2001 });
    expect(curve.x[0]).toBeCloseTo(0.2 - 3 * curve.bandwidth, 12);
    expect(curve.x.at(-1)).toBeCloseTo(1.0 + 3 * curve.bandwidth, 12);
    const dx = curve.x[1] - curve.x[0];
    const area = curve.y.reduce((a, y) => a + y * dx, 0);
    expect(area).toBeGreaterThan(0.99);
    expect(area).toBeLessThan(1.01);
  });

  it('linspace includes both ends', () => {
    expect(linspace(0, 1, 5)).toEqual([0, 0.25, 0.5, 0.75, 1]);
  });
});
