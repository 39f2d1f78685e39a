/**
 * danfojs DataFrames for notebooks. danfojs (with tfjs) is large and slow to load, so it is
 * required lazily, only when a notebook asks for a DataFrame; nothing in the core imports it.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { projectRoot } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { Row } from './records';

/** The parts of a danfojs DataFrame the helpers use; the object is the real thing. */
export interface DataFrameLike {
  columns: string[];
  values: unknown[][];
  shape: number[];
  print(): void;
  [key: string]: unknown;
}

let danfo: { DataFrame: new (data: unknown, options?: unknown) => DataFrameLike } | undefined;

/** The danfojs module (loaded on first use). */
export function danfojs(): { DataFrame: new (data: unknown, options?: unknown) => DataFrameLike; [key: string]: unknown } {
  if (!danfo) {
    try {
      danfo = createRequire(join(projectRoot, 'package.json'))('danfojs');
    } catch (error) {
      throw new AmbiqaError(`cannot load danfojs: ${(error as Error).message.split('\n')[0]}`, 'run `npm install` (danfojs 1.2.0 is a dependency, with the xlsx override)');
    }
  }
  return danfo!;
}

/**
 * Records (plain objects, e.g. from records.ts) → DataFrame. Columns keep the order of the first
 * record's keys, then any new ones.
 */
export function toDataFrame(records: readonly object[]): DataFrameLike {
  const rows = records as ReadonlyArray<Record<string, unknown>>;
  const columns: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
  const { DataFrame } = danfojs();
  if (rows.length === 0) return new DataFrame([], { columns });
  // danfojs infers one dtype per column; null becomes NaN for numbers, keep strings as strings.
  return new DataFrame(rows.map((r) => columns.map((c) => (r[c] === undefined ? null : r[c]))), { columns });
}

export function isDataFrame(value: unknown): value is DataFrameLike {
  return (
    typeof value === 'object' && value !== null && Array.isArray((value as DataFrameLike).columns) &&
    Array.isArray((value as DataFrameLike).values) && typeof (value as DataFrameLike).print === 'function'
  );
}

/** DataFrame → records (for display). */
export function frameRows(df: DataFrameLike): Row[] {
  return df.values.map((values) => Object.fromEntries(df.columns.map((c, i) => [c, values[i] as Row[string]])));
}
