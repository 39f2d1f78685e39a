/**
 * Accuracy–coverage AUC (Verify-and-Edit's calibration metric; its `f1auc_score`, inherited from
 * Ye & Durrett 2022): rank predictions from most to least confident and average the accuracy of
 * the top fraction over evenly spaced coverage levels.
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
 * Two rankings, two metrics (`calibrationFamily`); the curve and the area are the reference's in
 * both, only the confidence differs:
 * - `auc`: ranked by **consistency** (100 × the majority answer's votes / samples, or its
 *   probability-weighted share), as the paper's text and figures rank;
 * - `auc_logprob`: ranked by the final answer's **log-probability**, as the released code ranks
 *   (`consistency.py`/`answer_again.py` pass `answer_logprob` to `f1auc_score`): for VE, the
 *   summed token log-probability of the answer the model concludes from the rationale it answers
 *   from (src/pipelines/verify-edit).
 * Correctness is FEVER accuracy, else EM counting the alternative answers (`em_alt`) when every
 * ranked prediction has it (the reference's correctness on adversarial HotpotQA), else EM.
 */
import { bootstrapInterval } from './bootstrap';
import { feverFamily } from './fever';
import type { MetricAggregate } from '../run-files';
import type { BootstrapOptions } from './bootstrap';
import type { MetricFamily, MetricRow, Score } from './score';
import { squadFamily } from './squad';
import { groupByQuestion, hasTrials, twoLevelInterval, type TwoLevelDraw } from './trials';

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

/** The correctness an AUC ranks: FEVER accuracy, else EM with alternatives where every row has it, else EM. */
function correctnessKey(rows: readonly MetricRow[]): string {
  if (rows.every((r) => Number.isFinite(r.metrics.accuracy))) return 'accuracy';
  if (rows.every((r) => Number.isFinite(r.metrics.em_alt))) return 'em_alt';
  return 'em';
}

/**
 * The AUC under trials. Every trial's answer is a prediction of its own, ranked by its own
 * confidence: averaging a question's confidences and correctness over trials would rank
 * questions by how sure the method is on average, which is not what the AUC asks (whether a
 * prediction's confidence tells if that prediction is right). The CI is the two-level bootstrap
 * (questions, then trials within each) on the raw predictions — unlike the means' it is not
 * adjusted (trials.ts `adjustedTrials`: the adjustment moves values, and correctness must stay
 * 0/1), so it is conservative where sampling dominates; `n` counts questions; no
 * `trialSd`/`samplingShare` (the AUC is not a mean of per-row values).
 */
function aucOverTrials(groups: ReadonlyArray<ReadonlyArray<MetricRow>>, by: string, key: string, options: BootstrapOptions): MetricAggregate {
  const conf = groups.map((g) => g.map((r) => r.metrics[by]));
  const corr = groups.map((g) => g.map((r) => r.metrics[key] / 100));
  const stat = (draw: TwoLevelDraw): number => {
    const c: number[] = [];
    const k: number[] = [];
    for (let j = 0; j < draw.question.length; j++) {
      const q = draw.question[j];
      for (let at = draw.start[0][j]; at < draw.start[0][j + 1]; at++) {
        c.push(conf[q][draw.trial[0][at]]);
        k.push(corr[q][draw.trial[0][at]]);
      }
    }
    return accuracyCoverageAuc(c, k) ?? NaN;
  };
  const ci = twoLevelInterval([conf.map((v) => v.length)], stat, options);
  return { mean: accuracyCoverageAuc(conf.flat(), corr.flat()) as number, ciLow: ci.low, ciHigh: ci.high, n: groups.length, trials: Math.max(...conf.map((v) => v.length)) };
}

/** AUC of the rows that have confidence `by`, with a bootstrap CI; nothing when no row has both. */
function aucOver(rows: readonly MetricRow[], by: string, options: BootstrapOptions): MetricAggregate | undefined {
  const ranked = rows.filter((r) => Number.isFinite(r.metrics[by]));
  if (ranked.length === 0) return undefined;
  const key = correctnessKey(ranked);
  const kept = ranked.filter((r) => Number.isFinite(r.metrics[key]));
  if (kept.length === 0) return undefined;
  if (hasTrials(kept)) return aucOverTrials(groupByQuestion(kept), by, key, options);
  const conf = kept.map((r) => r.metrics[by]);
  const corr = kept.map((r) => r.metrics[key] / 100);
  const stat = (idx: ArrayLike<number>): number =>
    accuracyCoverageAuc(
      Array.from(idx, (i) => conf[i]),
      Array.from(idx, (i) => corr[i]),
    ) ?? NaN;
  const ci = bootstrapInterval(kept.length, stat, options);
  return { mean: accuracyCoverageAuc(conf, corr) as number, ciLow: ci.low, ciHigh: ci.high, n: kept.length };
}

/**
 * Registry entry: the accuracy–coverage AUC by consistency (`auc`) and by answer log-probability
 * (`auc_logprob`). Per example they keep their confidence as a helper value (`consistency`,
 * 100 × share; `answer_logprob`, natural log, ≤ 0) beside the correctness they rank.
 */
export const calibrationFamily: MetricFamily<'auc' | 'auc_logprob'> = {
  family: 'calibration',
  reference: 'Verify-and-Edit (Zhao et al. 2023) f1auc_score, after Ye & Durrett 2022',
  metrics: ['auc', 'auc_logprob'],
  datasets: ['ambignq', 'situatedqa', 'hotpotqa-adversarial', '2wikimultihop', 'fever'],
  defaults: [],
  async score(input, want) {
    const out: Score[] = [];
    let ranked = false;
    if (want.has('auc')) {
      const c = input.consistency;
      if (c === undefined || !Number.isFinite(c) || c < 0 || c > 1) out.push({ name: 'auc', score: null, reason: 'the prediction has no consistency in [0, 1]' });
      else {
        out.push({ name: 'consistency', score: 100 * c });
        ranked = true;
      }
    }
    if (want.has('auc_logprob')) {
      const lp = input.answerLogprob;
      if (lp === undefined || !Number.isFinite(lp) || lp > 0) out.push({ name: 'auc_logprob', score: null, reason: 'the prediction has no answer log-probability' });
      else {
        out.push({ name: 'answer_logprob', score: lp });
        ranked = true;
      }
    }
    if (!ranked) return out;
    // The correctness the AUC ranks, computed by its own family when the run did not ask for it.
    const key = input.dataset === 'fever' ? 'accuracy' : 'em';
    if (input.scores[key] === undefined) {
      const family = key === 'accuracy' ? feverFamily : squadFamily;
      out.push(...(await family.score(input, new Set([key]))).filter((s) => s.score !== null));
    }
    return out;
  },
  aggregate(rows, options): Record<string, MetricAggregate> {
    const out: Record<string, MetricAggregate> = {};
    const byConsistency = aucOver(rows, 'consistency', options);
    if (byConsistency) out.auc = byConsistency;
    const byLogprob = aucOver(rows, 'answer_logprob', options);
    if (byLogprob) out.auc_logprob = byLogprob;
    return out;
  },
};
