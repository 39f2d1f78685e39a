/**
 * Read what `ambiqa run` and `ambiqa sweep` leave on disk into the plain objects the figure
 * builders and the report take. A run dir holds config.yaml, results.jsonl, traces.jsonl,
 * metrics.json (and mlflow.json, run.json); a sweep dir holds sweep.yaml, summary.json,
 * mlflow.json and `runs/<point label>/` run dirs.
 */
import { registerKeyOfConfig } from '../common/secrets';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { readYamlMapping } from '../common/yaml';
import { AmbiqaError } from '../errors';
import { readResults, readTraces, rowKey, traceKey } from '../run-files';
import { readRunJson, runFiles, type MlflowRecord, type RunState } from '../run-files';
import type { RunData, SweepData } from '../plots/types';
import type { PairedRow } from '../run-files/comparison';

export interface LoadedRun extends RunData {
  dir: string;
  mlflow?: MlflowRecord;
  state?: RunState;
  /** For a sweep's child: the swept values of its grid point (axis label → value). */
  sweepValues?: Record<string, unknown>;
  /** For a sweep's child: its paired deltas against the sweep's reference point (summary.json). */
  sweepPaired?: PairedRow[];
  /** For a sweep's child: it is the reference point. */
  sweepReference?: boolean;
}

export interface LoadedSweep extends SweepData {
  dir: string;
  runs: LoadedRun[];
  mlflow?: MlflowRecord;
  /** Axis labels, in grid order, as summary.json names them. */
  axes: string[];
}

function readJsonFile<T>(path: string): T | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    throw new AmbiqaError(`${path}: not valid JSON (${(error as Error).message})`, 'the file may be from an interrupted run; re-run with --resume');
  }
}

/** The last record per key wins (a resumed run may append an example again). */
function lastPerId<T>(records: T[], id: (r: T) => string): T[] {
  const byId = new Map<string, T>();
  for (const r of records) byId.set(id(r), r);
  return [...byId.values()];
}

export function isRunDir(dir: string): boolean {
  return existsSync(join(dir, runFiles.results)) || existsSync(join(dir, runFiles.metrics));
}

/** Child run dirs of a sweep: `runs/*` (the sweep layout), else direct children that are runs. */
function sweepChildDirs(dir: string): string[] {
  const listDirs = (d: string) =>
    existsSync(d) ? readdirSync(d).map((n) => join(d, n)).filter((p) => statSync(p).isDirectory() && isRunDir(p)).sort() : [];
  const nested = listDirs(join(dir, 'runs'));
  return nested.length > 0 ? nested : listDirs(dir);
}

export function isSweepDir(dir: string): boolean {
  return !isRunDir(dir) && sweepChildDirs(dir).length > 0;
}

export function loadRun(dir: string): LoadedRun {
  dir = resolve(dir);
  if (!existsSync(dir)) throw new AmbiqaError(`run directory ${dir} does not exist`, 'pass a folder under artifacts/runs/ (or artifacts/sweeps/)');
  if (!isRunDir(dir)) {
    throw new AmbiqaError(`${dir} is not a run directory: it has no ${runFiles.results} or ${runFiles.metrics}`, 'pass the folder `ambiqa run` wrote (artifacts/runs/<name>)');
  }
  const configPath = join(dir, runFiles.config);
  const config: Record<string, unknown> = existsSync(configPath) ? readYamlMapping(configPath) : {};
  // Per (question, trial): a run with `trials: k` keeps k rows and traces of each question.
  const results = lastPerId(readResults(join(dir, runFiles.results)), rowKey);
  const traces = lastPerId(readTraces(join(dir, runFiles.traces)), traceKey);
  const metrics = readRunJson(join(dir, runFiles.metrics), 'metrics');
  const mlflow = readRunJson(join(dir, runFiles.mlflow), 'mlflow');
  const state = readRunJson(join(dir, runFiles.state), 'state');
  registerKeyOfConfig(config);
  const name = typeof config.name === 'string' ? config.name : (mlflow?.runName ?? basename(dir));
  return {
    name,
    dir,
    config,
    results,
    traces,
    ...(metrics ? { metrics } : {}),
    ...(mlflow ? { mlflow } : {}),
    ...(state ? { state } : {}),
  };
}

interface SummaryEntry {
  label?: string;
  values?: Record<string, unknown>;
  runDir?: string;
  paired?: PairedRow[];
  reference?: boolean;
}

export function loadSweep(dir: string): LoadedSweep {
  dir = resolve(dir);
  if (!existsSync(dir)) throw new AmbiqaError(`sweep directory ${dir} does not exist`, 'pass a folder under artifacts/sweeps/');
  const children = sweepChildDirs(dir);
  if (children.length === 0) {
    throw new AmbiqaError(`${dir} holds no run directories`, 'pass the folder `ambiqa sweep` wrote (artifacts/sweeps/<name>), after at least one point finished');
  }
  const summary = readJsonFile<unknown>(join(dir, 'summary.json'));
  const entries: SummaryEntry[] = Array.isArray(summary) ? (summary as SummaryEntry[]) : [];
  const byDir = new Map(entries.filter((e) => e.runDir).map((e) => [resolve(dir, e.runDir!), e]));
  const byLabel = new Map(entries.filter((e) => e.label).map((e) => [e.label!, e]));
  const order = new Map(entries.map((e, i) => [e.label ?? '', i]));
  const runs = children.map((child) => {
    const run = loadRun(child);
    const entry = byDir.get(child) ?? byLabel.get(basename(child));
    return {
      ...run,
      ...(entry?.values ? { sweepValues: entry.values } : {}),
      ...(entry && Array.isArray(entry.paired) ? { sweepPaired: entry.paired } : {}),
      ...(entry?.reference === true ? { sweepReference: true } : {}),
    };
  });
  runs.sort((a, b) => (order.get(basename(a.dir)) ?? Infinity) - (order.get(basename(b.dir)) ?? Infinity));
  const axes = [...new Set(entries.flatMap((e) => Object.keys(e.values ?? {})))];
  const sweepYaml = join(dir, 'sweep.yaml');
  let name = basename(dir);
  if (existsSync(sweepYaml)) {
    try {
      const parsed = readYamlMapping(sweepYaml);
      if (typeof parsed.name === 'string') name = parsed.name;
    } catch {
      /* the name is cosmetic; the folder name will do */
    }
  }
  const mlflow = readRunJson(join(dir, runFiles.mlflow), 'mlflow');
  return { name, dir, runs, axes, ...(summary !== undefined ? { summary } : {}), ...(mlflow ? { mlflow } : {}) };
}

export type Loaded = { kind: 'run'; run: LoadedRun } | { kind: 'sweep'; sweep: LoadedSweep };

/** A run dir or a sweep dir, whichever `dir` is. */
export function loadRunOrSweep(dir: string): Loaded {
  const abs = resolve(dir);
  if (!existsSync(abs)) throw new AmbiqaError(`${abs} does not exist`, 'pass a run directory (artifacts/runs/<name>) or a sweep directory (artifacts/sweeps/<name>)');
  if (isRunDir(abs)) return { kind: 'run', run: loadRun(abs) };
  if (isSweepDir(abs)) return { kind: 'sweep', sweep: loadSweep(abs) };
  throw new AmbiqaError(
    `${abs} is neither a run nor a sweep directory (no ${runFiles.results}, no run folders under runs/)`,
    'pass a run directory (artifacts/runs/<name>) or a sweep directory (artifacts/sweeps/<name>)',
  );
}
