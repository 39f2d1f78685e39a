/**
 * One-dimensional Gaussian kernel density estimation with Scott's rule, the estimator seaborn's
 * `kdeplot` and scipy's `gaussian_kde` use by default:
 *
 *   f̂(x) = 1 / (n·h) · Σᵢ φ((x − xᵢ) / h),   φ(u) = exp(−u²/2) / √(2π),
 *   h = σ̂ · n^(−1/5)                       (Scott's rule; σ̂ with n − 1 in the denominator, as scipy).
 */

export interface KdeOptions {
  /** Use this bandwidth instead of Scott's rule. */
  bandwidth?: number;
  /**
   * Standard deviation to use when the samples have none (all equal, or a single sample), where
   * Scott's rule gives h = 0. Consistency scores are discrete (k/n), so this happens in practice.
   * Default 0.1.
   */
  fallbackSigma?: number;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Sample standard deviation (denominator n − 1); 0 for fewer than two values. */
export function sampleStd(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  let ss = 0;
  for (const v of values) ss += (v - m) ** 2;
  return Math.sqrt(ss / (values.length - 1));
}

/** Scott's rule: σ̂ · n^(−1/5). Falls back to `fallbackSigma` · n^(−1/5) when σ̂ = 0. */
export function scottBandwidth(samples: readonly number[], fallbackSigma = 0.1): number {
  if (samples.length === 0) throw new Error('scottBandwidth: no samples');
  const sigma = sampleStd(samples);
  return (sigma > 0 ? sigma : fallbackSigma) * samples.length ** -0.2;
}

const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

export interface Kde {
  bandwidth: number;
  /** Density at x. */
  density(x: number): number;
}

export function gaussianKde(samples: readonly number[], options: KdeOptions = {}): Kde {
  if (samples.length === 0) throw new Error('gaussianKde: no samples');
  const h = options.bandwidth ?? scottBandwidth(samples, options.fallbackSigma);
  if (!(h > 0)) throw new Error(`gaussianKde: bandwidth must be positive, got ${h}`);
  const n = samples.length;
  const data = Float64Array.from(samples);
  return {
    bandwidth: h,
    density(x: number): number {
      let sum = 0;
      for (let i = 0; i < n; i++) {
        const u = (x - data[i]) / h;
        sum += Math.exp(-0.5 * u * u);
      }
      return (sum * INV_SQRT_2PI) / (n * h);
    },
  };
}

/** `count` evenly spaced points from `start` to `stop`, both included. */
export function linspace(start: number, stop: number, count: number): number[] {
  if (count < 2) return [start];
  const step = (stop - start) / (count - 1);
  return Array.from({ length: count }, (_, i) => (i === count - 1 ? stop : start + i * step));
}

export interface KdeCurve {
  x: number[];
  y: number[];
  bandwidth: number;
}

/**
 * The density on a grid that extends `cut` bandwidths beyond the data (seaborn's default cut=3),
 * optionally clipped to `clip` (e.g. [0, 1] would hide mass that spills past the bounds; we do
 * not clip by default so the curve integrates to 1, as seaborn does).
 */
export function kdeCurve(
  samples: readonly number[],
  options: KdeOptions & { points?: number; cut?: number; clip?: [number, number] } = {},
): KdeCurve {
  const kde = gaussianKde(samples, options);
  const cut = options.cut ?? 3;
  let lo = Math.min(...samples) - cut * kde.bandwidth;
  let hi = Math.max(...samples) + cut * kde.bandwidth;
  if (options.clip) {
    lo = Math.max(lo, options.clip[0]);
    hi = Math.min(hi, options.clip[1]);
  }
  const x = linspace(lo, hi, options.points ?? 200);
  return { x, y: x.map((v) => kde.density(v)), bandwidth: kde.bandwidth };
}
