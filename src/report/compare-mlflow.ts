/**
 * A comparison in MLflow is a run of its own: tag `ambiqa.kind=comparison`, the compared runs'
 * names and MLflow ids as tags and params, and per compared run and metric the metrics
 * `delta.<metric>.<run>`, `delta.<metric>.<run>.ci_low|ci_high`, `p.<metric>.<run>` (raw),
 * `p_holm.<metric>.<run>`, `n.<metric>.<run>` and `power_n.<metric>.<run>` (questions for 80%
 * power, where defined), and with groups `group.<field>.<value>.delta.<metric>.<run>` (and its CI,
 * `p_holm`, `n`: src/tracking/group-metrics.ts). `<run>` is the run's metric-safe key (`ComparedRun.key`: characters
 * other than letters, digits, `_ - .` become `_`). The comparison JSON and its HTML report are
 * attached as artifacts. With the server unreachable the operations wait in the comparison's
 * folder for `ambiqa sync`, like a run's.
 */
import { join } from 'node:path';
import { readRunJson, runFiles } from '../run-files';
import type { Comparison } from '../run-files/comparison';
import { openTracking } from '../tracking/index';
import { groupComparisonMetrics } from '../tracking/group-metrics';
import type { Tracking } from '../tracking/types';

export interface LogComparisonOptions {
  /** The comparison's folder (buffer for an unreachable server). */
  dir: string;
  /** Files to attach (the JSON and the HTML report). */
  files?: string[];
  /** Default: the baseline run's experiment, else `ambiqa-comparisons`. */
  experimentName?: string;
  runName?: string;
  tracking?: Tracking;
}

export interface LoggedComparison {
  experimentName: string;
  experimentId: string;
  runId: string;
  runUrl: string;
}

/** The MLflow metrics of a comparison (see the module note). */
export function comparisonMetrics(c: Comparison): Record<string, number> {
  const keyOf = new Map(c.runs.map((r) => [r.name, r.key]));
  const out: Record<string, number> = {};
  const put = (key: string, value: number | null) => {
    if (value !== null && Number.isFinite(value)) out[key] = value;
  };
  for (const r of c.rows) {
    const k = `${r.metric}.${keyOf.get(r.run) ?? r.run}`;
    put(`delta.${k}`, r.meanDelta);
    put(`delta.${k}.ci_low`, r.ciLow);
    put(`delta.${k}.ci_high`, r.ciHigh);
    put(`p.${k}`, r.p);
    put(`p_holm.${k}`, r.pHolm);
    put(`n.${k}`, r.n);
    put(`power_n.${k}`, r.questionsFor80Power);
    put(`answer_changed.${keyOf.get(r.run) ?? r.run}`, r.answerChanged);
    // Under trials: the variance split of the per-question deltas.
    put(`sampling_share.${k}`, r.trials?.samplingShare ?? null);
  }
  Object.assign(out, groupComparisonMetrics(c));
  return out;
}

export function comparisonRunName(c: Comparison): string {
  const base = c.runs.find((r) => r.name === c.baseline)!;
  const others = c.runs.filter((r) => r !== base).map((r) => r.key);
  const name = `compare.${others.join('+')}.vs.${base.key}`;
  return name.length <= 200 ? name : `${name.slice(0, 190)}…`;
}

export async function logComparison(c: Comparison, options: LogComparisonOptions): Promise<LoggedComparison> {
  const tracking = options.tracking ?? (await openTracking({ bufferDir: options.dir }));
  const baseline = c.runs.find((r) => r.name === c.baseline);
  const experimentName = options.experimentName ?? (baseline?.mlflow ? experimentOf(baseline.dir) : undefined) ?? 'ambiqa-comparisons';
  const runName = options.runName ?? comparisonRunName(c);
  const tags: Record<string, string> = {
    'ambiqa.kind': 'comparison',
    'ambiqa.compare.baseline': c.baseline,
    'ambiqa.compare.runs': c.runs.map((r) => r.name).join(', '),
    'ambiqa.compare.run_ids': c.runs.map((r) => r.mlflow?.runId ?? '-').join(','),
    'ambiqa.dataset': c.dataset,
  };
  for (const r of c.runs) if (r.mlflow) tags[`ambiqa.compare.run.${r.key}`] = r.mlflow.runId;
  const tracker = await tracking.startRun({ experimentName, runName, tags, bufferDir: options.dir });
  try {
    const params: Record<string, string | number> = {
      baseline: c.baseline,
      runs: c.runs.map((r) => r.name).join(', '),
      metrics: c.metrics.join(','),
      dataset: c.dataset,
      'method.bootstrap_resamples': c.method.resamples,
      'method.seed': c.method.seed,
      'method.level': c.method.level,
      'method.test': `paired sign-flip (exact ≤ ${c.method.exactLimit} non-zero deltas, else ${c.method.permutations} seeded flips); Holm over ${c.rows.length}`,
      'method.power': 'normal approximation, 80% power, two-sided alpha 0.05, at least 6',
    };
    for (const r of c.runs) params[`run_id.${r.key}`] = r.mlflow?.runId ?? 'not tracked';
    await tracker.logParams(params);
    await tracker.logMetrics(comparisonMetrics(c));
    for (const file of options.files ?? []) await tracker.logArtifact(file);
    await tracker.finish('FINISHED');
  } catch (error) {
    await tracker.finish('FAILED').catch(() => undefined);
    throw error;
  }
  return { experimentName, experimentId: tracker.experimentId, runId: tracker.runId, runUrl: tracking.runUrl(tracker.experimentId, tracker.runId) };
}

/** The MLflow experiment a run dir was logged to (its mlflow.json). */
function experimentOf(dir: string | undefined): string | undefined {
  if (!dir) return undefined;
  return readRunJson(join(dir, runFiles.mlflow), 'mlflow')?.experimentName;
}
