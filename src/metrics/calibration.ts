/**
 * Accuracy–coverage AUC (Verify-and-Edit's calibration metric; its `f1auc_score`, inherited from
 * Ye & Durrett 2022): rank predictions from most to least confident (for VE: by consistency =
 * majority votes / samples), and average the accuracy of the top fraction over evenly spaced
 * coverage levels.
 *
 * The exact rule, for N predictions sorted by confidence, most confident first:
 *
 *   S   = min(1000, N − 1)                      number of coverage levels
 *   c_k = k / S,  k = 1 … S                     coverage levels (the last is 1)
 *   m_k = trunc(N · c_k)                        predictions kept at level k (≥ 1)
 *   a_k = mean correctness of the first m_k     accuracy at coverage c_k
 *   AUC = 100 × (1/S) Σ_k a_k                   right-endpoint Riemann sum over (0, 1]
 *
 * (floating-point exactly as the reference: c_k = k / S in doubles, then N · c_k, truncated).
 * N = 1 has no levels in the reference (NaN); here it is that prediction's correctness. N = 0 → null.
 *
 * Ties in confidence are common (consistency takes only n+1 values), and the reference's order
 * within a tie is arbitrary (numpy's unstable argsort). Two rules, chosen by `ties`:
 * - `average` (default): order-free; a level that cuts through a group of tied predictions counts
 *   the group's mean correctness for the part it keeps (the expected value over random orders);
 * - `input-order`: ties keep their input order (a stable sort), like the reference whenever its
 *   sort happens to be stable.
 * Correctness values are in [0, 1] (booleans, EM, or F1).
 *
 * In a run (`calibrationFamily`): each prediction keeps its `consistency` (100 × votes / samples)
 * and its correctness (FEVER accuracy, else EM, computed here when not asked for), and the AUC is
 * the run-level statistic, with a bootstrap CI.
 */
import { bootstrapInterval } from './bootstrap';
import { feverFamily } from './fever';
import type { MetricAggregate } from '../run-files';
import type { MetricFamily, Score } from './score';
import { squadFamily } from './squad';

export type TieRule = 'average' | 'input-order';

export interface AccuracyCoverageOptions {
  ties?: TieRule;
  /** Maximum number of coverage levels (default 1000, as the reference). */
  maxLevels?: number;
}

export interface CoveragePoint {
  /** Fraction of predictions kept (0–1]. */
  coverage: number;
  /** Number of predictions kept. */
  kept: number;
  /** Accuracy of the kept predictions, 0–100. */
  accuracy: number;
}

function toNumber(v: boolean | number): number {
  return typeof v === 'boolean' ? (v ? 1 : 0) : v;
}

/** Prefix sums of correctness in confidence order, with the chosen tie rule. */
function prefixSums(confidence: readonly number[], correct: readonly (boolean | number)[], ties: TieRule): (m: number) => number {
  const n = confidence.length;
  if (correct.length !== n) throw new Error(`accuracy-coverage: ${n} confidences but ${correct.length} correctness values`);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => confidence[b] - confidence[a] || a - b);
  const values = order.map((i) => toNumber(correct[i]));
  const prefix = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i] + values[i];
  if (ties === 'input-order') return (m) => prefix[m];
  // Group boundaries: groupStart[i] / groupEnd[i] for the tie group holding sorted position i.
  const groupStart = new Int32Array(n);
  const groupEnd = new Int32Array(n);
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && confidence[order[j + 1]] === confidence[order[i]]) j++;
    for (let k = i; k <= j; k++) {
      groupStart[k] = i;
      groupEnd[k] = j + 1;
    }
    i = j + 1;
  }
  return (m) => {
    if (m === 0 || m === n || groupStart[m] === m) return prefix[m];
    const a = groupStart[m];
    const b = groupEnd[m];
    return prefix[a] + ((m - a) * (prefix[b] - prefix[a])) / (b - a);
  };
}

/** The curve the AUC averages: accuracy at each coverage level c_k (see the module comment). */
export function accuracyCoverageCurve(confidence: readonly number[], correct: readonly (boolean | number)[], options: AccuracyCoverageOptions = {}): CoveragePoint[] {
  const n = confidence.length;
  if (n === 0) return [];
  const sum = prefixSums(confidence, correct, options.ties ?? 'average');
  if (n === 1) return [{ coverage: 1, kept: 1, accuracy: 100 * sum(1) }];
  const levels = Math.min(options.maxLevels ?? 1000, n - 1);
  const points: CoveragePoint[] = [];
  for (let k = 1; k <= levels; k++) {
    const c = k / levels;
    const m = Math.trunc(n * c);
    points.push({ coverage: c, kept: m, accuracy: (100 * sum(m)) / m });
  }
  return points;
}

/** Accuracy–coverage AUC on the 0–100 scale; null for no predictions. */
export function accuracyCoverageAuc(confidence: readonly number[], correct: readonly (boolean | number)[], options: AccuracyCoverageOptions = {}): number | null {
  const points = accuracyCoverageCurve(confidence, correct, options);
  if (points.length === 0) return null;
  return points.reduce((s, p) => s + p.accuracy, 0) / points.length;
}

/** Registry entry: the accuracy–coverage AUC, from per-prediction consistency and correctness. */
export const calibrationFamily: MetricFamily<'auc'> = {
  family: 'calibration',
  reference: 'Verify-and-Edit (Zhao et al. 2023) f1auc_score, after Ye & Durrett 2022',
  metrics: ['auc'],
  datasets: ['ambignq', 'situatedqa', 'hotpotqa-adversarial', '2wikimultihop', 'fever'],
  defaults: [],
  async score(input) {
    const c = input.consistency;
    if (c === undefined || !Number.isFinite(c) || c < 0 || c > 1) return [{ name: 'auc', score: null, reason: 'the prediction has no consistency in [0, 1]' }];
    const out: Score[] = [{ name: 'consistency', score: 100 * c }];
    // The correctness the AUC ranks, computed by its own family when the run did not ask for it.
    const key = input.dataset === 'fever' ? 'accuracy' : 'em';
    if (input.scores[key] === undefined) {
      const family = key === 'accuracy' ? feverFamily : squadFamily;
      out.push(...(await family.score(input, new Set([key]))).filter((s) => s.score !== null));
    }
    return out;
  },
  aggregate(rows, options): Record<string, MetricAggregate> {
    const withConsistency = rows.filter((r) => Number.isFinite(r.metrics.consistency));
    if (withConsistency.length === 0) return {};
    const key = withConsistency.every((r) => Number.isFinite(r.metrics.accuracy)) ? 'accuracy' : 'em';
    const kept = withConsistency.filter((r) => Number.isFinite(r.metrics[key]));
    if (kept.length === 0) return {};
    const conf = kept.map((r) => r.metrics.consistency);
    const corr = kept.map((r) => r.metrics[key] / 100);
    const stat = (idx: ArrayLike<number>): number =>
      accuracyCoverageAuc(
        Array.from(idx, (i) => conf[i]),
        Array.from(idx, (i) => corr[i]),
      ) ?? NaN;
    const ci = bootstrapInterval(kept.length, stat, options);
    return { auc: { mean: accuracyCoverageAuc(conf, corr) as number, ciLow: ci.low, ciHigh: ci.high, n: kept.length } };
  },
};
