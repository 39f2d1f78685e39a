import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/common/random';
import { compareRuns, type CompareRunInput } from '../../src/metrics/compare';
import { pairedTrialDelta } from '../../src/metrics/trials';
import { comparisonSchema } from '../../src/run-files/comparison';
import { scoresOf, type ExampleResult } from '../../src/run-files';

function row(id: string, trial: number, f1: number, error?: string): ExampleResult {
  return { id, question: `${id}?`, output: `answer ${id} ${trial}`, format: 3, scores: scoresOf({ f1 }), ...(trial > 0 ? { trial } : {}), ...(error ? { error } : {}) } as ExampleResult;
}

const run = (name: string, results: ExampleResult[]): CompareRunInput => ({ name, dir: `/runs/${name}`, config: { dataset: { name: 'ambignq', split: 'dev' }, pipeline: { name: 've' } }, results });

/** Runs of n questions × k trials: question effect shared, the run adds `shift`, trials add noise of SD sigmaW. */
function pair(n: number, k: number, shift: number, sigmaW: number, seed = 1): [CompareRunInput, CompareRunInput, number[][], number[][]] {
  const rng = mulberry32(seed);
  const z = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const a: number[][] = [];
  const b: number[][] = [];
  for (let i = 0; i < n; i++) {
    const mu = 50 + 15 * z();
    a.push(Array.from({ length: k }, () => mu + sigmaW * z()));
    b.push(Array.from({ length: k }, () => mu + shift + sigmaW * z()));
  }
  const rows = (values: number[][]) => values.flatMap((v, i) => v.map((x, t) => row(`q${i}`, t, x)));
  return [run('base', rows(a)), run('hot', rows(b)), a, b];
}

describe('compare with trials', () => {
  it('pairs questions over all their trials with the two-level bootstrap and the variance split', () => {
    const [base, hot, a, b] = pair(60, 3, 5, 10);
    const c = compareRuns([base, hot], { createdAt: 'fixed' });
    expect(comparisonSchema.parse(JSON.parse(JSON.stringify(c)))).toBeTruthy();
    const [r] = c.rows;
    // Both runs answered trials 0–2 of every question: trial t is paired with trial t.
    const expected = pairedTrialDelta(a, b, { resamples: 1000, seed: 0, permutations: 10_000, exactLimit: 20, alignedTrials: true });
    expect(r.n).toBe(60);
    expect(r.meanDelta).toBeCloseTo(expected.meanDelta, 10);
    expect([r.ciLow, r.ciHigh]).toEqual([expected.ciLow, expected.ciHigh]);
    expect(r.p).toBe(expected.p);
    expect(r.trials).toMatchObject({ baselineTrials: 3, runTrials: 3, pairing: 'trial' });
    // Question effects cancel: nearly all of the deltas' spread is sampling.
    expect(r.trials!.samplingShare!).toBeGreaterThan(0.7);
    expect(r.trials!.power.trials).toEqual([1, 2, 3, 5, 10]);
    // The compared runs count questions, not rows.
    expect(c.runs.map((x) => [x.questions, x.rows, x.trials])).toEqual([[60, 180, 3], [60, 180, 3]]);
    expect(c.runs[0].means.f1).toBeCloseTo(a.reduce((s, v) => s + v.reduce((p, x) => p + x, 0) / 3, 0) / 60, 10);
    expect(c.notes.some((n) => n.startsWith('trials:'))).toBe(true);
    // Side by side: trial 0's answer with the question's trial mean and SD.
    const q0 = c.questions[0].answers.hot;
    expect(q0.output).toBe('answer q0 0');
    expect(q0.trials!.n).toBe(3);
    expect(q0.trials!.mean.f1).toBeCloseTo((b[0][0] + b[0][1] + b[0][2]) / 3, 10);
  });

  it('keeps the first row of a question from standing for all its trials (the one-level view would)', () => {
    // Trial 0 says nothing (same on both sides); the run is better on trials 1 and 2.
    const base = run('base', ['a', 'b', 'c', 'd', 'e', 'f'].flatMap((id) => [row(id, 0, 50), row(id, 1, 0), row(id, 2, 0)]));
    const hot = run('hot', ['a', 'b', 'c', 'd', 'e', 'f'].flatMap((id) => [row(id, 0, 50), row(id, 1, 30), row(id, 2, 60)]));
    const [r] = compareRuns([base, hot]).rows;
    expect(r.meanDelta).toBeCloseTo(30, 10);
    expect(r.baselineMean).toBeCloseTo(50 / 3, 10);
    expect(r.p).toBeCloseTo(2 / 64, 10);
  });

  it('a failed trial is left out and its question kept; a question with every trial failed is left out', () => {
    const base = run('base', [row('a', 0, 10), row('a', 1, 20), row('b', 0, 30), row('b', 1, 40), row('c', 0, 0), row('c', 1, 0)]);
    const hot = run('hot', [row('a', 0, 0, 'boom'), row('a', 1, 40), row('b', 0, 50), row('b', 1, 50), row('c', 0, 0, 'x'), row('c', 1, 0, 'y')]);
    const c = compareRuns([base, hot]);
    const [r] = c.rows;
    expect(r.n).toBe(2);
    // Question a has trials 0, 1 in base but only 1 in hot: trials are not aligned.
    expect(r.trials!.pairing).toBe('question');
    // a: 40 − 15 = 25; b: 50 − 35 = 15.
    expect(r.meanDelta).toBeCloseTo(20, 10);
    expect(r.failedInRun).toBe(1);
    expect(c.notes.join('\n')).toContain('failed trials left out, their questions kept with the other trials (3 in hot).');
    // Question a failed on trial 0 only and is kept; c failed on every trial.
    expect(c.notes.join('\n')).toContain('hot vs base: 1 question(s) with every trial failed left out (1 in hot, 0 in base).');
    expect(c.notes.join('\n')).not.toContain('failed question(s) left out');
  });

  it('a run with trials against one without: the single side has no sampling estimate', () => {
    const base = run('base', ['a', 'b', 'c'].map((id, i) => row(id, 0, 10 * i)));
    const hot = run('hot', ['a', 'b', 'c'].flatMap((id, i) => [row(id, 0, 10 * i + 5), row(id, 1, 10 * i + 15)]));
    const c = compareRuns([base, hot]);
    expect(c.rows[0].trials).toMatchObject({ baselineTrials: 1, runTrials: 2, baselineTrialSd: null });
    expect(c.rows[0].meanDelta).toBeCloseTo(10, 10);
    expect(c.notes.join('\n')).toContain('base answered each question once');
  });

  it('the side-by-side answer is trial 0’s even when a later trial was written first', () => {
    const base = run('base', [row('a', 1, 10), row('a', 0, 20), row('b', 0, 5), row('b', 1, 5)]);
    const hot = run('hot', [row('a', 2, 30), row('a', 1, 30), row('a', 0, 40), row('b', 0, 5), row('b', 1, 5), row('b', 2, 5)]);
    const c = compareRuns([base, hot]);
    expect(c.questions[0].answers.hot.output).toBe('answer a 0');
    expect(c.questions[0].answers.base.metrics.f1).toBe(20);
  });

  it('runs without trials: no trials field, no note (the one-level comparison as before)', () => {
    const base = run('base', ['a', 'b', 'c'].map((id, i) => row(id, 0, 10 * i)));
    const hot = run('hot', ['a', 'b', 'c'].map((id, i) => row(id, 0, 10 * i + 5)));
    const c = compareRuns([base, hot]);
    expect(c.rows[0].trials).toBeUndefined();
    expect(c.runs[0].trials).toBeUndefined();
    expect(c.notes).toEqual([]);
    expect(c.questions[0].answers.hot.trials).toBeUndefined();
  });
});
