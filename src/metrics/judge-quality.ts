/**
 * Judge quality: does a judge's P separate right from wrong on this run? For each graded judge
 * (purpose) of a run, from the silver-labelled judgments stored with its results
 * (judge-labels.ts), the statistics a reader needs before trusting a threshold sweep:
 *
 * - AUC of P against the silver label (Mann–Whitney: the chance that a random positive gets a
 *   higher P than a random negative, ties counting one half), with a 95% bootstrap CI that
 *   resamples *questions*, not judgments — the nodes of one tree, the pairs of one COMBO
 *   question are judged on the same passages and are not independent. A resample that happens
 *   to hold one class only has no AUC and is left out; the CI is null when more than half are.
 * - Brier score (mean squared error of P against the 0/1 label), mean P per label, the share of
 *   labelled judgments at or above 0.5 (what the papers' threshold keeps), counts.
 * - `separates`: at least `minPerClass` labelled judgments in each class and a CI that excludes
 *   0.5; `verdict`: one plain sentence that says so, or that a threshold sweep of this judge
 *   cannot show an effect.
 * - A reliability diagram (10 equal-width P bins: mean P against the share of positives) and P
 *   histograms by label (20 bins), for the report and notebooks.
 * - The same statistics of the raw P (before calibration) when the pipeline calibrated.
 *
 * Why 10 per class: with 10 positives and 10 negatives the AUC's standard error is about 0.1
 * even for a good judge (Hanley & McNeil 1982: 0.11 at AUC 0.75), so its 95% interval spans
 * ±0.2 and a percentile bootstrap over so few points is itself unreliable; below that a run
 * cannot tell a judge that separates from one that does not.
 */
import type { ExampleResult, JudgeDiagnostics, JudgeRawDiagnostics, LabelledJudgment, ReliabilityBin } from '../run-files';
import { seededRandom } from '../datasets/sample';
import { percentile } from './bootstrap';
import { judgePurposes, silverLabel } from './judge-labels';
import type { MethodJudge } from './methods';

export interface JudgeQualityOptions {
  /** Bootstrap resamples (default 1000). */
  resamples?: number;
  /** Bootstrap seed (default 0), so a run's CI is reproducible. */
  seed?: number;
  /** Labelled judgments needed in each class (default 10). */
  minPerClass?: number;
  /** Reliability-diagram bins (default 10). */
  reliabilityBins?: number;
  /** Histogram bins (default 20). */
  histogramBins?: number;
  /**
   * The methods' graded judges (the method catalog's `judges`): each judge's silver label and the
   * order reports list them in. A purpose none of them has reads `silverLabel: 'unknown'` and
   * comes after theirs, by name.
   */
  judges?: readonly MethodJudge[];
}

export const DEFAULT_MIN_PER_CLASS = 10;

/**
 * AUC of scores against binary labels (Mann–Whitney U / (n₊ n₋), ties counted one half via
 * average ranks). NaN when either class is empty.
 */
export function auc(scores: ArrayLike<number>, labels: ArrayLike<boolean>): number {
  const n = scores.length;
  let nPos = 0;
  for (let i = 0; i < n; i++) if (labels[i]) nPos++;
  const nNeg = n - nPos;
  if (nPos === 0 || nNeg === 0) return NaN;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => scores[a] - scores[b]);
  let rankSumPos = 0;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && scores[order[j + 1]] === scores[order[i]]) j++;
    const averageRank = (i + j) / 2 + 1; // 1-based ranks i+1 … j+1
    for (let k = i; k <= j; k++) if (labels[order[k]]) rankSumPos += averageRank;
    i = j + 1;
  }
  return (rankSumPos - (nPos * (nPos + 1)) / 2) / (nPos * nNeg);
}

/**
 * Percentile-bootstrap CI of the AUC resampling clusters (questions) with replacement. Resamples
 * with one class empty are dropped; null when more than half of them were.
 */
export function clusteredAucInterval(
  clusters: ReadonlyArray<ReadonlyArray<{ p: number; label: boolean }>>,
  options: { resamples?: number; seed?: number; level?: number } = {},
): { low: number; high: number } | null {
  const n = clusters.length;
  if (n === 0) return null;
  const resamples = options.resamples ?? 1000;
  const level = options.level ?? 0.95;
  const rng = seededRandom(options.seed ?? 0);
  const values: number[] = [];
  const scores: number[] = [];
  const labels: boolean[] = [];
  for (let b = 0; b < resamples; b++) {
    scores.length = 0;
    labels.length = 0;
    for (let i = 0; i < n; i++) {
      for (const j of clusters[Math.floor(rng() * n)]) {
        scores.push(j.p);
        labels.push(j.label);
      }
    }
    const v = auc(scores, labels);
    if (!Number.isNaN(v)) values.push(v);
  }
  if (values.length * 2 < resamples) return null;
  values.sort((a, b) => a - b);
  return { low: percentile(values, (100 * (1 - level)) / 2), high: percentile(values, (100 * (1 + level)) / 2) };
}

/** Two judges' P on the same labelled items, grouped by question (the bootstrap's clusters). */
export type PairedJudgments = ReadonlyArray<ReadonlyArray<{ pA: number; pB: number; label: boolean }>>;

/**
 * Paired comparison of two judges' AUC on the same items: ΔAUC = AUC(B) − AUC(A) with a
 * percentile-bootstrap 95% CI resampling questions (both judges see the same resample, so what
 * the items share cancels), and a two-sided bootstrap p: twice the smaller share of resampled Δ
 * on either side of 0 (at least 1/resamples). Resamples with one class empty are dropped; null
 * when more than half are.
 */
export function pairedAucDifference(
  clusters: PairedJudgments,
  options: { resamples?: number; seed?: number; level?: number } = {},
): { delta: number; low: number; high: number; p: number; resamples: number } | null {
  const n = clusters.length;
  if (n === 0) return null;
  const all = clusters.flat();
  const delta = auc(all.map((j) => j.pB), all.map((j) => j.label)) - auc(all.map((j) => j.pA), all.map((j) => j.label));
  if (Number.isNaN(delta)) return null;
  const resamples = options.resamples ?? 2000;
  const level = options.level ?? 0.95;
  const rng = seededRandom(options.seed ?? 0);
  const deltas: number[] = [];
  for (let b = 0; b < resamples; b++) {
    const a: number[] = [];
    const bScores: number[] = [];
    const labels: boolean[] = [];
    for (let i = 0; i < n; i++) {
      for (const j of clusters[Math.floor(rng() * n)]) {
        a.push(j.pA);
        bScores.push(j.pB);
        labels.push(j.label);
      }
    }
    const d = auc(bScores, labels) - auc(a, labels);
    if (!Number.isNaN(d)) deltas.push(d);
  }
  if (deltas.length * 2 < resamples) return null;
  deltas.sort((x, y) => x - y);
  const below = deltas.filter((d) => d <= 0).length / deltas.length;
  const above = deltas.filter((d) => d >= 0).length / deltas.length;
  return {
    delta,
    low: percentile(deltas, (100 * (1 - level)) / 2),
    high: percentile(deltas, (100 * (1 + level)) / 2),
    p: Math.min(1, Math.max(2 * Math.min(below, above), 1 / deltas.length)),
    resamples: deltas.length,
  };
}

const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((s, x) => s + x, 0) / xs.length);
const nanToNull = (x: number): number | null => (Number.isNaN(x) ? null : x);

interface Labelled {
  p: number;
  label: boolean;
}

function pointStatistics(clusters: Labelled[][], options: JudgeQualityOptions): JudgeRawDiagnostics {
  const all = clusters.flat();
  const pos = all.filter((j) => j.label).map((j) => j.p);
  const neg = all.filter((j) => !j.label).map((j) => j.p);
  const a = auc(all.map((j) => j.p), all.map((j) => j.label));
  const ci = Number.isNaN(a) ? null : clusteredAucInterval(clusters.filter((c) => c.length > 0), options);
  return {
    auc: nanToNull(a),
    aucCiLow: ci?.low ?? null,
    aucCiHigh: ci?.high ?? null,
    brier: mean(all.map((j) => (j.p - (j.label ? 1 : 0)) ** 2)),
    meanPPositive: mean(pos),
    meanPNegative: mean(neg),
    shareAtLeastHalf: mean(all.map((j) => (j.p >= 0.5 ? 1 : 0))),
  };
}

/** Equal-width bins of [0, 1]: the bin of p (P = 1 falls in the last bin). */
function binOf(p: number, bins: number): number {
  return Math.min(bins - 1, Math.max(0, Math.floor(p * bins)));
}

export function reliabilityBins(judgments: readonly Labelled[], bins = 10): ReliabilityBin[] {
  const sums = Array.from({ length: bins }, () => ({ n: 0, p: 0, pos: 0 }));
  for (const j of judgments) {
    const b = sums[binOf(j.p, bins)];
    b.n += 1;
    b.p += j.p;
    if (j.label) b.pos += 1;
  }
  return sums.flatMap((b, i) => (b.n === 0 ? [] : [{ low: i / bins, high: (i + 1) / bins, n: b.n, meanP: b.p / b.n, positiveRate: b.pos / b.n }]));
}

export function labelHistogram(judgments: readonly Labelled[], bins = 20): { edges: number[]; positive: number[]; negative: number[] } {
  const positive = new Array<number>(bins).fill(0);
  const negative = new Array<number>(bins).fill(0);
  for (const j of judgments) (j.label ? positive : negative)[binOf(j.p, bins)] += 1;
  return { edges: Array.from({ length: bins + 1 }, (_, i) => i / bins), positive, negative };
}

const fmt = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(2));

/** The one-sentence verdict (summary line, report). */
export function judgeVerdict(d: Omit<JudgeDiagnostics, 'verdict' | 'separates'>, minPerClass: number): { separates: boolean; verdict: string } {
  const cannot = 'so a threshold sweep of this judge cannot show an effect';
  if (d.positives < minPerClass || d.negatives < minPerClass) {
    return {
      separates: false,
      verdict: `${d.purpose}: only ${d.positives} right and ${d.negatives} wrong labelled judgments (fewer than ${minPerClass} in a class), ${cannot}.`,
    };
  }
  if (d.auc === null || d.aucCiLow === null || d.aucCiHigh === null) {
    return { separates: false, verdict: `${d.purpose}: AUC ${fmt(d.auc)} has no confidence interval (most resampled question sets held one label only), ${cannot}.` };
  }
  const aucText = `AUC ${fmt(d.auc)} [${fmt(d.aucCiLow)}, ${fmt(d.aucCiHigh)}]`;
  if (d.aucCiLow <= 0.5 && d.aucCiHigh >= 0.5) {
    return { separates: false, verdict: `${d.purpose}: P does not separate right from wrong (${aucText} includes 0.5), ${cannot}.` };
  }
  if (d.aucCiHigh < 0.5) {
    return { separates: true, verdict: `${d.purpose}: P is inverted — wrong judgments get higher P than right ones (${aucText}).` };
  }
  const share = d.shareAtLeastHalf ?? 0;
  const atHalf =
    share === 0
      ? 'but no P reaches 0.5, so the 0.5 threshold rejects everything'
      : share === 1
        ? 'but every P is at or above 0.5, so the 0.5 threshold keeps everything'
        : `${Math.round(100 * share)}% of labelled judgments are at or above 0.5`;
  return { separates: true, verdict: `${d.purpose}: P separates right from wrong (${aucText}); ${atHalf}.` };
}

/**
 * Diagnostics of one judge from its judgments grouped by question (one inner list per question).
 * Null when the run has no judgment of this purpose.
 */
export function judgeQuality(
  purpose: string,
  perQuestion: ReadonlyArray<ReadonlyArray<LabelledJudgment>>,
  options: JudgeQualityOptions = {},
): JudgeDiagnostics | null {
  const own = perQuestion.map((q) => q.filter((j) => j.purpose === purpose));
  const judgments = own.reduce((s, q) => s + q.length, 0);
  if (judgments === 0) return null;
  const minPerClass = options.minPerClass ?? DEFAULT_MIN_PER_CLASS;
  const labelled = own.map((q) => q.filter((j): j is LabelledJudgment & { label: boolean } => j.label !== null));
  const clusters: Labelled[][] = labelled.map((q) => q.map((j) => ({ p: j.p, label: j.label })));
  const flat = clusters.flat();
  const stats = pointStatistics(clusters, options);
  const calibrated = labelled.some((q) => q.some((j) => j.pRaw !== undefined));
  const raw = calibrated ? pointStatistics(labelled.map((q) => q.map((j) => ({ p: j.pRaw ?? j.p, label: j.label }))), options) : undefined;
  const base = {
    purpose,
    silverLabel: silverLabel(purpose, options.judges ?? []),
    judgments,
    labelled: flat.length,
    positives: flat.filter((j) => j.label).length,
    negatives: flat.filter((j) => !j.label).length,
    auc: stats.auc,
    aucCiLow: stats.aucCiLow,
    aucCiHigh: stats.aucCiHigh,
    brier: stats.brier,
    meanPPositive: stats.meanPPositive,
    meanPNegative: stats.meanPNegative,
    shareAtLeastHalf: stats.shareAtLeastHalf,
  };
  return {
    ...base,
    ...judgeVerdict(base, minPerClass),
    minPerClass,
    questions: clusters.filter((c) => c.length > 0).length,
    ...(raw ? { raw } : {}),
    reliability: reliabilityBins(flat, options.reliabilityBins ?? 10),
    histogram: labelHistogram(flat, options.histogramBins ?? 20),
  };
}

/**
 * Every judge of a run, keyed by purpose (`metrics.json` `judges`), from its answered results'
 * stored judgments. Empty when no result carries judgments (a run without graded judges, or
 * results written before judge diagnostics existed).
 */
export function runJudgeDiagnostics(results: readonly ExampleResult[], options: JudgeQualityOptions = {}): Record<string, JudgeDiagnostics> {
  // One cluster per question: under `trials: k` a question's k rows judged the same gold, so their
  // judgments resample together (a run without trials has one row a question, as before).
  const byQuestion = new Map<string, Array<NonNullable<ExampleResult['judgments']>[number]>>();
  for (const r of results) {
    if (r.error !== undefined) continue;
    byQuestion.set(r.id, [...(byQuestion.get(r.id) ?? []), ...(r.judgments ?? [])]);
  }
  const perQuestion = [...byQuestion.values()];
  const purposes = new Set(perQuestion.flat().map((j) => j.purpose));
  const known = judgePurposes(options.judges ?? []);
  const ordered = [...known.filter((p) => purposes.has(p)), ...[...purposes].filter((p) => !known.includes(p)).sort()];
  const out: Record<string, JudgeDiagnostics> = {};
  for (const purpose of ordered) {
    const d = judgeQuality(purpose, perQuestion, options);
    if (d) out[purpose] = d;
  }
  return out;
}
