import type { GridAxis, GridPoint } from './grid';
import type { RunMetrics } from '../run-files';
import type { SummaryRow } from './summary';

/**
 * How a sweep shows up in MLflow's charts. The parent run gets each point's headline metrics as a
 * metric history, so that its Model metrics tab draws the ablation curve (metric against swept
 * value) with no ambiqa involved:
 *
 * - one axis of integers (a threshold, a node cap): step = the swept value itself, so the chart's
 *   default x-axis (Step) is the swept field;
 * - anything else (fractions, strings, a grid of several axes): step = the point's index, and
 *   each numeric swept field is also logged as a metric `sweep.<label>` at that step, which the
 *   chart can use as its x-axis ("X-axis: metric").
 *
 * MLflow steps are 64-bit integers, which is why fractional values cannot be steps themselves.
 */

export function sweepStep(axes: readonly GridAxis[], point: GridPoint): number {
  if (axes.length === 1) {
    const value = point.values[axes[0].label];
    if (axes[0].values.every((v) => Number.isInteger(v))) return value as number;
  }
  return point.index;
}

/** Whether steps are the swept values (true) or point indices (false); recorded as a parent tag. */
export function stepsAreValues(axes: readonly GridAxis[]): boolean {
  return axes.length === 1 && axes[0].values.every((v) => Number.isInteger(v));
}

/** The parent's metrics at one point: headline means, usage, and the numeric swept values. */
export function sweepPointMetrics(axes: readonly GridAxis[], point: GridPoint, metrics: RunMetrics): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, a] of Object.entries(metrics.metrics)) {
    out[name] = a.mean;
    // Under trials: the point's trial spread beside its mean.
    if (a.trialSd !== undefined && Number.isFinite(a.trialSd)) out[`${name}_trial_sd`] = a.trialSd;
  }
  out.llm_calls = metrics.usage.llm_calls;
  out.cache_hits = metrics.usage.cache_hits;
  // Unknown token counts (not reported by the endpoint) are left out, not charted as 0.
  if (metrics.usage.prompt_tokens !== undefined) out.prompt_tokens = metrics.usage.prompt_tokens;
  if (metrics.usage.completion_tokens !== undefined) out.completion_tokens = metrics.usage.completion_tokens;
  out.wall_seconds = metrics.usage.wall_seconds;
  for (const axis of axes) {
    const value = point.values[axis.label];
    if (typeof value === 'number' && Number.isFinite(value)) out[`sweep.${axis.label}`] = value;
    else if (typeof value === 'boolean') out[`sweep.${axis.label}`] = value ? 1 : 0;
  }
  return out;
}

/** Tags of a child run naming its swept fields (`ambiqa.sweep.pipeline.options.threshold` = `3`). */
export function sweepPointTags(axes: readonly GridAxis[], point: GridPoint): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const axis of axes) {
    const value = point.values[axis.label];
    tags[`ambiqa.sweep.${axis.key}`] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return tags;
}

/**
 * The parent's paired metrics at one point: `delta.<metric>` with `delta.<metric>.ci_low` and
 * `.ci_high` (the band, three series in MLflow's chart) and `p.<metric>` against the reference
 * point; the reference itself is 0 with a zero-width band. Under trials also
 * `delta.<metric>.sampling_share`.
 */
export function sweepPairedMetrics(row: Pick<SummaryRow, 'paired' | 'reference'>, metrics?: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (row.reference) {
    for (const m of metrics ?? []) {
      out[`delta.${m}`] = 0;
      out[`delta.${m}.ci_low`] = 0;
      out[`delta.${m}.ci_high`] = 0;
    }
    return out;
  }
  for (const p of row.paired ?? []) {
    if (!Number.isFinite(p.meanDelta)) continue;
    out[`delta.${p.metric}`] = p.meanDelta;
    out[`delta.${p.metric}.ci_low`] = p.ciLow;
    out[`delta.${p.metric}.ci_high`] = p.ciHigh;
    if (p.p !== null) out[`p.${p.metric}`] = p.p;
    // Under trials: how much of the deltas' spread is sampling (sweep deltas are two-level then).
    if (p.trials?.samplingShare != null) out[`delta.${p.metric}.sampling_share`] = p.trials.samplingShare;
  }
  return out;
}
