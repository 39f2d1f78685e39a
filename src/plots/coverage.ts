/**
 * Answer-coverage curves: AC@k (share of a question's gold DQs with an answer in the top-k
 * passages, mean over questions) against k, one line per retriever, read from the JSON files
 * `ambiqa coverage --out` writes.
 *
 * The reader is deliberately tolerant, because several tools write such curves. Accepted shapes
 * (values may be fractions 0–1 or percents 0–100; the name comes from `retriever`, `name` or
 * `label`, else from the file name):
 *   1. `{ "k": [5, 10], "coverage": [0.4, 0.5] }`        (k also as `ks`; values also as `ac`,
 *      `acAtK`, `values`, `recall`) — `ambiqa coverage --out` writes
 *      `{ "retriever", "questions", "ks": [...], "coverage": [AC@k ×100, ...], "perQuestion", ... }`
 *   2. `[{ "k": 5, "coverage": 0.4 }, …]` or `{ "curve"|"points"|"results": [ … ] }`
 *      (per point also `ac`, `value`, `ac_at_k`, `acAtK`, `recall`)
 *   3. `{ "AC@5": 0.4, "AC@10": 0.5 }`, `{ "ac": { "5": 0.4 } }`, `{ "coverage": { "5": 0.4 } }`
 *      or `{ "5": 0.4, "10": 0.5 }`
 *   4. several retrievers in one file: an array of curves each carrying a name, or
 *      `{ "retrievers"|"curves": { "bm25": <curve>, … } }` / `{ "retrievers": [<curve>, …] }`.
 * Other fields (dataset, corpus size, n) are ignored; `n` or `questions` is kept when present.
 */
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { AmbiqaError } from '../errors';
import { baseLayout, colors, type Figure } from './types';
import { noDataAnnotation } from './consistency';
import { truncate } from './text';

export interface CoverageCurve {
  name: string;
  k: number[];
  /** Percent, 0–100. */
  coverage: number[];
  questions?: number;
}

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const VALUE_KEYS = ['coverage', 'ac', 'acAtK', 'ac_at_k', 'values', 'value', 'recall'];
const NAME_KEYS = ['retriever', 'name', 'label'];

function nameOf(obj: Record<string, Json>, fallback: string): string {
  for (const key of NAME_KEYS) {
    const v = obj[key];
    if (typeof v === 'string' && v) return v;
    if (isObject(v) && typeof v.name === 'string') return v.name;
  }
  return fallback;
}

function kFromKey(key: string): number | null {
  const m = /^(?:ac|AC|coverage|recall)?\s*[@_]?\s*(\d+)$/.exec(key.trim());
  return m ? Number(m[1]) : null;
}

/** `{ "5": x }` / `{ "AC@5": x }` → pairs, or null when not every key names a k. */
function pairsFromMap(map: Record<string, Json>): Array<[number, number]> | null {
  const pairs: Array<[number, number]> = [];
  for (const [key, value] of Object.entries(map)) {
    const k = kFromKey(key);
    if (k === null || typeof value !== 'number') return null;
    pairs.push([k, value]);
  }
  return pairs.length > 0 ? pairs : null;
}

function pairsFromPoints(points: Json[]): Array<[number, number]> | null {
  const pairs: Array<[number, number]> = [];
  for (const p of points) {
    if (!isObject(p) || typeof p.k !== 'number') return null;
    const key = VALUE_KEYS.find((name) => typeof p[name] === 'number');
    if (!key) return null;
    pairs.push([p.k, p[key] as number]);
  }
  return pairs.length > 0 ? pairs : null;
}

/** One curve from one object, or null when the object is not a curve. */
function curveFrom(value: Json, name: string): CoverageCurve | null {
  let pairs: Array<[number, number]> | null = null;
  let questions: number | undefined;
  if (Array.isArray(value)) pairs = pairsFromPoints(value);
  else if (isObject(value)) {
    name = nameOf(value, name);
    const q = value.n ?? value.questions ?? value.numQuestions;
    if (typeof q === 'number') questions = q;
    const kKey = ['k', 'ks'].find((key) => Array.isArray(value[key]));
    if (kKey) {
      const key = VALUE_KEYS.find((v) => Array.isArray(value[v]));
      const ks = value[kKey] as Json[];
      const vs = key ? (value[key] as Json[]) : [];
      if (key && ks.length === vs.length && ks.every((x) => typeof x === 'number') && vs.every((x) => typeof x === 'number')) {
        pairs = ks.map((k, i) => [k as number, vs[i] as number]);
      }
    }
    for (const key of ['curve', 'points', 'results']) {
      if (!pairs && Array.isArray(value[key])) pairs = pairsFromPoints(value[key] as Json[]);
    }
    for (const key of VALUE_KEYS) {
      if (!pairs && isObject(value[key])) pairs = pairsFromMap(value[key] as Record<string, Json>);
    }
    if (!pairs) {
      // `{ "AC@5": 0.4, "n": 300 }`: only keys that spell a k count; counters such as `n` do not.
      const entries = Object.entries(value).filter(([key, v]) => typeof v === 'number' && kFromKey(key) !== null);
      if (entries.length > 0) pairs = entries.map(([key, v]) => [kFromKey(key)!, v as number]);
    }
  }
  if (!pairs) return null;
  pairs.sort((a, b) => a[0] - b[0]);
  const fraction = pairs.every(([, v]) => v <= 1);
  return {
    name,
    k: pairs.map(([k]) => k),
    coverage: pairs.map(([, v]) => (fraction ? v * 100 : v)),
    ...(questions !== undefined ? { questions } : {}),
  };
}

/** Parse one coverage document into one or more curves; `name` names an unnamed curve. */
export function parseCoverage(doc: Json, name: string): CoverageCurve[] {
  // Several retrievers in one document.
  if (isObject(doc)) {
    for (const key of ['retrievers', 'curves']) {
      const group = doc[key];
      if (Array.isArray(group)) {
        const curves = group.map((c, i) => curveFrom(c, `${name}-${i + 1}`));
        if (curves.every((c) => c !== null)) return curves as CoverageCurve[];
      } else if (isObject(group)) {
        const curves = Object.entries(group).map(([n, c]) => curveFrom(c, n));
        if (curves.every((c) => c !== null)) return curves as CoverageCurve[];
      }
    }
  }
  if (Array.isArray(doc) && doc.length > 0 && doc.every((c) => isObject(c) && NAME_KEYS.some((k) => typeof c[k] === 'string') && !('k' in c && typeof c.k === 'number'))) {
    const curves = doc.map((c, i) => curveFrom(c, `${name}-${i + 1}`));
    if (curves.every((c) => c !== null)) return curves as CoverageCurve[];
  }
  const single = curveFrom(doc, name);
  if (single) return [single];
  throw new AmbiqaError(
    `coverage file ${name}: not a coverage curve`,
    'expected e.g. {"retriever":"bm25","k":[5,10],"coverage":[0.41,0.52]} — see src/plots/coverage.ts for every accepted shape',
  );
}

export function readCoverageFile(path: string): CoverageCurve[] {
  let doc: Json;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`cannot read coverage file ${path}: ${(error as Error).message}`, 'pass the JSON file written by `ambiqa coverage --out`');
  }
  try {
    return parseCoverage(doc, basename(path, extname(path)));
  } catch (error) {
    if (error instanceof AmbiqaError) throw new AmbiqaError(error.message.replace(/^coverage file [^:]*/, `coverage file ${path}`), error.hint);
    throw error;
  }
}

/** `hybrid(bm25(k1=0.9,…)+dense:…)` → `hybrid`; `dense:all-minilm-l6-v2-q` stays; at most 32 characters. */
function legendName(name: string): string {
  const kind = name.replace(/\(.*\)\s*$/s, '').trim() || name;
  return truncate(kind, 32);
}

export function coverageFigure(curves: readonly CoverageCurve[], options: { title?: string; logK?: boolean } = {}): Figure {
  const logK = options.logK ?? curves.some((c) => Math.max(...c.k) / Math.max(1, Math.min(...c.k)) >= 20);
  const short = curves.map((c) => legendName(c.name));
  // Two curves of one kind (bm25 with different parameters) keep their descriptions apart.
  const names = new Set(short).size === short.length ? short : curves.map((c) => truncate(c.name, 48));
  return {
    data: curves.map((c, i) => ({
      type: 'scatter',
      mode: 'lines+markers',
      // The legend names the retriever kind; its full description (parameters, model) is in the
      // hover text. Full descriptions made the legend wider than the plot.
      name: names[i],
      x: c.k,
      y: c.coverage,
      line: { color: colors.series[i % colors.series.length] },
      hovertemplate: `${c.name}: AC@%{x} = %{y:.1f}<extra></extra>`,
    })),
    layout: baseLayout(options.title ?? 'Answer coverage of retrieved passages', {
      xaxis: { title: { text: 'k (top-k passages)' }, type: logK ? 'log' : 'linear' },
      yaxis: { title: { text: 'AC@k (% of gold DQs with an answer in the top k)' }, range: [0, 100] },
      ...(curves.length === 0 ? { annotations: [noDataAnnotation('no coverage curves')] } : {}),
    }),
  };
}
