/**
 * Bootstrap confidence intervals (percentile method), seeded so that a run's CI is reproducible.
 *
 * For B resamples (default 1,000) draw n indices uniformly with replacement (mulberry32 PRNG from
 * `seed`, src/datasets/sample.ts), compute the statistic on each resample, and take the
 * (1 − level)/2 and (1 + level)/2 percentiles of the B values, with numpy's default linear
 * interpolation between order statistics. The point estimate is the statistic on the full data.
 * n = 0 gives NaN bounds; n = 1 gives a zero-width interval.
 */
import { seededRandom } from '../datasets/sample';
import type { MetricAggregate } from '../run-files';

export interface BootstrapOptions {
  /** Number of resamples (default 1000). */
  resamples?: number;
  /** PRNG seed (default 0). */
  seed?: number;
  /** Coverage of the interval (default 0.95). */
  level?: number;
}

/** numpy.percentile(values, q) with the default 'linear' method; `sorted` must be ascending. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const pos = ((n - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** CI of any statistic of n items: `statistic(indices)` gets the resampled item indices. */
export function bootstrapInterval(n: number, statistic: (indices: Int32Array) => number, options: BootstrapOptions = {}): { low: number; high: number } {
  if (n === 0) return { low: NaN, high: NaN };
  const resamples = options.resamples ?? 1000;
  const level = options.level ?? 0.95;
  const rng = seededRandom(options.seed ?? 0);
  const stats = new Float64Array(resamples);
  const idx = new Int32Array(n);
  for (let b = 0; b < resamples; b++) {
    for (let i = 0; i < n; i++) idx[i] = Math.floor(rng() * n);
    stats[b] = statistic(idx);
  }
  stats.sort();
  return { low: percentile(stats, (100 * (1 - level)) / 2), high: percentile(stats, (100 * (1 + level)) / 2) };
}

/** Mean of per-example values with its bootstrap CI. */
export function bootstrapMean(values: readonly number[], options: BootstrapOptions = {}): MetricAggregate {
  const n = values.length;
  const mean = n === 0 ? NaN : values.reduce((s, v) => s + v, 0) / n;
  const { low, high } = bootstrapInterval(
    n,
    (idx) => {
      let s = 0;
      for (let i = 0; i < idx.length; i++) s += values[idx[i]];
      return s / idx.length;
    },
    options,
  );
  return { mean, ciLow: low, ciHigh: high, n };
}
