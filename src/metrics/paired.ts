/**
 * Paired statistics for "is B better than A on the same questions, and by how much?".
 *
 * Two runs that answered the same questions give one delta per question (B's score − A's). Most
 * of the spread between two runs' means comes from which questions were asked, and a paired
 * analysis removes it; two per-run intervals that overlap say nothing about the difference.
 *
 * - `pairedDeltaInterval`: bootstrap 95% CI of the mean delta, the questions resampled jointly
 *   (both runs' scores of a question stay together: resampling the deltas is exactly that), with
 *   the seeded percentile bootstrap of bootstrap.ts.
 * - `signFlipTest`: two-sided paired randomisation test. Under "no difference" each question's
 *   delta is as likely to have had the other sign, so the statistic |Σ dᵢ| is compared with its
 *   distribution over all sign flips. Questions with a zero delta do not move the sum and are left
 *   out; with m ≤ `exactLimit` (20) non-zero deltas all 2^m flips are enumerated (exact p), above
 *   that `permutations` seeded random flips give the Monte Carlo p = (1 + hits) / (1 + B), which
 *   is never 0 and is a valid p-value (Phipson & Smyth 2010).
 * - `holm`: Holm's step-down adjustment over a family of p-values.
 * - `questionsForPower`: how many questions a paired test needs to detect the observed mean delta
 *   at 80% power, two-sided α = 0.05, by the normal approximation n = ((z₀.₉₇₅ + z₀.₈)·sd/|δ|)²,
 *   sd the sample SD of the per-question deltas; never below 6, the fewest questions with which a
 *   two-sided sign-flip test can reach p < 0.05 (2/2⁶ = 0.031).
 */
import { mulberry32 } from '../common/random';
import { bootstrapInterval, type BootstrapOptions } from './bootstrap';

/** z quantiles of the standard normal: 0.975 (two-sided α = 0.05) and 0.8 (80% power). */
export const Z_975 = 1.959963984540054;
export const Z_80 = 0.8416212335729143;

/** The fewest paired questions with which a two-sided sign-flip test can give p < 0.05. */
export const MIN_QUESTIONS_FOR_SIGNIFICANCE = 6;

export interface PairedTestOptions extends BootstrapOptions {
  /** Random sign flips when there are more than `exactLimit` non-zero deltas (default 10,000). */
  permutations?: number;
  /** Largest number of non-zero deltas whose 2^m flips are enumerated exactly (default 20). */
  exactLimit?: number;
}

export interface SignFlipResult {
  p: number;
  /** `exact`: all 2^m sign flips; `monte-carlo`: seeded random flips; `none`: no question. */
  method: 'exact' | 'monte-carlo' | 'none';
  /** Non-zero deltas (the only ones a flip changes). */
  nonZero: number;
}

export interface PairedDelta {
  /** Paired questions. */
  n: number;
  meanDelta: number;
  ciLow: number;
  ciHigh: number;
  p: number;
  pMethod: SignFlipResult['method'];
  /** Sample SD of the per-question deltas (NaN with fewer than two questions). */
  sdDelta: number;
  /**
   * Questions a paired test needs to detect `meanDelta` at 80% power (two-sided α 0.05, normal
   * approximation); `null` where it cannot be estimated: no delta (δ = 0, infinitely many) or
   * fewer than two questions (no spread).
   */
  questionsFor80Power: number | null;
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? NaN : values.reduce((s, v) => s + v, 0) / values.length;
}

/** Sample standard deviation (n − 1); NaN with fewer than two values. */
export function sampleSd(values: readonly number[]): number {
  if (values.length < 2) return NaN;
  const m = mean(values);
  return Math.sqrt(values.reduce((s, v) => s + (v - m) ** 2, 0) / (values.length - 1));
}

/** Bootstrap CI of the mean of paired deltas (questions resampled jointly). */
export function pairedDeltaInterval(deltas: readonly number[], options: BootstrapOptions = {}): { mean: number; low: number; high: number } {
  const { low, high } = bootstrapInterval(
    deltas.length,
    (idx) => {
      let s = 0;
      for (let i = 0; i < idx.length; i++) s += deltas[idx[i]];
      return s / idx.length;
    },
    options,
  );
  return { mean: mean(deltas), low, high };
}

/**
 * Two-sided paired sign-flip randomisation test of "mean delta = 0". Sums are compared with a
 * relative tolerance, so that flips giving the same |sum| up to floating-point rounding (ties,
 * e.g. deltas 1, 1, 2) count as "at least as extreme".
 */
export function signFlipTest(deltas: readonly number[], options: PairedTestOptions = {}): SignFlipResult {
  if (deltas.length === 0) return { p: NaN, method: 'none', nonZero: 0 };
  const d = deltas.filter((x) => x !== 0);
  const m = d.length;
  if (m === 0) return { p: 1, method: 'exact', nonZero: 0 };
  const observed = Math.abs(d.reduce((s, x) => s + x, 0));
  const scale = d.reduce((s, x) => s + Math.abs(x), 0);
  const threshold = observed - 1e-9 * scale;
  const exactLimit = options.exactLimit ?? 20;
  if (m <= exactLimit) {
    // Gray-code walk: each step flips one sign, so the sum updates in O(1) per pattern.
    let sum = d.reduce((s, x) => s + x, 0);
    const sign = new Int8Array(m).fill(1);
    let hits = Math.abs(sum) >= threshold ? 1 : 0;
    const total = 2 ** m;
    for (let k = 1; k < total; k++) {
      const bit = 31 - Math.clz32(k & -k);
      sum -= 2 * sign[bit] * d[bit];
      sign[bit] = -sign[bit] as 1 | -1;
      if (Math.abs(sum) >= threshold) hits++;
    }
    return { p: hits / total, method: 'exact', nonZero: m };
  }
  const permutations = options.permutations ?? 10_000;
  const rng = mulberry32(options.seed ?? 0);
  let hits = 0;
  for (let b = 0; b < permutations; b++) {
    let sum = 0;
    for (let i = 0; i < m; i++) sum += rng() < 0.5 ? -d[i] : d[i];
    if (Math.abs(sum) >= threshold) hits++;
  }
  return { p: (1 + hits) / (1 + permutations), method: 'monte-carlo', nonZero: m };
}

/**
 * Holm's step-down adjustment: sort the m p-values ascending, multiply the i-th smallest by
 * (m − i + 1), carry the running maximum so the order is kept, cap at 1. NaN p-values (no
 * question to test) are not part of the family and stay NaN.
 */
export function holm(pValues: readonly number[]): number[] {
  const order = pValues.map((p, i) => ({ p, i })).filter((x) => !Number.isNaN(x.p)).sort((a, b) => a.p - b.p);
  const m = order.length;
  const adjusted = pValues.map(() => NaN);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[i] = running;
  });
  return adjusted;
}

/** Questions needed for 80% power at two-sided α 0.05 (normal approximation; see the module note). */
export function questionsForPower(meanDelta: number, sdDelta: number): number | null {
  // A mean that is zero but for floating-point rounding (+x and −x summed in another order)
  // is zero: no number of questions detects it.
  if (!Number.isFinite(meanDelta) || !Number.isFinite(sdDelta) || Math.abs(meanDelta) <= 1e-9 * Math.max(1, sdDelta)) return null;
  const n = (((Z_975 + Z_80) * sdDelta) / Math.abs(meanDelta)) ** 2;
  return Math.max(MIN_QUESTIONS_FOR_SIGNIFICANCE, Math.ceil(n - 1e-9));
}

/** Everything about one paired comparison from its per-question deltas. */
export function pairedDelta(deltas: readonly number[], options: PairedTestOptions = {}): PairedDelta {
  const interval = pairedDeltaInterval(deltas, options);
  const test = signFlipTest(deltas, options);
  const sd = sampleSd(deltas);
  return {
    n: deltas.length,
    meanDelta: interval.mean,
    ciLow: interval.low,
    ciHigh: interval.high,
    p: test.p,
    pMethod: test.method,
    sdDelta: sd,
    questionsFor80Power: questionsForPower(interval.mean, sd),
  };
}
