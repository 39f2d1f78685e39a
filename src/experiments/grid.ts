import { AmbiqaError } from '../errors';
import type { Override } from './overrides';
import { splitPath } from './overrides';

/**
 * A sweep's grid: `sweep: { pipeline.options.threshold: [1,2,3,4,5], llm.temperature: [0, 0.7] }`
 * is the Cartesian product of the axes, in the order they are written, the first axis varying
 * slowest. Each point is a list of overrides applied to the base config, and has a label that
 * names it (`threshold=3,temperature=0.7`) in folder names, run names and the summary table.
 */
export interface GridAxis {
  /** The dotted field path as written. */
  key: string;
  path: string[];
  values: unknown[];
  /** Short column name: the last path segment, or the whole path where two axes share it. */
  label: string;
}

export interface GridPoint {
  index: number;
  /** Axis label → value. */
  values: Record<string, unknown>;
  overrides: Override[];
  /** `threshold=3,temperature=0.7`, safe in a folder name. */
  label: string;
}

export function gridAxes(sweep: Record<string, unknown[]>): GridAxis[] {
  const keys = Object.keys(sweep);
  if (keys.length === 0) throw new AmbiqaError('sweep: is empty', 'give at least one field path with a list of values');
  const last = (k: string) => k.split('.').pop()!;
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(last(k), (counts.get(last(k)) ?? 0) + 1);
  return keys.map((key) => {
    const values = sweep[key];
    if (!Array.isArray(values) || values.length === 0) {
      throw new AmbiqaError(`sweep.${key}: must be a non-empty list of values`);
    }
    const seen = new Set(values.map((v) => JSON.stringify(v)));
    if (seen.size !== values.length) throw new AmbiqaError(`sweep.${key}: lists a value twice`);
    return { key, path: splitPath(key), values, label: (counts.get(last(key)) ?? 0) > 1 ? key : last(key) };
  });
}

export function expandGrid(axes: GridAxis[]): GridPoint[] {
  const points: GridPoint[] = [];
  const walk = (i: number, chosen: Array<{ axis: GridAxis; value: unknown }>) => {
    if (i === axes.length) {
      points.push({
        index: points.length,
        values: Object.fromEntries(chosen.map((c) => [c.axis.label, c.value])),
        overrides: chosen.map((c) => ({ path: c.axis.path, value: structuredClone(c.value), text: `${c.axis.key}=${JSON.stringify(c.value)}` })),
        label: chosen.map((c) => `${c.axis.label}=${formatValue(c.value)}`).join(',').replace(/[^A-Za-z0-9._=,+-]/g, '_'),
      });
      return;
    }
    for (const value of axes[i].values) walk(i + 1, [...chosen, { axis: axes[i], value }]);
  };
  walk(0, []);
  return points;
}

export function formatValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return JSON.stringify(value);
}
