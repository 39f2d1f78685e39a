/**
 * Which predictions count as "correct" for the VE figures. A run's `results.jsonl` carries
 * per-example metrics on a 0–100 scale; VE's datasets are scored by EM (HotpotQA, 2Wiki) or label
 * accuracy (FEVER), both 0 or 100 per example.
 */
import { AmbiqaError } from '../errors';
import { rowKey, scoreValues, type ExampleResult } from '../run-files';

/**
 * Looked up in this order when no metric is named. EM counting the alternative answers comes
 * before EM: it is what Verify-and-Edit's code counts as correct, and what the AUCs rank.
 */
export const CORRECTNESS_METRICS = ['accuracy', 'em_alt', 'em', 'exact_match', 'str_em'] as const;

export interface CorrectnessOptions {
  /** Per-example metric deciding correctness (default: the first of CORRECTNESS_METRICS present). */
  metric?: string;
  /** A prediction is correct when the metric is at least this (default 100: fully correct). */
  atLeast?: number;
}

const canon = (name: string) => name.toLowerCase().replace(/[-\s]/g, '_');

/** Resolve the metric key as spelled in the results (case and `-`/`_` insensitive). */
export function pickMetric(results: readonly ExampleResult[], wanted: readonly string[], what: string): string {
  const present = new Set<string>();
  for (const r of results) for (const key of Object.keys(scoreValues(r))) present.add(key);
  for (const name of wanted) {
    const hit = [...present].find((key) => canon(key) === canon(name));
    if (hit) return hit;
  }
  throw new AmbiqaError(
    `no ${what} metric in the results: looked for ${wanted.join(', ')}; the results have ${[...present].join(', ') || 'no metrics'}`,
    'pass the metric to use explicitly (e.g. { metric: "f1" })',
  );
}

/**
 * Row key (`rowKey`: the id, `id#trial` under `trials: k`) → correct, for every result that has the
 * metric and no error; join a trace with `traceKey`.
 */
export function correctness(results: readonly ExampleResult[], options: CorrectnessOptions = {}): Map<string, boolean> {
  const metric = pickMetric(results, options.metric ? [options.metric] : CORRECTNESS_METRICS, 'correctness');
  const atLeast = options.atLeast ?? 100;
  const out = new Map<string, boolean>();
  for (const r of results) {
    const value = scoreValues(r)[metric];
    if (r.error || typeof value !== 'number' || Number.isNaN(value)) continue;
    out.set(rowKey(r), value >= atLeast - 1e-9);
  }
  return out;
}
