/**
 * Paired comparison of runs on the same questions: "is B better than A, by how much, and on which
 * questions?". Runs are paired question by question (by question id) against a baseline; for
 * each other run and each metric the per-question deltas (run − baseline, from the runs' own
 * per-question metrics in results.jsonl) give the mean delta, its paired bootstrap CI, a
 * sign-flip randomisation p-value, Holm's adjustment over every row of the call, and the
 * questions a paired test would need at 80% power (src/metrics/paired.ts). Runs with trials
 * (`trial` > 0 in their rows) are paired by question over all their trials, with a two-level
 * bootstrap, the variance split and power in questions × trials (compare-trials.ts).
 *
 * What cannot be paired is counted and said, never silently dropped: a question one run failed
 * (its `error` is set) is left out of that pair, a question only one run has is left out, and a
 * question without the metric in either run is left out of that metric's row.
 */
import { basename } from 'node:path';
import { AmbiqaError } from '../errors';
import type { QaPair } from '../datasets/types';
import { scoreValues, type ExampleResult, type RunMetrics } from '../run-files';
import {
  COMPARISON_KIND,
  type ComparedQuestion,
  type ComparedRun,
  type Comparison,
  type PairedRow,
} from '../run-files/comparison';
import { comparisonGroups } from './groups';
import { holm, pairedDelta, type PairedTestOptions } from './paired';
import { annotateTrialAnswers, applyTrialRuns, applyTrialStatistics } from './compare-trials';
import { dqHits } from './str-em';

/** One run as the comparison needs it: what src/report/load.ts reads from a run directory. */
export interface CompareRunInput {
  name: string;
  dir?: string;
  /** The run's resolved config.yaml (dataset and pipeline are read from it). */
  config: Record<string, unknown>;
  results: readonly ExampleResult[];
  metrics?: RunMetrics;
  mlflow?: { runId: string; experimentId: string; runUrl?: string };
  sweepValues?: Record<string, unknown>;
}

export interface CompareOptions extends PairedTestOptions {
  /** The baseline run: a run's name, a sweep point's label or a run folder's name (default: the first run). */
  baseline?: string;
  /** Metrics to compare (default: every per-question metric all runs have). */
  metrics?: readonly string[];
  /** Gold disambiguations by question id, for the per-DQ STR-EM hits of the side-by-side view. */
  gold?: ReadonlyMap<string, readonly QaPair[]>;
  createdAt?: string;
  /** Fields to pair by group as well (`--group-by`; default: the groups every run's rows recorded): src/metrics/groups.ts. */
  groupBy?: readonly string[];
}

const DEFAULT_RESAMPLES = 1000;
const DEFAULT_PERMUTATIONS = 10_000;
const DEFAULT_EXACT_LIMIT = 20;

/** `name/split` (and the ASQA question kind when set): runs with different keys are not paired. */
export function datasetKey(config: Record<string, unknown>): string {
  const d = config.dataset;
  if (typeof d === 'string') return d;
  const o = (d ?? {}) as Record<string, unknown>;
  const name = typeof o.name === 'string' ? o.name : '?';
  const split = typeof o.split === 'string' ? o.split : 'dev';
  const kind = typeof o.questions === 'string' && o.questions !== 'ambiguous' ? `/${o.questions}` : '';
  return `${name}/${split}${kind}`;
}

function datasetFile(config: Record<string, unknown>): string | undefined {
  const o = (config.dataset ?? {}) as Record<string, unknown>;
  return typeof o.path === 'string' ? basename(o.path) : undefined;
}

function pipelineName(config: Record<string, unknown>): string | undefined {
  const p = (config.pipeline ?? {}) as Record<string, unknown>;
  return typeof p.name === 'string' ? p.name : undefined;
}

/**
 * A run name made safe for MLflow metric keys: anything but letters, digits, `_`, `-` and `.`
 * becomes `_` (a sweep point `toc.pruneThreshold=0.3` → `toc.pruneThreshold_0.3`); names that
 * collide after that get `_2`, `_3`, … in run order.
 */
export function metricSafeNames(names: readonly string[]): string[] {
  const used = new Set<string>();
  return names.map((name) => {
    const base = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 120) || '_';
    let key = base;
    for (let i = 2; used.has(key); i++) key = `${base}_${i}`;
    used.add(key);
    return key;
  });
}

function findBaseline(runs: readonly CompareRunInput[], wanted: string | undefined): number {
  if (wanted === undefined) return 0;
  const matches = (r: CompareRunInput) => r.name === wanted || r.name.endsWith(`.${wanted}`) || (r.dir !== undefined && basename(r.dir) === wanted);
  const exact = runs.findIndex((r) => r.name === wanted);
  if (exact >= 0) return exact;
  const found = runs.map((r, i) => (matches(r) ? i : -1)).filter((i) => i >= 0);
  if (found.length === 1) return found[0];
  if (found.length > 1) {
    throw new AmbiqaError(`--baseline ${wanted}: matches ${found.length} runs (${found.map((i) => runs[i].name).join(', ')})`, 'give the full run name');
  }
  throw new AmbiqaError(`--baseline ${wanted}: no compared run has that name`, `the runs are: ${runs.map((r) => r.name).join(', ')}`);
}

const isScore = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function metricsOf(run: CompareRunInput): string[] {
  const names: string[] = [];
  for (const r of run.results) for (const [k, v] of Object.entries(scoreValues(r))) if (isScore(v) && !names.includes(k)) names.push(k);
  return names;
}

function runMean(run: CompareRunInput, metric: string): number {
  const agg = run.metrics?.metrics?.[metric];
  if (agg && Number.isFinite(agg.mean)) return agg.mean;
  const values = run.results.filter((r) => !r.error).map((r) => scoreValues(r)[metric]).filter(isScore);
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : NaN;
}

function byId(results: readonly ExampleResult[]): Map<string, ExampleResult> {
  const map = new Map<string, ExampleResult>();
  // Under trials a question has several rows: keep its lowest trial (trial 0 when answered).
  for (const r of results) if (!map.has(r.id) || (r.trial ?? 0) < (map.get(r.id)!.trial ?? 0)) map.set(r.id, r);
  return map;
}

const sameText = (a: string, b: string) => a.trim().replace(/\s+/g, ' ') === b.trim().replace(/\s+/g, ' ');

/** Pair `runs` against the baseline and compute every row (see the module note). */
export function compareRuns(runs: readonly CompareRunInput[], options: CompareOptions = {}): Comparison {
  if (runs.length < 2) throw new AmbiqaError(`compare needs at least two runs, got ${runs.length}`, 'pass two or more run directories, or a sweep directory with two or more points');
  const seenNames = new Map<string, CompareRunInput>();
  for (const r of runs) {
    const other = seenNames.get(r.name);
    if (other) throw new AmbiqaError(`two compared runs are both named '${r.name}' (${other.dir ?? '?'} and ${r.dir ?? '?'})`, 'compare runs with distinct names (`ambiqa run --name`)');
    seenNames.set(r.name, r);
  }
  const baseIndex = findBaseline(runs, options.baseline);
  const baseline = runs[baseIndex];
  const baseMap = byId(baseline.results);

  // Refuse before computing anything: other datasets, or no question in common.
  for (const run of runs) {
    if (run === baseline) continue;
    const [a, b] = [datasetKey(baseline.config), datasetKey(run.config)];
    const [fa, fb] = [datasetFile(baseline.config), datasetFile(run.config)];
    if (a !== b || (fa !== undefined && fb !== undefined && fa !== fb)) {
      throw new AmbiqaError(
        `cannot compare ${run.name} with ${baseline.name}: they are runs of different datasets (${b}${fb ? ` ${fb}` : ''} vs ${a}${fa ? ` ${fa}` : ''})`,
        'a paired comparison needs the same questions: compare runs of one dataset',
      );
    }
    if (!run.results.some((r) => baseMap.has(r.id))) {
      throw new AmbiqaError(
        `cannot compare ${run.name} with ${baseline.name}: they have no question in common (${run.results.length} and ${baseline.results.length} questions, no shared id)`,
        'compare runs of the same sample (the same dataset.sample and seed), or one run with a --limit of the other',
      );
    }
  }

  const available = runs.map(metricsOf);
  let metrics: string[];
  if (options.metrics && options.metrics.length > 0) {
    metrics = [...options.metrics];
    for (const m of metrics) {
      const missing = runs.filter((_, i) => !available[i].includes(m)).map((r) => r.name);
      if (missing.length > 0) {
        throw new AmbiqaError(`--metrics: ${missing.join(', ')} ${missing.length > 1 ? 'have' : 'has'} no per-question '${m}'`, `metrics every run has: ${available[baseIndex].filter((x) => available.every((a) => a.includes(x))).join(', ') || 'none'}`);
      }
    }
  } else {
    metrics = available[baseIndex].filter((m) => available.every((a) => a.includes(m)));
    if (metrics.length === 0) throw new AmbiqaError('the compared runs have no per-question metric in common', 'score them with the same metrics (`ambiqa score`)');
  }

  const keys = metricSafeNames(runs.map((r) => r.name));
  const notes: string[] = [];
  const rows: PairedRow[] = [];
  const testOptions: PairedTestOptions = {
    resamples: options.resamples ?? DEFAULT_RESAMPLES,
    seed: options.seed ?? 0,
    level: options.level ?? 0.95,
    permutations: options.permutations ?? DEFAULT_PERMUTATIONS,
    exactLimit: options.exactLimit ?? DEFAULT_EXACT_LIMIT,
  };

  for (const run of runs) {
    if (run === baseline) continue;
    const runMap = byId(run.results);
    let common = 0;
    let failedInRun = 0;
    let failedInBaseline = 0;
    let answerChanged = 0;
    let failedAny = 0;
    const both: Array<[ExampleResult, ExampleResult]> = [];
    for (const [id, b] of baseMap) {
      const r = runMap.get(id);
      if (!r) continue;
      common++;
      if (r.error) failedInRun++;
      if (b.error) failedInBaseline++;
      if (r.error || b.error) {
        failedAny++;
        continue;
      }
      both.push([b, r]);
      if (!sameText(b.output, r.output)) answerChanged++;
    }
    const onlyInRun = runMap.size - common;
    const onlyInBaseline = baseMap.size - common;
    if (onlyInRun > 0 || onlyInBaseline > 0) {
      notes.push(`${run.name} vs ${baseline.name}: ${common} questions in common paired; ${onlyInRun} only in ${run.name} and ${onlyInBaseline} only in ${baseline.name} left out.`);
    }
    if (failedInRun > 0 || failedInBaseline > 0) {
      notes.push(`${run.name} vs ${baseline.name}: ${failedAny} failed question(s) left out (${failedInRun} failed in ${run.name}, ${failedInBaseline} in ${baseline.name}).`);
    }
    for (const metric of metrics) {
      const deltas: number[] = [];
      let sumBase = 0;
      let sumRun = 0;
      for (const [b, r] of both) {
        const vb = scoreValues(b)[metric];
        const vr = scoreValues(r)[metric];
        if (!isScore(vb) || !isScore(vr)) continue;
        deltas.push(vr - vb);
        sumBase += vb;
        sumRun += vr;
      }
      const missing = both.length - deltas.length;
      if (missing > 0) notes.push(`${run.name} vs ${baseline.name}, ${metric}: ${missing} answered question(s) without the metric in one run left out.`);
      const stats = pairedDelta(deltas, testOptions);
      rows.push({
        run: run.name,
        baseline: baseline.name,
        metric,
        n: stats.n,
        baselineMean: deltas.length ? sumBase / deltas.length : NaN,
        runMean: deltas.length ? sumRun / deltas.length : NaN,
        meanDelta: stats.meanDelta,
        ciLow: stats.ciLow,
        ciHigh: stats.ciHigh,
        p: Number.isNaN(stats.p) ? null : stats.p,
        pMethod: stats.pMethod,
        pHolm: null,
        sdDelta: Number.isNaN(stats.sdDelta) ? null : stats.sdDelta,
        questionsFor80Power: stats.questionsFor80Power,
        answerChanged,
        failedInRun,
        failedInBaseline,
        onlyInRun,
        onlyInBaseline,
      });
    }
  }
  applyTrialStatistics(rows, runs, baseline, testOptions, notes);
  const adjusted = holm(rows.map((r) => r.p ?? NaN));
  rows.forEach((r, i) => (r.pHolm = Number.isNaN(adjusted[i]) ? null : adjusted[i]));

  const comparedRuns: ComparedRun[] = runs.map((run, i) => ({
    name: run.name,
    key: keys[i],
    ...(run.dir ? { dir: run.dir } : {}),
    ...(pipelineName(run.config) ? { pipeline: pipelineName(run.config) } : {}),
    dataset: datasetKey(run.config),
    questions: run.results.length,
    failed: run.results.filter((r) => r.error).length,
    ...(run.metrics?.usage ? { usage: { ...run.metrics.usage } } : {}),
    means: Object.fromEntries(metrics.map((m) => [m, runMean(run, m)]).filter(([, v]) => Number.isFinite(v as number))),
    ...(run.mlflow ? { mlflow: { runId: run.mlflow.runId, experimentId: run.mlflow.experimentId, ...(run.mlflow.runUrl ? { runUrl: run.mlflow.runUrl } : {}) } } : {}),
    ...(run.sweepValues ? { sweepValues: run.sweepValues } : {}),
  }));
  applyTrialRuns(comparedRuns, runs, metrics);

  return {
    kind: COMPARISON_KIND,
    version: 1,
    createdAt: options.createdAt ?? new Date().toISOString(),
    dataset: datasetKey(baseline.config),
    baseline: baseline.name,
    metrics,
    method: {
      resamples: testOptions.resamples!,
      seed: testOptions.seed!,
      level: testOptions.level!,
      permutations: testOptions.permutations!,
      exactLimit: testOptions.exactLimit!,
    },
    runs: comparedRuns,
    rows,
    ...comparisonGroups(runs, baseline, metrics, options.groupBy, testOptions),
    questions: annotateTrialAnswers(sideBySide(runs, baseline, options.gold), runs),
    notes,
  };
}

/** One entry per question of any run (baseline order first), each run's answer and STR-EM hits. */
function sideBySide(runs: readonly CompareRunInput[], baseline: CompareRunInput, gold?: ReadonlyMap<string, readonly QaPair[]>): ComparedQuestion[] {
  const maps = runs.map((r) => byId(r.results));
  const baseMap = byId(baseline.results);
  const ids: string[] = [...baseMap.keys()];
  const seen = new Set(ids);
  for (const m of maps) for (const id of m.keys()) if (!seen.has(id)) (seen.add(id), ids.push(id));
  return ids.map((id) => {
    const dqs = gold?.get(id);
    const answers: ComparedQuestion['answers'] = {};
    let question = '';
    runs.forEach((run, i) => {
      const r = maps[i].get(id);
      if (!r) return;
      question ||= r.question;
      const metrics = Object.fromEntries(Object.entries(scoreValues(r)).filter(([, v]) => isScore(v)));
      answers[run.name] = {
        output: r.output,
        ...(r.answer !== undefined ? { answer: r.answer } : {}),
        ...(r.error ? { error: r.error } : {}),
        metrics,
        ...(dqs && dqs.length > 0 && !r.error ? { hits: dqHits(dqs, r.output) } : {}),
      };
    });
    const base = answers[baseline.name];
    const answerChanged =
      base !== undefined && !base.error && runs.some((run) => run !== baseline && answers[run.name] && !answers[run.name].error && !sameText(answers[run.name].output, base.output));
    return {
      id,
      question,
      ...(dqs && dqs.length > 0 ? { dqs: dqs.map((q) => ({ question: q.question, shortAnswers: [...q.shortAnswers] })) } : {}),
      answers,
      answerChanged,
    };
  });
}
