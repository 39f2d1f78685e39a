/**
 * DataFrames for notebooks. danfojs is an optional peer dependency: when the project has it
 * installed (this repository does, as a devDependency), `toDataFrame` returns a danfojs
 * DataFrame; otherwise it returns a plain table with the same `columns`/`values`/`shape`/`print`
 * and says once how to get danfojs. Why optional (docs/notebooks.md, *DataFrames*): danfojs 1.2.0
 * depends on an `xlsx` release that only a vendor's CDN serves, so as a dependency it broke a
 * user's `npm install`, and every display helper here needs only rows, not a DataFrame library.
 * danfojs (with tfjs) is large and slow to load, so it is required lazily, on the first frame.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot, projectRoot } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { Row } from './records';

/** The parts of a DataFrame the helpers use: a danfojs DataFrame, or the plain table below. */
export interface DataFrameLike {
  columns: string[];
  values: unknown[][];
  shape: number[];
  print(): void;
  [key: string]: unknown;
}

type DanfoModule = { DataFrame: new (data: unknown, options?: unknown) => DataFrameLike; [key: string]: unknown };

/** What `npm install` needs to add danfojs to a project (its xlsx dependency is CDN-only). */
export const DANFOJS_HINT =
  'npm install danfojs@1.2.0 with "overrides": { "xlsx": "0.18.5" } in your package.json (danfojs pins an xlsx only a CDN serves)';

let danfo: DanfoModule | null | undefined;
let hinted = false;

/** danfojs as the project (or ambiqa's package) resolves it, or null when it is not installed. */
function loadDanfojs(): DanfoModule | null {
  if (danfo !== undefined) return danfo;
  for (const from of [projectRoot, packageRoot]) {
    try {
      danfo = createRequire(join(from, 'package.json'))('danfojs') as DanfoModule;
      return danfo;
    } catch (error) {
      const e = error as { code?: string; message: string };
      // Installed but broken is an error to report; absent means the plain table.
      if (e.code !== 'MODULE_NOT_FOUND' || !e.message.includes("'danfojs'")) {
        throw new AmbiqaError(`cannot load danfojs: ${e.message.split('\n')[0]}`, `reinstall it: ${DANFOJS_HINT}`);
      }
    }
  }
  danfo = null;
  return danfo;
}

/** The danfojs module, for notebooks that want more than `toDataFrame` (throws when it is not installed). */
export function danfojs(): DanfoModule {
  const mod = loadDanfojs();
  if (!mod) throw new AmbiqaError('danfojs is not installed (it is an optional peer dependency of ambiqa)', DANFOJS_HINT);
  return mod;
}

/** Rows as a table without a DataFrame library: what `toDataFrame` returns when danfojs is absent. */
class PlainTable implements DataFrameLike {
  [key: string]: unknown;
  constructor(
    public columns: string[],
    public values: unknown[][],
  ) {}
  get shape(): number[] {
    return [this.values.length, this.columns.length];
  }
  print(): void {
    console.table(this.values.map((v) => Object.fromEntries(this.columns.map((c, i) => [c, v[i]]))));
  }
}

/**
 * Records (plain objects, e.g. from records.ts) → DataFrame. Columns keep the order of the first
 * record's keys, then any new ones.
 */
export function toDataFrame(records: readonly object[]): DataFrameLike {
  const rows = records as ReadonlyArray<Record<string, unknown>>;
  const columns: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
  // danfojs infers one dtype per column; null becomes NaN for numbers, keep strings as strings.
  const values = rows.map((r) => columns.map((c) => (r[c] === undefined ? null : r[c])));
  const mod = loadDanfojs();
  if (!mod) {
    if (!hinted) process.stderr.write(`note: toDataFrame returns a plain table; for danfojs DataFrames, ${DANFOJS_HINT}\n`);
    hinted = true;
    return new PlainTable(columns, values);
  }
  if (rows.length === 0) return new mod.DataFrame([], { columns });
  return new mod.DataFrame(values, { columns });
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
