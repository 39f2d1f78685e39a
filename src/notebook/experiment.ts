/**
 * Running experiments from a notebook cell: the same validation, runner, run directories and
 * MLflow logging as `ambiqa run` / `ambiqa sweep`, with a config written as an object in the
 * notebook. One composer per kernel session, so that the embedded model, corpora and indexes load
 * once however many cells run. The result is read back from the run directory, exactly what a
 * report or a later notebook would read.
 *
 * Notebooks re-run top to bottom, so by default a run with the same name is started afresh (its
 * old directory removed): the persistent LLM cache replays every call that was made before, which
 * makes a re-run cheap. Pass `fresh: false` to resume instead.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createComposer, type Composer } from '../experiments/compose';
import { resolveExperimentConfig, type ExperimentConfig } from '../experiments/config';
import type { ProgressSink, ProgressState } from '../experiments/progress';
import { runsDir, sweepsDir } from '../experiments/rundir';
import { runExperiment } from '../experiments/runner';
import { planSweep, runSweep } from '../experiments/sweep';
import { loadRun, loadSweep, type LoadedRun, type LoadedSweep } from '../report/load';

let composer: Composer | undefined;

function getComposer(): Composer {
  composer ??= createComposer({ notify: (m) => console.log(m) });
  return composer;
}

export interface NotebookRunOptions {
  /** Run (or sweep) name: the folder under artifacts/runs (or artifacts/sweeps). */
  name: string;
  /** Answer only the first N selected questions. */
  limit?: number;
  /** Start afresh (default) or resume an existing run directory. */
  fresh?: boolean;
  /** Print one progress line per question (default true). */
  verbose?: boolean;
}

/** Plain progress lines (a notebook output cannot redraw a terminal progress bar). */
function progress(verbose: boolean | undefined, label: string): ProgressSink {
  let last = -1;
  return {
    update(state: ProgressState) {
      if (verbose === false || state.done === last) return;
      last = state.done;
      console.log(`${label}: ${state.done}/${state.total} questions`);
    },
    finish() {},
  };
}

/** Validate a config object the way `ambiqa run` validates a YAML file (messages name the field). */
export function resolveConfig(raw: Record<string, unknown>, options: Pick<NotebookRunOptions, 'name' | 'limit'>): ExperimentConfig {
  return resolveExperimentConfig(raw, getComposer().registry, {
    source: `notebook config ${options.name}`,
    name: options.name,
    defaultName: options.name,
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
  });
}

/** Run one experiment and return its run directory's contents. */
export async function runExperimentInNotebook(raw: Record<string, unknown>, options: NotebookRunOptions): Promise<LoadedRun> {
  const c = getComposer();
  const config = resolveConfig(raw, options);
  const runDir = join(runsDir(), config.name);
  const fresh = options.fresh ?? true;
  if (fresh && existsSync(runDir)) rmSync(runDir, { recursive: true, force: true });
  const outcome = await runExperiment({
    config,
    runDir,
    resume: !fresh && existsSync(join(runDir, 'config.yaml')),
    components: await c.components(config),
    tracking: c.tracking(),
    tags: c.tags(config),
    progress: progress(options.verbose, config.name),
  });
  if (outcome.status !== 'FINISHED') throw new Error(`run ${config.name} ${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}`);
  return loadRun(runDir);
}

/** Run a sweep (the config's `sweep:` grid) and return the sweep directory's contents. */
export async function runSweepInNotebook(raw: Record<string, unknown>, options: NotebookRunOptions): Promise<LoadedSweep> {
  const c = getComposer();
  const request = {
    raw,
    source: `notebook sweep ${options.name}`,
    registry: c.registry,
    options: { defaultName: options.name, name: options.name, ...(options.limit !== undefined ? { limit: options.limit } : {}) },
    sweepDir: (name: string) => join(sweepsDir(), name),
  };
  const plan = planSweep(request);
  const fresh = options.fresh ?? true;
  if (fresh && existsSync(plan.dir)) rmSync(plan.dir, { recursive: true, force: true });
  const outcome = await runSweep({
    ...request,
    resume: !fresh && existsSync(join(plan.dir, 'sweep.yaml')),
    components: (config) => c.components(config),
    tracking: c.tracking(),
    tags: c.tags(plan.base),
    progress: (label: string) => progress(options.verbose, label),
    log: () => {},
  });
  if (outcome.status !== 'FINISHED') throw new Error(`sweep ${plan.name} ${outcome.status}`);
  return loadSweep(outcome.dir);
}

/** Release the models and the local MLflow server this session started (end of a notebook). */
export async function closeNotebookSession(): Promise<void> {
  const c = composer;
  composer = undefined;
  await c?.close();
}
