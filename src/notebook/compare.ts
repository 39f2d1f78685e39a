/**
 * `compare(...)` for the library and notebooks: the same paired comparison as `ambiqa compare`
 * (src/metrics/compare.ts), answered as a notebook wants it — the paired table and the
 * side-by-side questions as danfojs DataFrames, the delta figure, and the HTML report and the
 * MLflow run on request.
 */
import { join } from 'node:path';
import { artifactsDir } from '../config/paths';
import type { CompareOptions } from '../metrics/compare';
import { comparisonFigure } from '../plots/compare';
import type { Figure } from '../plots/types';
import { comparisonRunName, logComparison, type LoggedComparison } from '../report/compare-mlflow';
import { compareDirs, writeComparison, writeComparisonReport } from '../report/compare';
import type { Comparison } from '../run-files/comparison';
import { toDataFrame, type DataFrameLike } from './frame';

/** A run or sweep: its directory, or anything with a `dir` (what `run()`, `sweep()`, `loadRun()` return). */
export type Comparable = string | { dir: string };

export interface CompareCallOptions extends Omit<CompareOptions, 'gold'> {
  /** Dataset file with the gold disambiguations of rows written before format 3 (default: the baseline's dataset.path); format-3 rows carry their own. */
  dataPath?: string;
}

export interface ComparisonResult {
  comparison: Comparison;
  /** One row per run and metric: delta, CI, p, Holm p, questions for 80% power, answer changed. */
  table: DataFrameLike;
  /** One row per question: each run's output and metric values, and the deltas against the baseline. */
  questions: DataFrameLike;
  /** The delta of each run against the baseline with its 95% CI, one colour per metric. */
  figure: Figure;
  /** Notes for people (partial overlaps, failed questions, gold not found). */
  notes: string[];
  /** Write comparison.json and the side-by-side report (default folder: artifacts/comparisons/<name>/); returns the report's path. */
  save(dir?: string): { json: string; report: string };
  /** Log the comparison to MLflow as its own run (tag ambiqa.kind=comparison) with the report attached. */
  log(options?: { dir?: string; experimentName?: string }): Promise<LoggedComparison>;
}

/** The paired table as plain records (what `table` holds). */
export function comparisonRows(c: Comparison): Array<Record<string, string | number | null>> {
  return c.rows.map((r) => ({
    run: r.run,
    baseline: r.baseline,
    metric: r.metric,
    n: r.n,
    baseline_mean: round(r.baselineMean),
    run_mean: round(r.runMean),
    delta: round(r.meanDelta),
    ci_low: round(r.ciLow),
    ci_high: round(r.ciHigh),
    p: r.p,
    p_holm: r.pHolm,
    questions_for_80pct_power: r.questionsFor80Power,
    answer_changed: r.answerChanged,
    left_out: r.failedInRun + r.failedInBaseline + r.onlyInRun + r.onlyInBaseline,
    // Under trials: trials per question (baseline/run) and the sampling share of the deltas' variance.
    ...(r.trials ? { trials: `${r.trials.baselineTrials}/${r.trials.runTrials}`, sampling_share: r.trials.samplingShare === null ? null : round(r.trials.samplingShare) } : {}),
  }));
}

/** The side-by-side questions as plain records (what `questions` holds). */
export function comparisonQuestionRows(c: Comparison): Array<Record<string, string | number | boolean | null>> {
  const others = c.runs.filter((r) => r.name !== c.baseline).map((r) => r.name);
  return c.questions.map((q) => {
    const row: Record<string, string | number | boolean | null> = { id: q.id, question: q.question, answer_changed: q.answerChanged };
    for (const run of c.runs) {
      const a = q.answers[run.name];
      row[`${run.name}: output`] = a ? (a.error ? `[error] ${a.error}` : a.output) : null;
      if (a?.hits) row[`${run.name}: DQ hits`] = `${a.hits.filter(Boolean).length}/${a.hits.length}`;
    }
    const base = q.answers[c.baseline];
    for (const metric of c.metrics) {
      for (const run of others) {
        const a = q.answers[run];
        const vb = base && !base.error ? base.metrics[metric] : undefined;
        const vr = a && !a.error ? a.metrics[metric] : undefined;
        row[`Δ ${metric}${others.length > 1 ? ` ${run}` : ''}`] = vb === undefined || vr === undefined ? null : round(vr - vb);
      }
    }
    return row;
  });
}

const round = (x: number) => (Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

/**
 * Compare runs (or sweeps: each point is a run) question by question against a baseline (the
 * first run by default; `baseline` names another). See docs/compare.md.
 */
export function compare(runs: readonly Comparable[], options: CompareCallOptions = {}): ComparisonResult {
  const dirs = runs.map((r) => (typeof r === 'string' ? r : r.dir));
  const { comparison, notes } = compareDirs(dirs, options);
  const defaultDir = () => join(artifactsDir(), 'comparisons', comparisonRunName(comparison).replace(/[^A-Za-z0-9_.+-]/g, '_'));
  const save = (dir = defaultDir()) => ({
    json: writeComparison(comparison, join(dir, 'comparison.json')),
    report: writeComparisonReport(comparison, join(dir, 'report.html')),
  });
  return {
    comparison,
    table: toDataFrame(comparisonRows(comparison)),
    questions: toDataFrame(comparisonQuestionRows(comparison)),
    figure: comparisonFigure(comparison),
    notes: [...comparison.notes, ...notes],
    save,
    async log(logOptions = {}) {
      const dir = logOptions.dir ?? defaultDir();
      const files = save(dir);
      const logged = await logComparison(comparison, { dir, files: [files.json, files.report], ...(logOptions.experimentName ? { experimentName: logOptions.experimentName } : {}) });
      comparison.mlflow = logged;
      save(dir);
      return logged;
    },
  };
}
