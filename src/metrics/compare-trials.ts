/**
 * `compare` under trials: when either run's rows carry `trial` > 0, a question is all its trials,
 * and each paired row is recomputed by the two-level paired bootstrap of trials.ts (questions
 * paired by id; each side's trials resampled independently within the question), with the
 * variance split (sampling vs questions) and power in questions × trials. Runs without trials go
 * through compare.ts's one-level path untouched.
 *
 * A failed trial (its `error` set) is left out and its question keeps its other trials; a
 * question is left out of a pair only when no trial of one side answered it. The side-by-side
 * view keeps the question's first row's answer and adds the mean and SD of each metric over its
 * answered trials.
 *
 * Kept apart from compare.ts (each function is called from one line there) so that other changes
 * to the comparison (per-group deltas) merge without touching these.
 */
import { scoreValues, type ExampleResult } from '../run-files';
import type { ComparedQuestion, ComparedRun, PairedRow } from '../run-files/comparison';
import { mean, sampleSd, type PairedTestOptions } from './paired';
import { hasTrials, pairedTrialDelta, type PairedTrialDelta } from './trials';

/** What compare-trials reads of a compared run (CompareRunInput's fields). */
interface TrialRun {
  name: string;
  results: readonly ExampleResult[];
  metrics?: { metrics?: Record<string, { mean: number }> };
}

const isScore = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const finiteOrNull = (x: number | undefined): number | null => (x !== undefined && Number.isFinite(x) ? x : null);

/** Answered rows by question id, first-seen order, each question's rows in trial order. */
function answeredById(results: readonly ExampleResult[]): Map<string, ExampleResult[]> {
  const map = new Map<string, ExampleResult[]>();
  for (const r of results) {
    if (r.error) continue;
    const rows = map.get(r.id) ?? [];
    rows.push(r);
    map.set(r.id, rows);
  }
  for (const rows of map.values()) rows.sort((a, b) => (a.trial ?? 0) - (b.trial ?? 0));
  return map;
}

const metricValues = (rows: readonly ExampleResult[], metric: string): number[] => rows.map((r) => scoreValues(r)[metric]).filter(isScore);

/**
 * The two-level paired statistics of `metric` between two runs' rows (any number of trials per
 * question on each side), over the questions both answered: the trial-aware counterpart of
 * paired.ts's `pairedDelta`, usable by any caller that pairs a subset of questions (a group).
 */
export function pairedTrialStats(
  baselineRows: readonly ExampleResult[],
  runRows: readonly ExampleResult[],
  metric: string,
  options: PairedTestOptions = {},
): PairedTrialDelta & { baselineMean: number; runMean: number } {
  const base = answeredById(baselineRows);
  const run = answeredById(runRows);
  const a: number[][] = [];
  const b: number[][] = [];
  // Trial t is paired with trial t when both runs scored the same trials of every question.
  let aligned = true;
  const trialsWith = (rows: readonly ExampleResult[]) => rows.filter((r) => isScore(scoreValues(r)[metric])).map((r) => r.trial ?? 0).join(',');
  for (const [id, rows] of base) {
    const other = run.get(id);
    if (!other) continue;
    const va = metricValues(rows, metric);
    const vb = metricValues(other, metric);
    if (va.length === 0 || vb.length === 0) continue;
    a.push(va);
    b.push(vb);
    if (trialsWith(rows) !== trialsWith(other)) aligned = false;
  }
  return { ...pairedTrialDelta(a, b, { ...options, alignedTrials: aligned }), baselineMean: mean(a.map(mean)), runMean: mean(b.map(mean)) };
}

/**
 * Recompute every paired row of a comparison in which either side has trials (two-level; adds
 * `trials`), and say once in the notes what was done. No-op for runs without trials.
 */
export function applyTrialStatistics(rows: PairedRow[], runs: readonly TrialRun[], baseline: TrialRun, options: PairedTestOptions, notes: string[]): void {
  const withTrials = new Set(runs.filter((r) => hasTrials(r.results)).map((r) => r.name));
  if (withTrials.size === 0) return;
  const baseAnswered = answeredById(baseline.results);
  // compare.ts counted failures on each question's first row; under trials a question is only
  // left out when all its trials failed, so its count is replaced (the rows' fields below too).
  for (const run of runs) {
    if (run === baseline || (!withTrials.has(run.name) && !withTrials.has(baseline.name))) continue;
    const prefix = `${run.name} vs ${baseline.name}: `;
    const stale = notes.findIndex((n) => n.startsWith(prefix) && n.includes('failed question(s) left out'));
    if (stale >= 0) notes.splice(stale, 1);
    const runAnswered = answeredById(run.results);
    const runIds = new Set(run.results.map((r) => r.id));
    const common = [...new Set(baseline.results.map((r) => r.id))].filter((id) => runIds.has(id));
    const [inRun, inBase] = [common.filter((id) => !runAnswered.has(id)).length, common.filter((id) => !baseAnswered.has(id)).length];
    const either = common.filter((id) => !runAnswered.has(id) || !baseAnswered.has(id)).length;
    if (either > 0) notes.push(`${prefix}${either} question(s) with every trial failed left out (${inRun} in ${run.name}, ${inBase} in ${baseline.name}).`);
  }
  for (const row of rows) {
    const run = runs.find((r) => r.name === row.run);
    if (!run || (!withTrials.has(run.name) && !withTrials.has(baseline.name))) continue;
    const s = pairedTrialStats(baseline.results, run.results, row.metric, options);
    const runAnswered = answeredById(run.results);
    const runIds = new Set(run.results.map((r) => r.id));
    const ids = new Set(baseline.results.map((r) => r.id).filter((id) => runIds.has(id)));
    Object.assign(row, {
      n: s.n,
      baselineMean: s.baselineMean,
      runMean: s.runMean,
      meanDelta: s.meanDelta,
      ciLow: s.ciLow,
      ciHigh: s.ciHigh,
      p: Number.isNaN(s.p) ? null : s.p,
      pMethod: s.pMethod,
      sdDelta: finiteOrNull(s.sdDelta),
      questionsFor80Power: s.questionsFor80Power,
      // Under trials a question is left out only when every trial of one side failed.
      failedInRun: [...ids].filter((id) => !runAnswered.has(id)).length,
      failedInBaseline: [...ids].filter((id) => !baseAnswered.has(id)).length,
      trials: {
        baselineTrials: s.trials.baselineTrials,
        runTrials: s.trials.runTrials,
        baselineTrialSd: s.trials.baselineTrialSd,
        runTrialSd: s.trials.runTrialSd,
        pairing: s.trials.pairing,
        deltaTrialSd: s.trials.deltaTrialSd,
        totalVar: finiteOrNull(s.trials.totalVar),
        samplingVar: finiteOrNull(s.trials.samplingVar),
        questionVar: finiteOrNull(s.trials.questionVar),
        samplingShare: finiteOrNull(s.trials.samplingShare),
        power: { ...s.trials.power, power: s.trials.power.power.map((r) => r.map((x) => finiteOrNull(x))) },
      },
    } satisfies Partial<PairedRow>);
  }
  notes.push(
    `trials: ${[...withTrials].join(', ')} answered each question several times; a question's trials are one paired question (per-question means), the CI is the two-level bootstrap (questions, then trials within them: trial t paired with trial t where both runs answered the same trials, "pairing: trial", else each side's independently), and the variance split says how much of the spread of the per-question deltas is sampling.`,
  );
  const single = runs.filter((r) => !withTrials.has(r.name)).map((r) => r.name);
  if (single.length > 0) notes.push(`trials: ${single.join(', ')} answered each question once: no estimate of its own sampling variance, which counts under "questions" in the split.`);
  const failedTrials = runs.filter((r) => withTrials.has(r.name)).map((r) => [r.name, r.results.filter((x) => x.error).length] as const).filter(([, n]) => n > 0);
  if (failedTrials.length > 0) notes.push(`trials: failed trials left out, their questions kept with the other trials (${failedTrials.map(([name, n]) => `${n} in ${name}`).join(', ')}).`);
}

/** Under trials: each compared run's distinct questions, trials, rows, and per-question means where metrics.json has none. */
export function applyTrialRuns(compared: ComparedRun[], runs: readonly TrialRun[], metrics: readonly string[]): void {
  runs.forEach((run, i) => {
    if (!hasTrials(run.results)) return;
    const c = compared[i];
    const byId = answeredById(run.results);
    c.questions = new Set(run.results.map((r) => r.id)).size;
    c.rows = run.results.length;
    c.trials = Math.max(...[...byId.values()].map((rows) => rows.length), 1);
    for (const m of metrics) {
      if (isScore(run.metrics?.metrics?.[m]?.mean)) continue;
      const perQuestion = [...byId.values()].map((rows) => metricValues(rows, m)).filter((v) => v.length > 0).map(mean);
      if (perQuestion.length > 0) c.means[m] = mean(perQuestion);
    }
  });
}

/** Under trials: each answer of the side-by-side view gets its question's trial count, means and SDs (returns `questions`). */
export function annotateTrialAnswers(questions: ComparedQuestion[], runs: readonly TrialRun[]): ComparedQuestion[] {
  for (const run of runs) {
    if (!hasTrials(run.results)) continue;
    const byId = answeredById(run.results);
    for (const q of questions) {
      const answer = q.answers[run.name];
      const rows = byId.get(q.id);
      if (!answer || !rows) continue;
      const names = [...new Set(rows.flatMap((r) => Object.keys(scoreValues(r))))];
      const meanOf: Record<string, number> = {};
      const sdOf: Record<string, number> = {};
      for (const m of names) {
        const v = metricValues(rows, m);
        if (v.length === 0) continue;
        meanOf[m] = mean(v);
        if (v.length > 1) sdOf[m] = sampleSd(v);
      }
      answer.trials = { n: rows.length, mean: meanOf, sd: sdOf };
    }
  }
  return questions;
}
