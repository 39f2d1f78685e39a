/**
 * Statistics of repeated trials (`trials: k`): each question answered k times, so a score varies
 * for two reasons — which questions were asked, and what the model sampled on a given trial. The
 * run's figure must not treat the k rows of one question as k independent questions (that would
 * shrink its interval by about √k), and it should say how much of its uncertainty is sampling.
 *
 * - Per question, the mean over its trials; the run's mean is the mean of those per-question
 *   means (every question weighs the same, whatever its number of trials).
 * - The interval is a two-level percentile bootstrap: each resample draws n questions with
 *   replacement, then, within each drawn question, its k trials with replacement (seeded, the
 *   same PRNG and percentile rule as bootstrap.ts), on values adjusted so that the sampling
 *   variance is not counted twice (`adjustedTrials`, Davison & Hinkley 1997 §3.8). A question
 *   with one trial draws none, so with one trial everywhere the two-level interval is exactly
 *   the one-level one.
 * - `trialSd`: the pooled within-question SD, sqrt(Σᵢ Σₜ (yᵢₜ − ȳᵢ)² / Σᵢ (kᵢ − 1)) over the
 *   questions with two or more trials.
 * - `samplingShare`: the method-of-moments (one-way random-effects ANOVA) split of the variance of
 *   a per-question mean, Var(ȳᵢ) = σ²_q + σ²_w / kᵢ: σ²_w is estimated by trialSd², the total by
 *   the sample variance S²_m of the per-question means, and the share is
 *   σ̂²_w · mean(1/kᵢ) / S²_m, clipped to [0, 1] (it estimates the same share of the variance of
 *   the run's mean, which is Var(ȳᵢ)/n). Absent with fewer than two questions or no question
 *   with two trials; 0 when nothing varies.
 *
 * Rows without `trial` (or all at trial 0) are a run without trials: every aggregate is then
 * computed exactly as before (bootstrap.ts on the per-row values).
 */
import { seededRandom } from '../datasets/sample';
import type { MetricAggregate } from '../run-files';
import { bootstrapMean, percentile, type BootstrapOptions } from './bootstrap';
import { MIN_QUESTIONS_FOR_SIGNIFICANCE, mean, questionsForPower, sampleSd, signFlipTest, Z_80, Z_975, type PairedDelta, type PairedTestOptions } from './paired';

/** What the trial statistics read of a row: its question and trial (absent = 0). */
export interface TrialKeyed {
  id?: string;
  trial?: number;
}

/** Whether any row is a later trial (trial > 0): only then are rows grouped by question. */
export function hasTrials(rows: readonly TrialKeyed[]): boolean {
  return rows.some((r) => (r.trial ?? 0) > 0);
}

/**
 * Rows grouped by question id, in first-seen order, each group in trial order. A row without an
 * id is a question of its own (rows handed in by hand, not from a run).
 */
export function groupByQuestion<T extends TrialKeyed>(rows: readonly T[]): T[][] {
  const groups = new Map<string, T[]>();
  const out: T[][] = [];
  for (const r of rows) {
    if (r.id === undefined) {
      out.push([r]);
      continue;
    }
    let g = groups.get(r.id);
    if (!g) {
      g = [];
      groups.set(r.id, g);
      out.push(g);
    }
    g.push(r);
  }
  for (const g of out) g.sort((a, b) => (a.trial ?? 0) - (b.trial ?? 0));
  return out;
}

/**
 * One resample of the two-level bootstrap. `question[j]` is the source question of draw j; for
 * each side s, the drawn trials of draw j are `trial[s][start[s][j] … start[s][j+1])` (indexes
 * into that question's trials on that side).
 */
export interface TwoLevelDraw {
  question: Int32Array;
  start: Int32Array[];
  trial: Int32Array[];
}

/**
 * Percentile CI of any statistic under the two-level bootstrap. `sizes[s][i]` is the number of
 * trials of question i on side s (one side for a run, two for a paired difference: the sides keep
 * their question together and draw their trials independently). Questions with one trial on a
 * side draw no random number there, so all-ones sizes reproduce `bootstrapInterval` exactly.
 */
export function twoLevelInterval(
  sizes: readonly (readonly number[])[],
  statistic: (draw: TwoLevelDraw) => number,
  options: BootstrapOptions = {},
): { low: number; high: number } {
  const n = sizes[0]?.length ?? 0;
  if (n === 0) return { low: NaN, high: NaN };
  const resamples = options.resamples ?? 1000;
  const level = options.level ?? 0.95;
  const rng = seededRandom(options.seed ?? 0);
  const stats = new Float64Array(resamples);
  const draw: TwoLevelDraw = {
    question: new Int32Array(n),
    start: sizes.map(() => new Int32Array(n + 1)),
    trial: sizes.map((s) => new Int32Array(n * Math.max(1, ...s))),
  };
  for (let b = 0; b < resamples; b++) {
    for (let j = 0; j < n; j++) draw.question[j] = Math.floor(rng() * n);
    sizes.forEach((side, s) => {
      const start = draw.start[s];
      const trial = draw.trial[s];
      let at = 0;
      for (let j = 0; j < n; j++) {
        start[j] = at;
        const k = side[draw.question[j]];
        if (k === 1) trial[at++] = 0;
        else for (let t = 0; t < k; t++) trial[at++] = Math.floor(rng() * k);
      }
      start[n] = at;
    });
    stats[b] = statistic(draw);
  }
  stats.sort();
  return { low: percentile(stats, (100 * (1 - level)) / 2), high: percentile(stats, (100 * (1 + level)) / 2) };
}

/** Mean over the drawn questions of the mean of each one's drawn trials, on side `s`. */
export function drawnMean(values: readonly (readonly number[])[], draw: TwoLevelDraw, s = 0): number {
  const start = draw.start[s];
  const trial = draw.trial[s];
  let total = 0;
  for (let j = 0; j < draw.question.length; j++) {
    const v = values[draw.question[j]];
    let sum = 0;
    for (let at = start[j]; at < start[j + 1]; at++) sum += v[trial[at]];
    total += sum / (start[j + 1] - start[j]);
  }
  return total / draw.question.length;
}

/** Pooled within-question variance Σᵢ Σₜ (yᵢₜ − ȳᵢ)² / Σᵢ (kᵢ − 1); NaN when no question has two trials. */
export function pooledWithinVariance(values: readonly (readonly number[])[]): number {
  let ss = 0;
  let df = 0;
  for (const v of values) {
    if (v.length < 2) continue;
    const m = mean(v);
    for (const x of v) ss += (x - m) ** 2;
    df += v.length - 1;
  }
  return df === 0 ? NaN : ss / df;
}

/** Mean of 1/kᵢ: how much of σ²_w reaches an average per-question mean. */
const meanInverse = (values: readonly (readonly number[])[]): number => mean(values.map((v) => 1 / v.length));

/** The sampling share `s / total` clipped to [0, 1]; 0 when nothing varies; undefined when unknown. */
function share(sampling: number, total: number): number | undefined {
  if (!Number.isFinite(sampling) || !Number.isFinite(total)) return undefined;
  if (total <= 0) return sampling > 0 ? 1 : 0;
  return Math.min(1, Math.max(0, sampling / total));
}

/** The variance split of a run's per-question means (see the module note). */
export interface TrialSplit {
  /** Trials per question: the most any question has. */
  trials: number;
  /** Pooled within-question SD (NaN: no question with two trials). */
  trialSd: number;
  /** Sample variance of the per-question means, S²_m (NaN with fewer than two questions). */
  totalVar: number;
  /** σ̂²_w · mean(1/kᵢ): the part of S²_m expected from sampling alone. */
  samplingVar: number;
  samplingShare: number | undefined;
}

export function trialSplit(values: readonly (readonly number[])[]): TrialSplit {
  const within = pooledWithinVariance(values);
  const means = values.map(mean);
  const totalVar = means.length < 2 ? NaN : sampleSd(means) ** 2;
  const samplingVar = within * meanInverse(values);
  return { trials: Math.max(0, ...values.map((v) => v.length)), trialSd: Math.sqrt(within), totalVar, samplingVar, samplingShare: share(samplingVar, totalVar) };
}

/**
 * The question-level shrink factor of the adjusted two-level bootstrap: sqrt(1 − sampling/total),
 * so that the resampled question means carry only the between-question part of their variance
 * (the trials' resampling adds the sampling part back). 1 where the split is unknown (one question,
 * or no question with two trials: nothing is adjusted), 0 where sampling accounts for it all.
 */
function questionShrink(samplingVar: number, totalVar: number): number {
  if (!Number.isFinite(samplingVar) || !Number.isFinite(totalVar)) return 1;
  if (totalVar <= 0) return samplingVar > 0 ? 0 : 1;
  return Math.sqrt(Math.max(0, 1 - samplingVar / totalVar));
}

/** sqrt(k/(k − 1)): makes a resample of k residuals carry the unbiased within variance (0 for k = 1: nothing to resample). */
const residualScale = (k: number): number => (k > 1 ? Math.sqrt(k / (k - 1)) : 0);

/**
 * Values prepared for the adjusted two-level bootstrap (Davison & Hinkley 1997, §3.8): trial t
 * of question i becomes ȳ + d·(ȳᵢ − ȳ) + cᵢ·(yᵢₜ − ȳᵢ), ȳ the mean of per-question means,
 * d = questionShrink, cᵢ = sqrt(kᵢ/(kᵢ − 1)). Resampling raw values at both levels would count
 * the sampling variance twice — once inside the spread of the per-question means, once more from
 * the trials — and widen the interval by up to sqrt(1 + (k − 1)/k) where sampling dominates;
 * with these values the bootstrap variance of the mean is (about) S²_m/n, the moment estimate.
 * One trial everywhere: the values are returned unchanged.
 */
export function adjustedTrials(values: readonly (readonly number[])[]): number[][] {
  const means = values.map(mean);
  const grand = mean(means);
  const split = trialSplit(values);
  const d = questionShrink(split.samplingVar, split.totalVar);
  if (d === 1 && values.every((v) => v.length === 1)) return values.map((v) => [...v]);
  return values.map((v, i) => v.map((y) => grand + d * (means[i] - grand) + residualScale(v.length) * (y - means[i])));
}

/**
 * The aggregate of one metric from its values per question (each inner array: the question's
 * trials): mean of per-question means, two-level bootstrap CI (on `adjustedTrials`), `trials`,
 * `trialSd`, `samplingShare`.
 */
export function trialMean(values: readonly (readonly number[])[], options: BootstrapOptions = {}): MetricAggregate {
  const kept = values.filter((v) => v.length > 0);
  const n = kept.length;
  const m = n === 0 ? NaN : mean(kept.map(mean));
  const adjusted = adjustedTrials(kept);
  let ci = twoLevelInterval([kept.map((v) => v.length)], (draw) => drawnMean(adjusted, draw), options);
  // A mean of per-question means cannot leave the range they span (a 0–100 metric stays in it);
  // the adjusted values can, so the interval is cut there.
  if (n > 0 && kept.some((v) => v.length > 1)) {
    const means = kept.map(mean);
    ci = { low: Math.max(ci.low, Math.min(...means)), high: Math.min(ci.high, Math.max(...means)) };
  }
  const split = trialSplit(kept);
  return {
    mean: m,
    ciLow: ci.low,
    ciHigh: ci.high,
    n,
    trials: Math.max(1, split.trials),
    ...(Number.isFinite(split.trialSd) ? { trialSd: split.trialSd } : {}),
    ...(split.samplingShare !== undefined ? { samplingShare: split.samplingShare } : {}),
  };
}

const isValue = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Per question (`groupByQuestion`), the finite values of `metric` over its trials (questions without any left out). */
export function valuesByQuestion(groups: readonly (readonly { metrics: Record<string, number> }[])[], metric: string): number[][] {
  return groups.map((g) => g.map((r) => r.metrics[metric]).filter(isValue)).filter((v) => v.length > 0);
}

/**
 * A run's aggregate of one per-row metric: under trials, `trialMean` over the rows grouped by
 * question; without, the mean of the rows' values with bootstrap.ts's CI, exactly as before.
 */
export function metricAggregate(rows: readonly (TrialKeyed & { metrics: Record<string, number> })[], metric: string, options: BootstrapOptions = {}): MetricAggregate | undefined {
  if (hasTrials(rows)) {
    const values = valuesByQuestion(groupByQuestion(rows), metric);
    return values.length > 0 ? trialMean(values, options) : undefined;
  }
  const values = rows.map((r) => r.metrics[metric]).filter(isValue);
  return values.length > 0 ? bootstrapMean(values, options) : undefined;
}

// ----------------------------------------------------------------------- paired, with trials

/** Standard normal CDF (Abramowitz & Stegun 7.1.26 for erf; absolute error below 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** Power of the two-sided α = 0.05 paired test of a true mean difference δ whose estimate has variance `variance`. */
export function powerAt(delta: number, variance: number): number {
  if (!Number.isFinite(delta) || !Number.isFinite(variance)) return NaN;
  if (variance <= 0) return delta === 0 ? 0.05 : 1;
  const z = Math.abs(delta) / Math.sqrt(variance);
  return normalCdf(z - Z_975) + normalCdf(-z - Z_975);
}

/**
 * Power in questions × trials: questions needed at each trial count, and the power at a few sizes.
 * A column's k′ is the trials of both sides; a side run with one trial per question has no
 * estimate of its sampling variance, which then counts under questions (see PairedTrialSplit).
 */
export interface TrialPower {
  /** Trials per question (both sides) of each column. */
  trials: number[];
  /** Questions needed for 80% power at each column's trials (null: δ = 0 or no spread estimated). */
  questionsNeeded: Array<number | null>;
  /** Question counts of the power grid's rows. */
  questions: number[];
  /** power[i][j]: the power with questions[i] questions at trials[j] trials (normal approximation). */
  power: number[][];
}

/** The variance split of a paired difference under trials (per question: Var(dᵢ) = σ²_qΔ + σ²_w,A/k_A + σ²_w,B/k_B). */
export interface PairedTrialSplit {
  /** Trials per question on each side (the most any question has). */
  baselineTrials: number;
  runTrials: number;
  /** Pooled within-question SD on each side (null: that side has no question with two trials). */
  baselineTrialSd: number | null;
  runTrialSd: number | null;
  /**
   * `trial`: both sides answered the same trials of every question, and trial t is paired with
   * trial t (they share sample indexes); `question`: trials resampled independently per side.
   */
  pairing: 'trial' | 'question';
  /** Trial pairing: the pooled within-question SD of the trial-by-trial differences. */
  deltaTrialSd: number | null;
  /** Sample variance of the per-question deltas dᵢ (NaN with fewer than two questions). */
  totalVar: number;
  /**
   * The part of it from sampling: σ̂²_w,A · mean(1/k_A,ᵢ) + σ̂²_w,B · mean(1/k_B,ᵢ) (an unestimated
   * side counts 0); under trial pairing σ̂²_w,Δ · mean(1/kᵢ) from the trial differences.
   */
  samplingVar: number;
  /** The rest, from which questions were asked: max(0, totalVar − samplingVar). */
  questionVar: number;
  /** samplingVar / totalVar clipped to [0, 1]; undefined when unknown. */
  samplingShare: number | undefined;
  power: TrialPower;
}

export interface PairedTrialDelta extends PairedDelta {
  trials: PairedTrialSplit;
}

/** Trial counts of the power table: 1, 2, 5, 10 and the run's own, at most 100 (config's cap). */
export function powerTrialCounts(current: number): number[] {
  return [...new Set([1, 2, 5, 10, current])].filter((k) => k >= 1 && k <= 100).sort((a, b) => a - b);
}

/**
 * A paired difference between two runs on the same questions with trials: `baseline[i]` and
 * `run[i]` are question i's trial values on each side (the same question at the same index).
 *
 * - dᵢ = mean(run trials) − mean(baseline trials); Δ = mean dᵢ.
 * - CI: the two-level bootstrap with the question kept together on both sides and each side's
 *   trials drawn independently within it, adjusted as `adjustedTrials` (the per-question deltas
 *   shrunk by sqrt(1 − samplingShare) toward Δ, each side's residuals scaled by sqrt(k/(k − 1))).
 * - p: the sign-flip test of paired.ts on the dᵢ (under "no difference" each question's mean
 *   delta is as likely to have had the other sign); questionsFor80Power from their SD, as paired.ts
 *   (the design as run: each side at its own trials).
 * - the variance split and power in questions × trials (see `PairedTrialSplit`): the questions
 *   needed at k′ trials are ((z₀.₉₇₅ + z₀.₈)² (σ̂²_qΔ + (σ̂²_w,A + σ̂²_w,B)/k′) / Δ²), at least 6;
 *   the power of n′ questions at k′ trials is Φ(|Δ|/√V − z₀.₉₇₅) + Φ(−|Δ|/√V − z₀.₉₇₅) with
 *   V = (σ̂²_qΔ + (σ̂²_w,A + σ̂²_w,B)/k′)/n′.
 */
export function pairedTrialDelta(
  baseline: readonly (readonly number[])[],
  run: readonly (readonly number[])[],
  options: PairedTestOptions & { alignedTrials?: boolean } = {},
): PairedTrialDelta {
  if (baseline.length !== run.length) throw new Error(`pairedTrialDelta: ${baseline.length} baseline questions but ${run.length} run questions`);
  const keep = baseline.map((b, i) => b.length > 0 && run[i].length > 0);
  const a = baseline.filter((_, i) => keep[i]);
  const b = run.filter((_, i) => keep[i]);
  const deltas = a.map((v, i) => mean(b[i]) - mean(v));
  const test = signFlipTest(deltas, options);
  const sd = sampleSd(deltas);
  const meanDelta = mean(deltas);
  const withinA = pooledWithinVariance(a);
  const withinB = pooledWithinVariance(b);
  const wA = Number.isFinite(withinA) ? withinA : 0;
  const wB = Number.isFinite(withinB) ? withinB : 0;
  // Trial-level pairing where both sides answered the same trials of every question: trial t of
  // one configuration and trial t of the other share their sample indexes (common random
  // numbers), so their difference is the unit, and its within-question variance is the sampling
  // part of a delta — smaller than wA + wB wherever the two trials' samples agree.
  const aligned = options.alignedTrials === true && a.every((v, i) => v.length === b[i].length) && a.some((v) => v.length > 1);
  const diffs = aligned ? a.map((v, i) => v.map((x, t) => b[i][t] - x)) : [];
  const withinD = aligned ? pooledWithinVariance(diffs) : NaN;
  const wD = aligned ? (Number.isFinite(withinD) ? withinD : 0) : wA + wB;
  const samplingVar = a.length === 0 ? NaN : aligned ? wD * meanInverse(diffs) : wA * meanInverse(a) + wB * meanInverse(b);
  const totalVar = sd ** 2;
  // Adjusted two-level bootstrap (see `adjustedTrials`): the run side carries the shrunk
  // per-question delta plus its scaled residuals, the baseline side its scaled residuals only
  // (aligned: the differences themselves, one side).
  const shrink = questionShrink(samplingVar, totalVar);
  const plain = a.every((v) => v.length === 1) && b.every((v) => v.length === 1);
  let ci: { low: number; high: number };
  if (aligned) {
    const adjD = diffs.map((v, i) => v.map((y) => meanDelta + shrink * (deltas[i] - meanDelta) + residualScale(v.length) * (y - deltas[i])));
    ci = twoLevelInterval([diffs.map((v) => v.length)], (draw) => drawnMean(adjD, draw), options);
  } else {
    const adjA = plain ? a : a.map((v) => { const m = mean(v); return v.map((y) => residualScale(v.length) * (y - m)); });
    const adjB = plain ? b : b.map((v, i) => { const m = mean(v); return v.map((y) => meanDelta + shrink * (deltas[i] - meanDelta) + residualScale(v.length) * (y - m)); });
    ci = twoLevelInterval(
      [a.map((v) => v.length), b.map((v) => v.length)],
      (draw) => drawnMean(adjB, draw, 1) - drawnMean(adjA, draw, 0),
      options,
    );
  }
  // A mean of per-question deltas cannot leave the range they span; the adjusted values can.
  if (!plain && deltas.length > 0) ci = { low: Math.max(ci.low, Math.min(...deltas)), high: Math.min(ci.high, Math.max(...deltas)) };
  const questionVar = Math.max(0, totalVar - samplingVar);
  const baselineTrials = Math.max(0, ...a.map((v) => v.length));
  const runTrials = Math.max(0, ...b.map((v) => v.length));
  const trialCounts = powerTrialCounts(Math.max(baselineTrials, runTrials, 1));
  const perQuestion = (k: number) => questionVar + wD / k;
  const tiny = Math.abs(meanDelta) <= 1e-9 * Math.max(1, sd);
  const questionsNeeded = trialCounts.map((k) =>
    !Number.isFinite(meanDelta) || !Number.isFinite(totalVar) || tiny ? null : Math.max(MIN_QUESTIONS_FOR_SIGNIFICANCE, Math.ceil(((Z_975 + Z_80) ** 2 * perQuestion(k)) / meanDelta ** 2 - 1e-9)),
  );
  const n = a.length;
  const questions = [...new Set([Math.max(1, Math.ceil(n / 2)), n, 2 * n, 4 * n])].filter((q) => q > 0);
  const power = questions.map((q) => trialCounts.map((k) => (Number.isFinite(totalVar) ? powerAt(meanDelta, perQuestion(k) / q) : NaN)));
  return {
    n,
    meanDelta,
    ciLow: ci.low,
    ciHigh: ci.high,
    p: test.p,
    pMethod: test.method,
    sdDelta: sd,
    questionsFor80Power: questionsForPower(meanDelta, sd),
    trials: {
      baselineTrials,
      runTrials,
      baselineTrialSd: Number.isFinite(withinA) ? Math.sqrt(withinA) : null,
      runTrialSd: Number.isFinite(withinB) ? Math.sqrt(withinB) : null,
      pairing: aligned ? 'trial' : 'question',
      deltaTrialSd: aligned && Number.isFinite(withinD) ? Math.sqrt(withinD) : null,
      totalVar,
      samplingVar,
      questionVar,
      samplingShare: share(samplingVar, totalVar),
      power: { trials: trialCounts, questionsNeeded, questions, power },
    },
  };
}
