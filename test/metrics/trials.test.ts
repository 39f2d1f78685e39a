import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/common/random';
import { bootstrapInterval, bootstrapMean } from '../../src/metrics/bootstrap';
import { aggregate } from '../../src/metrics/example';
import { pairedDelta } from '../../src/metrics/paired';
import { drawnMean, groupByQuestion, normalCdf, pairedTrialDelta, powerAt, trialMean, trialSplit, twoLevelInterval } from '../../src/metrics/trials';
import { aggregateResults } from '../../src/experiments/bindings';
import { scoresOf, type ExampleResult } from '../../src/run-files';

/** Seeded standard normal draws (Box–Muller over mulberry32). */
function gaussian(seed: number): () => number {
  const rng = mulberry32(seed);
  return () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

/**
 * Synthetic trials with known variance components: question i has true mean 50 + σ_q·zᵢ and each
 * of its k trials adds σ_w·z (independent), so Var(ȳᵢ) = σ_q² + σ_w²/k.
 */
function synthetic(n: number, k: number, sigmaQ: number, sigmaW: number, seed = 1): number[][] {
  const z = gaussian(seed);
  return Array.from({ length: n }, () => {
    const mu = 50 + sigmaQ * z();
    return Array.from({ length: k }, () => mu + sigmaW * z());
  });
}

const rowsOf = (values: number[][], metric = 'f1') =>
  values.flatMap((trials, q) => trials.map((v, t) => ({ id: `q${q}`, ...(t > 0 ? { trial: t } : {}), metrics: { [metric]: v } })));

const width = (a: { ciLow: number; ciHigh: number }) => a.ciHigh - a.ciLow;

describe('aggregate without trials', () => {
  it('gives exactly the numbers it gave before: the one-level bootstrap of the rows', () => {
    const values = [3, 50, 100, 0, 67, 12.5, 80];
    const rows = values.map((v, i) => ({ id: `q${i}`, metrics: { em: v, f1: 100 - v } }));
    const withTrialZero = rows.map((r) => ({ ...r, trial: 0 }));
    const bare = rows.map((r) => ({ metrics: r.metrics }));
    const agg = aggregate(rows);
    expect(agg.metrics.em).toEqual(bootstrapMean(values));
    expect(agg.metrics.f1).toEqual(bootstrapMean(values.map((v) => 100 - v)));
    expect(aggregate(withTrialZero)).toEqual(aggregate(bare));
    expect(agg.metrics.em.trials).toBeUndefined();
    expect(agg.metrics.em.trialSd).toBeUndefined();
  });
  it('DR and the AUC are unchanged by ids and trial 0', () => {
    const rows = [
      { id: 'a', metrics: { d_f1: 40, rougeLsum: 30, dr: Math.sqrt(1200), consistency: 90, em: 100 } },
      { id: 'b', metrics: { d_f1: 10, rougeLsum: 50, dr: Math.sqrt(500), consistency: 40, em: 0 } },
      { id: 'c', metrics: { d_f1: 70, rougeLsum: 20, dr: Math.sqrt(1400), consistency: 70, em: 100 } },
    ];
    const bare = rows.map((r) => ({ metrics: r.metrics }));
    expect(aggregate(rows.map((r) => ({ ...r, trial: 0 }))).metrics).toEqual(aggregate(bare).metrics);
    expect(aggregate(rows).metrics.dr.trials).toBeUndefined();
  });
  it('aggregateResults on format-3 rows without trial: the one-level numbers', () => {
    const rows = [10, 20, 90].map((v, i) => ({ id: `q${i}`, question: '?', output: '', scores: scoresOf({ em: v }) }) as unknown as ExampleResult);
    expect(aggregateResults(rows).em).toEqual(bootstrapMean([10, 20, 90]));
  });
});

describe('the two-level bootstrap', () => {
  it('with one trial per question is exactly the one-level bootstrap (same seed, same draws)', () => {
    const values = [4, 8, 15, 16, 23, 42];
    const one = bootstrapInterval(values.length, (idx) => Array.from(idx).reduce((s, i) => s + values[i], 0) / idx.length, { seed: 7 });
    const two = twoLevelInterval([values.map(() => 1)], (d) => Array.from(d.question).reduce((s, q) => s + values[q], 0) / d.question.length, { seed: 7 });
    expect(two).toEqual(one);
  });
  it('weighs every question the same, whatever its number of trials', () => {
    const agg = trialMean([[0, 0, 0], [100]]);
    expect(agg.mean).toBe(50);
    expect(agg.n).toBe(2);
    expect(agg.trials).toBe(3);
    // Pooled within SD from the one question with trials: all equal, 0.
    expect(agg.trialSd).toBe(0);
  });
  it('groups rows by question id in trial order', () => {
    const groups = groupByQuestion([{ id: 'b', trial: 1 }, { id: 'a' }, { id: 'b' }, { id: 'a', trial: 2 }, { id: 'a', trial: 1 }]);
    expect(groups.map((g) => g.map((r) => `${r.id}${r.trial ?? 0}`))).toEqual([['b0', 'b1'], ['a0', 'a1', 'a2']]);
  });
  it('is seeded: the same rows give the same interval', () => {
    const v = synthetic(30, 3, 10, 10);
    expect(trialMean(v, { seed: 5 })).toEqual(trialMean(v, { seed: 5 }));
    expect(trialMean(v, { seed: 5 })).not.toEqual(trialMean(v, { seed: 6 }));
  });
});

describe('trial statistics on synthetic rows with known variance components', () => {
  it('samplingShare near σ_w²/k / (σ_q² + σ_w²/k) and trialSd near σ_w', () => {
    // σ_q = 10, σ_w = 20, k = 4: sampling 100 of a total 200 → 0.5.
    const agg = aggregate(rowsOf(synthetic(400, 4, 10, 20))).metrics.f1;
    expect(agg.n).toBe(400);
    expect(agg.trials).toBe(4);
    expect(agg.trialSd!).toBeGreaterThan(19);
    expect(agg.trialSd!).toBeLessThan(21);
    expect(agg.samplingShare!).toBeGreaterThan(0.42);
    expect(agg.samplingShare!).toBeLessThan(0.58);
    // σ_q = 20, σ_w = 10, k = 2: 50 of 450 → 0.111.
    const mostlyQuestions = trialMean(synthetic(400, 2, 20, 10, 2));
    expect(mostlyQuestions.samplingShare!).toBeGreaterThan(0.06);
    expect(mostlyQuestions.samplingShare!).toBeLessThan(0.17);
  });
  it('no sampling noise: share 0 and trial SD 0', () => {
    const agg = trialMean(synthetic(50, 3, 10, 0));
    expect(agg.trialSd).toBeCloseTo(0, 10);
    expect(agg.samplingShare).toBeCloseTo(0, 10);
  });
  it('the interval widens with sampling noise, the question effects held fixed', () => {
    const quiet = trialMean(synthetic(200, 3, 10, 0, 3));
    const noisy = trialMean(synthetic(200, 3, 10, 30, 3));
    expect(width(noisy)).toBeGreaterThan(1.5 * width(quiet));
  });
  it('matches the width the variance components predict; rows taken as questions would be too narrow', () => {
    // Var(mean) = (σ_q² + σ_w²/k)/n = (400 + 25/5)/300; the CI spans about 2·1.96·sd.
    const values = synthetic(300, 5, 20, 5, 4);
    const agg = trialMean(values);
    const expected = 2 * 1.96 * Math.sqrt((400 + 25 / 5) / 300);
    expect(width(agg)).toBeGreaterThan(0.85 * expected);
    expect(width(agg)).toBeLessThan(1.15 * expected);
    const naive = bootstrapMean(values.flat());
    expect(width(naive)).toBeLessThan(0.6 * width(agg));
  });
  it('does not count sampling twice: sampling-dominated, the width is the true one, where raw two-level resampling is ~30% wider', () => {
    // σ_q = 0, σ_w = 20, k = 3: Var(mean) = 400/3/300. Resampling raw values at both levels adds
    // (k − 1)/k of the sampling variance again: width × sqrt(1 + 2/3) ≈ 1.29.
    const values = synthetic(300, 3, 0, 20, 7);
    const expected = 2 * 1.96 * Math.sqrt(400 / 3 / 300);
    const agg = trialMean(values);
    expect(width(agg)).toBeGreaterThan(0.87 * expected);
    expect(width(agg)).toBeLessThan(1.13 * expected);
    const raw = twoLevelInterval([values.map((v) => v.length)], (d) => drawnMean(values, d));
    expect((raw.high - raw.low) / expected).toBeGreaterThan(1.18);
  });
  it('aggregateResults groups format-3 rows by id and trial', () => {
    const values = synthetic(40, 3, 10, 10, 9);
    const rows = values.flatMap((trials, q) =>
      trials.map((v, t) => ({ id: `q${q}`, ...(t > 0 ? { trial: t } : {}), question: '?', output: '', scores: scoresOf({ f1: v }) }) as unknown as ExampleResult),
    );
    const agg = aggregateResults(rows).f1;
    expect(agg).toEqual(trialMean(values));
    expect(agg.n).toBe(40);
  });
});

describe('families with their own aggregate under trials', () => {
  it('DR is sqrt of the means of per-question means, over questions, with trials', () => {
    const rows = [
      { id: 'a', metrics: { d_f1: 40, rougeLsum: 30, dr: 0 } },
      { id: 'a', trial: 1, metrics: { d_f1: 60, rougeLsum: 30, dr: 0 } },
      { id: 'a', trial: 2, metrics: { d_f1: 80, rougeLsum: 30, dr: 0 } },
      { id: 'b', metrics: { d_f1: 20, rougeLsum: 10, dr: 0 } },
    ];
    const dr = aggregate(rows).metrics.dr;
    // Per question: d_f1 60 and 20 → 40; rougeLsum 30 and 10 → 20.
    expect(dr.mean).toBeCloseTo(Math.sqrt(40 * 20), 10);
    expect(dr.n).toBe(2);
    expect(dr.trials).toBe(3);
    expect(dr.ciLow).toBeLessThanOrEqual(dr.mean);
    expect(dr.ciHigh).toBeGreaterThanOrEqual(dr.mean);
  });
  it('the AUC ranks every trial’s prediction, and counts questions', () => {
    const rows = [
      { id: 'a', metrics: { consistency: 90, em: 100 } },
      { id: 'a', trial: 1, metrics: { consistency: 20, em: 0 } },
      { id: 'b', metrics: { consistency: 80, em: 100 } },
      { id: 'b', trial: 1, metrics: { consistency: 10, em: 0 } },
    ];
    const auc = aggregate(rows).metrics.auc;
    const flat = aggregate(rows.map((r) => ({ metrics: r.metrics }))).metrics.auc;
    expect(auc.mean).toBe(flat.mean);
    expect(auc.n).toBe(2);
    expect(auc.trials).toBe(2);
  });
});

describe('the paired two-level bootstrap', () => {
  it('with one trial on each side is the paired bootstrap of paired.ts', () => {
    const a = [10, 40, 55, 20, 90, 60, 35];
    const b = [20, 35, 70, 30, 95, 60, 50];
    const withTrials = pairedTrialDelta(a.map((x) => [x]), b.map((x) => [x]), { seed: 3 });
    const plain = pairedDelta(b.map((x, i) => x - a[i]), { seed: 3 });
    // The same draws; the mean of differences and the difference of means differ in the last bits only.
    for (const key of ['meanDelta', 'ciLow', 'ciHigh', 'sdDelta'] as const) expect(withTrials[key]).toBeCloseTo(plain[key], 10);
    expect([withTrials.n, withTrials.p, withTrials.pMethod, withTrials.questionsFor80Power]).toEqual([plain.n, plain.p, plain.pMethod, plain.questionsFor80Power]);
    expect(withTrials.trials.baselineTrialSd).toBeNull();
    expect(withTrials.trials.samplingVar).toBe(0);
  });
  it('splits the variance of the deltas into sampling and questions near the known components', () => {
    // Both sides share each question's effect (it cancels); the run adds δ = 4 plus a question
    // effect of SD 5; every trial adds noise of SD 20: Var(dᵢ) = 25 + 2·400/4 = 225, sampling 200.
    const z = gaussian(11);
    const n = 400;
    const k = 4;
    const base: number[][] = [];
    const run: number[][] = [];
    for (let i = 0; i < n; i++) {
      const mu = 50 + 15 * z();
      const shift = 4 + 5 * z();
      base.push(Array.from({ length: k }, () => mu + 20 * z()));
      run.push(Array.from({ length: k }, () => mu + shift + 20 * z()));
    }
    const d = pairedTrialDelta(base, run);
    expect(d.trials.samplingShare!).toBeGreaterThan(0.8);
    expect(d.trials.samplingShare!).toBeLessThan(0.97);
    expect(d.trials.samplingVar).toBeGreaterThan(170);
    expect(d.trials.samplingVar).toBeLessThan(230);
    expect(d.trials.baselineTrialSd!).toBeGreaterThan(18.5);
    expect(d.trials.runTrialSd!).toBeLessThan(21.5);
    expect(d.meanDelta).toBeGreaterThan(d.ciLow);
    expect(d.meanDelta).toBeLessThan(d.ciHigh);
    // Power: more trials need fewer questions (sampling dominates), never fewer than at k = ∞.
    const { trials, questionsNeeded, questions, power } = d.trials.power;
    expect(trials).toEqual([1, 2, 4, 5, 10]);
    for (let j = 1; j < trials.length; j++) expect(questionsNeeded[j]!).toBeLessThanOrEqual(questionsNeeded[j - 1]!);
    expect(questionsNeeded[0]! / questionsNeeded[4]!).toBeGreaterThan(3);
    // At the run's own k the table agrees with paired.ts's count from the deltas' SD (±1%).
    expect(Math.abs(questionsNeeded[2]! - d.questionsFor80Power!) / d.questionsFor80Power!).toBeLessThan(0.01);
    expect(questions).toEqual([200, 400, 800, 1600]);
    for (const col of trials.keys()) for (let i = 1; i < questions.length; i++) expect(power[i][col]).toBeGreaterThanOrEqual(power[i - 1][col]);
  });
  it('its interval widens with sampling noise', () => {
    const z = gaussian(12);
    const effects = Array.from({ length: 150 }, () => [50 + 10 * z(), 3 + 4 * z()]);
    const sides = (sigmaW: number) => {
      const noise = gaussian(13);
      return [effects.map(([mu]) => [0, 1, 2].map(() => mu + sigmaW * noise())), effects.map(([mu, s]) => [0, 1, 2].map(() => mu + s + sigmaW * noise()))];
    };
    const [qa, qb] = sides(0);
    const [na, nb] = sides(25);
    const quiet = pairedTrialDelta(qa, qb);
    const noisy = pairedTrialDelta(na, nb);
    expect(quiet.trials.samplingShare).toBeCloseTo(0, 10);
    expect(width(noisy)).toBeGreaterThan(2 * width(quiet));
    // And the width is what the components predict: 2·1.96·sqrt(Var(dᵢ)/n), Var(dᵢ) = 16 + 2·625/3.
    const expected = 2 * 1.96 * Math.sqrt((16 + (2 * 625) / 3) / 150);
    expect(width(noisy)).toBeGreaterThan(0.85 * expected);
    expect(width(noisy)).toBeLessThan(1.15 * expected);
  });
  it('pairs trial t with trial t when the sides share random numbers: the shared sampling noise cancels', () => {
    // Trial t of both configurations draws the same sample (common random numbers): the same
    // noise on both sides, and the run adds 2 everywhere. Independent resampling of the sides
    // sees two noisy sides; trial pairing sees constant differences.
    const z = gaussian(21);
    const base: number[][] = [];
    const run: number[][] = [];
    for (let i = 0; i < 60; i++) {
      const mu = 50 + 10 * z();
      const noise = [z(), z(), z()].map((e) => 20 * e);
      base.push(noise.map((e) => mu + e));
      run.push(noise.map((e) => mu + e + 2 + (i % 2)));
    }
    const byTrial = pairedTrialDelta(base, run, { alignedTrials: true });
    const bySide = pairedTrialDelta(base, run);
    expect(byTrial.trials.pairing).toBe('trial');
    expect(bySide.trials.pairing).toBe('question');
    expect(byTrial.meanDelta).toBeCloseTo(2.5, 10);
    expect(byTrial.trials.deltaTrialSd).toBeCloseTo(0, 10);
    expect(byTrial.trials.samplingShare).toBeCloseTo(0, 10);
    // Trial pairing: only the question part (deltas 2 and 3, SD 0.5): about 2·1.96·0.5/√60 = 0.25.
    expect(width(byTrial)).toBeLessThan(0.35);
    // Side resampling: sampling noise of SD 20 on each side, cut only by the deltas' range [2, 3].
    expect(width(bySide)).toBeGreaterThan(0.99);
    // It never leaves the range of the per-question deltas (2 and 3).
    expect(byTrial.ciLow).toBeGreaterThanOrEqual(2);
    expect(byTrial.ciHigh).toBeLessThanOrEqual(3);
  });
  it('with independent sides, trial pairing and side resampling agree', () => {
    const z = gaussian(22);
    const base = Array.from({ length: 300 }, () => { const mu = 50 + 10 * z(); return [0, 1, 2].map(() => mu + 15 * z()); });
    const run = base.map((v) => { const mu = v.reduce((x, y) => x + y) / 3; return [0, 1, 2].map(() => mu + 3 + 15 * z()); });
    const byTrial = pairedTrialDelta(base, run, { alignedTrials: true });
    const bySide = pairedTrialDelta(base, run);
    expect(width(byTrial) / width(bySide)).toBeGreaterThan(0.85);
    expect(width(byTrial) / width(bySide)).toBeLessThan(1.15);
    expect(Math.abs(byTrial.trials.samplingShare! - bySide.trials.samplingShare!)).toBeLessThan(0.1);
  });
  it('a baseline with one trial has no sampling estimate of its own', () => {
    const d = pairedTrialDelta([[10], [20], [30]], [[10, 20], [30, 30], [50, 40]]);
    expect(d.trials.baselineTrials).toBe(1);
    expect(d.trials.runTrials).toBe(2);
    expect(d.trials.baselineTrialSd).toBeNull();
    expect(d.trials.runTrialSd).toBeCloseTo(Math.sqrt((50 + 0 + 50) / 3), 10);
    expect(d.meanDelta).toBeCloseTo((5 + 10 + 15) / 3, 10);
  });
});

describe('power helpers', () => {
  it('normalCdf matches known quantiles', () => {
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 6);
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(-0.8416212335729143)).toBeCloseTo(0.2, 6);
  });
  it('powerAt: 80% where |δ|/sd = z.975 + z.8', () => {
    expect(powerAt(1.959963984540054 + 0.8416212335729143, 1)).toBeCloseTo(0.8, 3);
    expect(powerAt(0, 1)).toBeCloseTo(0.05, 6);
  });
  it('trialSplit: a single question has no split', () => {
    expect(trialSplit([[1, 2, 3]]).samplingShare).toBeUndefined();
  });
});
