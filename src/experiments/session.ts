/**
 * Experiments in the caller's own process: what `import { run } from 'ambiqa'` does in a
 * notebook kernel or a script. The same validation, run directory, resume and MLflow logging as
 * `ambiqa run` / `ambiqa sweep`, but no child process: one composer per process keeps the
 * loaded models (the embedded GGUF, MiniLM, indexes), so a kernel loads the embedded model once
 * and every later cell reuses it.
 *
 * Interrupts: while a run is in progress, SIGINT (a kernel interrupt, Ctrl-C in a script) stops
 * it cleanly — in-flight questions are abandoned, what is done is written — and the process
 * stays alive. Running the same call again resumes it. A second run of the same directory waits
 * for the stopping one to settle first, so two sessions never write one run dir; a session of
 * another process (an `ambiqa run` in a terminal) holds the folder's lock and is refused
 * (run-lock.ts).
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { loadRun, loadSweep, type LoadedRun, type LoadedSweep } from '../report/load';
import { rowKey, runsDir, sweepsDir, runFiles, scoreValues, type ExampleResult, type MetricAggregate } from '../run-files';
import { aggregateResults, createScorer } from './bindings';
import { scoreStoredRows } from './stored-scores';
import { createComposer, type Composer } from './compose';
import { configFingerprint, diffConfigs, readResolvedConfig, resolveExperimentConfig, type ExperimentConfig, type ExperimentInput } from './config';
import type { ProgressSink } from './progress';
import { createReader, parseReaderSpec } from './reader';
import { runStarted } from './run-dir';
import type { RunOutcome } from './runner';
import { preflightAll, runConfig, runDirOf } from './run-config';
import { planSweep, runSweep, type SweepOutcome, type SweepPlan } from './sweep';
import { RUN_LOCK_FILE, SWEEP_LOCK_FILE } from './run-lock';
import { commandEnvironment } from './environment';
import { noteOf, type RunEnvironment } from './observers';
import { rescoreInPlace, resolveRescoreTarget, type RescoreOutcome } from './rescore';

let shared: Composer | undefined;

/** The process's composer: models, corpora and the LLM cache stay loaded between calls. */
export function sharedComposer(): Composer {
  return (shared ??= createComposer());
}

/** Unload the models and stop a local MLflow server (the next call loads them again). */
export async function closeSession(): Promise<void> {
  const c = shared;
  shared = undefined;
  await c?.close();
}

export interface SessionRunOptions {
  /** Run name (the folder under artifacts/runs); default: the config's `name`, else the pipeline's. */
  name?: string;
  /** Answer only the first N selected questions. */
  limit?: number;
  /**
   * What to do with an existing run dir of the same name. `auto` (default): resume it when it was
   * started with the same config (a re-run cell finishes an interrupted run, or replays a
   * finished one), refuse when the config differs. `resume`: always resume. `fresh`: remove it and
   * start again (the LLM cache still replays every call made before).
   */
  existing?: 'auto' | 'resume' | 'fresh';
  /** Live progress (notebooks get one that updates in place). Default: none. */
  progress?: ProgressSink | ((label: string) => ProgressSink);
  /** Stop the run (besides SIGINT). */
  signal?: AbortSignal;
  /** Log to MLflow (default: the config's `tracking.enabled`). */
  tracking?: boolean;
  /** Warnings (MLflow trouble, repaired files). Default: stderr. */
  warn?: (message: string) => void;
  /**
   * Check every endpoint before the first model call, as `ambiqa run` does (default true;
   * preflight.ts). false: for servers that cannot answer the checks.
   */
  preflight?: boolean;
}

export interface SessionRun extends LoadedRun {
  status: RunOutcome['status'];
  /** Questions answered by this call (not replayed from an earlier session). */
  answeredNow: number;
}

/** Validate a config object as `ambiqa run` validates a YAML file (same messages, same defaults). */
export function resolveConfig(input: ExperimentInput, options: Pick<SessionRunOptions, 'name' | 'limit' | 'tracking'> = {}): ExperimentConfig {
  const raw = { ...(input as Record<string, unknown>) };
  if (options.tracking !== undefined) raw.tracking = { ...((raw.tracking as Record<string, unknown> | undefined) ?? {}), enabled: options.tracking };
  const defaultName = options.name ?? (typeof raw.name === 'string' ? raw.name : undefined) ?? String((raw.pipeline as { name?: unknown } | undefined)?.name ?? 'run');
  return resolveExperimentConfig(raw, sharedComposer().registry, {
    source: `config ${defaultName}`,
    defaultName,
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
  });
}

const active = new Map<string, Promise<unknown>>();

/** One session per directory at a time; a new call waits for a stopping one. */
async function exclusive<T>(dir: string, body: () => Promise<T>): Promise<T> {
  const before = active.get(dir);
  if (before) await before.catch(() => undefined);
  const current = body();
  active.set(dir, current);
  try {
    return await current;
  } finally {
    if (active.get(dir) === current) active.delete(dir);
  }
}

/** An AbortSignal that fires on SIGINT (and on `outer`) without ending the process. */
function interruptible(outer?: AbortSignal): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSigint = () => controller.abort(new AmbiqaError('interrupted (SIGINT)', 'run the same call again to resume'));
  const onOuter = () => controller.abort(outer?.reason);
  if (outer?.aborted) onOuter();
  outer?.addEventListener('abort', onOuter, { once: true });
  process.on('SIGINT', onSigint);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', onSigint);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

/**
 * A notebook call's environment: its interrupt, its words (notes and warnings to `warn` when
 * given, else stderr), its progress, and the figures every command run draws.
 */
function sessionEnvironment(options: SessionRunOptions, signal: AbortSignal): RunEnvironment {
  const { progress, warn } = options;
  return commandEnvironment({
    signal,
    note: warn ?? noteToStderr,
    ...(warn ? { warn } : {}),
    ...(progress ? { progress: (label: string) => (typeof progress === 'function' ? progress(label) : progress) } : {}),
  });
}

/** Whether an existing run dir is to be resumed, per `existing`. */
function resumeExisting(config: ExperimentConfig, runDir: string, existing: NonNullable<SessionRunOptions['existing']>): boolean {
  if (!runStarted(runDir)) return false;
  if (existing === 'fresh') {
    emptyFolderBut(runDir, RUN_LOCK_FILE);
    return false;
  }
  if (existing === 'auto') {
    const saved = readResolvedConfig(join(runDir, runFiles.config));
    const differences = diffConfigs(configFingerprint(saved), configFingerprint(config));
    if (differences.length > 0) {
      throw new AmbiqaError(
        `run ${config.name} exists with a different config (${differences.join(', ')})`,
        "pass { existing: 'fresh' } to start it again, or another { name }",
      );
    }
  }
  return true;
}

/** Run one experiment in this process and return its run directory's contents. */
export async function runInProcess(input: ExperimentInput, options: SessionRunOptions = {}): Promise<SessionRun> {
  const config = resolveConfig(input, options);
  const runDir = runDirOf(config);
  return exclusive(runDir, async () => {
    const interrupt = interruptible(options.signal);
    try {
      const outcome = await runConfig(config, {
        composer: sharedComposer(),
        resume: (dir) => resumeExisting(config, dir, options.existing ?? 'auto'),
        preflight: options.preflight !== false,
        env: sessionEnvironment(options, interrupt.signal),
      });
      // Interrupted during the preflight: nothing was started, so there is no run to return.
      if (!outcome) throw interrupt.signal.reason;
      return { ...loadRun(runDir), status: outcome.status, answeredNow: outcome.answeredNow };
    } finally {
      interrupt.dispose();
    }
  });
}

function noteToStderr(message: string): void {
  process.stderr.write(`note: ${message}\n`);
}

/** Remove everything in `dir` but the lock file this session holds there. */
function emptyFolderBut(dir: string, keep: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) if (name !== keep) rmSync(join(dir, name), { recursive: true, force: true });
}

/** Finish (or extend) a run by name or directory, with the config it was started with. */
export async function resumeInProcess(nameOrDir: string, options: Omit<SessionRunOptions, 'existing' | 'name'> = {}): Promise<SessionRun> {
  const dir = existsSync(join(nameOrDir, runFiles.config)) ? nameOrDir : join(runsDir(), nameOrDir);
  if (!runStarted(dir)) throw new AmbiqaError(`no run to resume at ${dir}`, 'pass a run name (artifacts/runs/<name>) or a run directory');
  const saved = readResolvedConfig(join(dir, runFiles.config));
  const { shard: _shard, ...rest } = saved;
  return runInProcess(rest as unknown as ExperimentInput, { ...options, name: saved.name, existing: 'resume' });
}

export interface SessionSweepOptions extends Omit<SessionRunOptions, 'existing'> {
  /** `fresh`: remove an existing sweep dir first; `resume` (default): finish it. */
  existing?: 'resume' | 'fresh';
  /** Printed lines (the plan, the summary). Default: stdout. */
  log?: (line: string) => void;
}

export interface SessionSweep extends LoadedSweep {
  status: SweepOutcome['status'];
  summary: string;
}

/** Run a sweep (the config's `sweep:` grid) in this process, sharing models across its points. */
export async function sweepInProcess(input: ExperimentInput, options: SessionSweepOptions = {}): Promise<SessionSweep> {
  const composer = sharedComposer();
  const raw = { ...(input as Record<string, unknown>) };
  if (options.tracking !== undefined) raw.tracking = { ...((raw.tracking as Record<string, unknown> | undefined) ?? {}), enabled: options.tracking };
  const defaultName = options.name ?? (typeof raw.name === 'string' ? raw.name : 'sweep');
  const request = {
    raw,
    source: `config ${defaultName}`,
    registry: composer.registry,
    options: { defaultName, ...(options.name !== undefined ? { name: options.name } : {}), ...(options.limit !== undefined ? { limit: options.limit } : {}) },
    sweepDir: (name: string) => join(sweepsDir(), name),
  };
  const plan = planSweep(request);
  return exclusive(plan.dir, async () => {
    const interrupt = interruptible(options.signal);
    try {
      const env = sessionEnvironment(options, interrupt.signal);
      const outcome = await runSweep({
        ...request,
        // Under the sweep folder's lock (runSweep takes it): a sweep of another process there is
        // refused before the folder is emptied or read.
        resume: (dir) => {
          if (options.existing === 'fresh') emptyFolderBut(dir, SWEEP_LOCK_FILE);
          return existsSync(join(dir, 'sweep.yaml'));
        },
        ...(options.preflight !== false ? { preflight: (p: SweepPlan) => preflightAll(composer, p.points.map((x) => x.config), noteOf(env)) } : {}),
        components: (config) => composer.components(config),
        tracking: composer.tracking(),
        env: { ...env, tags: composer.tags(plan.base) },
        ...(options.log ? { log: options.log } : {}),
      });
      return { ...loadSweep(plan.dir), status: outcome.status, summary: outcome.summary };
    } finally {
      interrupt.dispose();
    }
  });
}

export interface ScoredRun {
  dir: string;
  metrics: string[];
  /** Per-row metric values, keyed by `rowKey` (the question id; `id#trial` under `trials: k`). */
  perQuestion: Map<string, Record<string, number>>;
  /** Means with bootstrap 95% CIs over the answered questions. */
  aggregate: Record<string, MetricAggregate>;
  /** `metric.reader`, `metric.sentence_splitter` where used. */
  settings: Record<string, string>;
}

/**
 * Score a run's outputs again, from its directory, with the given metrics (default: those it
 * was run with) and reader (default: the run's `reader`): what `ambiqa score --run` computes,
 * without writing anything (`rescoreInPlace`, rescore.ts, writes it into the run). Nothing is
 * re-answered, and the dataset file is not read: each row carries its target (format 3). Only
 * rows of formats 1 and 2, which have none, fall back to the dataset file the config names.
 */
export async function scoreRun(nameOrDir: string, options: { metrics?: string[]; reader?: string } = {}): Promise<ScoredRun> {
  const dir = existsSync(join(nameOrDir, runFiles.config)) ? nameOrDir : join(runsDir(), nameOrDir);
  const config = readResolvedConfig(join(dir, runFiles.config));
  const run = loadRun(dir);
  const metrics = options.metrics ?? config.metrics;
  const counted = run.results.filter((r) => r.error === undefined);
  const readerSpec = options.reader ?? config.reader;
  const readerMetricWanted = metrics.some((m) => m === 'd_f1' || m === 'dr');
  const reader = readerMetricWanted && readerSpec ? await createReader(parseReaderSpec(readerSpec)) : undefined;
  try {
    const scorer = createScorer(config.dataset.name, metrics, reader ? { reader: reader.reader } : {});
    const scores = await scoreStoredRows({ dir, config, rows: counted, metrics, scorer, traces: () => run.traces });
    const perQuestion = new Map<string, Record<string, number>>();
    const rescored: ExampleResult[] = [];
    for (const r of counted) {
      const row = { ...r, scores: scores.get(rowKey(r)) ?? {} };
      perQuestion.set(rowKey(r), scoreValues(row));
      rescored.push(row);
    }
    return { dir, metrics, perQuestion, aggregate: rescored.length > 0 ? aggregateResults(rescored) : {}, settings: scorer.settings };
  } finally {
    await reader?.close();
  }
}

export interface SessionRescoreOptions {
  /** Metrics to score (default: every metric the run has). */
  metrics?: string[];
  /** The D-F1 reader spec for d_f1 / dr (default: the run's own). */
  reader?: string;
  /** Update the MLflow runs (default true; they are updated only where the run was tracked). */
  tracking?: boolean;
  /** Warnings and notes (default: stderr). */
  warn?: (message: string) => void;
  /** Each run's change and a sweep's table (default: stdout). */
  log?: (line: string) => void;
}

/**
 * Re-score a run or a sweep in place, as `ambiqa score --run` does (rescore.ts): new scores
 * into the rows (the replaced ones kept in `scoreHistory`), metrics.json recomputed with a
 * `scoring` entry, the MLflow runs updated. Nothing is answered again.
 */
export async function rescoreInProcess(nameOrDir: string, options: SessionRescoreOptions = {}): Promise<RescoreOutcome> {
  const { dir } = resolveRescoreTarget(nameOrDir);
  return exclusive(dir, () =>
    rescoreInPlace({
      target: dir,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.reader !== undefined ? { reader: options.reader } : {}),
      tracking: options.tracking === false ? null : sharedComposer().tracking(),
      env: { note: options.warn ?? noteToStderr, ...(options.warn ? { warn: options.warn } : {}) },
      ...(options.log ? { log: options.log } : {}),
    }),
  );
}
