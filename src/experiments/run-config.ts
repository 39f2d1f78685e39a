/**
 * One run of a checked config, wired once for both ways in: `ambiqa run` (src/cli/commands/run.ts)
 * and `run()` of the library (session.ts). Each caller reads its config its own way (a YAML file
 * with `--set` values, an object) and owns its process concerns (signals, exit status, the
 * shared composer of a notebook kernel); everything between the checked config and the finished
 * session happens here, in one order:
 *   the run folder's lock → resume or not (decided under the lock) → may the folder be written
 *   → the preflight → the run's parts → the session (runner.ts).
 */
import { join } from 'node:path';
import { runsDir } from '../run-files';
import type { Composer } from './compose';
import type { ExperimentConfig } from './config';
import { preflightError } from './preflight';
import type { ProgressSink } from './progress';
import { checkRunDir } from './run-dir';
import { acquireDirLock } from './run-lock';
import type { FigureLogger } from './run-tracking';
import { runExperiment, type RunOutcome } from './runner';

export interface RunConfigOptions {
  composer: Composer;
  /**
   * Whether an existing run is resumed. `true` (`--resume`): it is, and one not started yet
   * starts. `false`: an existing run folder is refused. A function: decided under the folder's
   * lock from what is there (the library's `existing: 'auto' | 'fresh' | 'resume'`).
   */
  resume: boolean | ((runDir: string) => boolean);
  /** Check every endpoint before the first model call (preflight.ts). Default true. */
  preflight?: boolean;
  signal?: AbortSignal;
  /** Live progress, made when the first question is about to start (a bar's clock starts with it). */
  progress?: () => ProgressSink | undefined;
  /** MLflow tags beside the composer's provenance tags (e.g. a shard's launch group). */
  tags?: Record<string, string>;
  figures?: FigureLogger;
  /** What is fine but worth saying (the lock, the preflight's notes). Default: stderr, `note: …`. */
  note?: (message: string) => void;
  /** The session's warnings (MLflow trouble, repaired files). Default: the runner's, stderr. */
  warn?: (message: string) => void;
}

/** The folder of a run under the project's artifacts. */
export function runDirOf(config: ExperimentConfig): string {
  return join(runsDir(), config.name);
}

function stderrNote(message: string): void {
  process.stderr.write(`note: ${message}\n`);
}

/**
 * Run one checked config. Undefined when the signal stopped it before the first question (during
 * the preflight): nothing was written then.
 */
export async function runConfig(config: ExperimentConfig, options: RunConfigOptions): Promise<RunOutcome | undefined> {
  const { composer } = options;
  const note = options.note ?? stderrNote;
  const runDir = runDirOf(config);
  // Held from here to the end of the session: a second process for this folder is refused now,
  // naming the holder, before its preflight or any model loads (run-lock.ts). Taken before the
  // folder is read or emptied.
  const lock = acquireDirLock(runDir, { notify: note });
  try {
    const resume = typeof options.resume === 'function' ? options.resume(runDir) : options.resume;
    // Under the lock, so that what is checked is what this process will find.
    const exists = checkRunDir(runDir, resume);
    if (options.resume === true && !exists) note(`no run at ${runDir} yet; starting it`);
    if (options.preflight !== false) await preflightAll(composer, [config], note);
    if (options.signal?.aborted) return undefined; // stopped during the preflight: nothing started
    const components = await composer.components(config);
    const progress = options.progress?.();
    return await runExperiment({
      config,
      runDir,
      resume,
      components,
      tracking: composer.tracking(),
      tags: { ...composer.tags(config), ...options.tags },
      ...(options.figures ? { figures: options.figures } : {}),
      ...(progress ? { progress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.warn ? { warn: options.warn } : {}),
    });
  } finally {
    lock.release();
  }
}

/**
 * The preflight of every config a command will run (a sweep's points before the first runs: a
 * point late in the grid with an unserved model must not be found after the others have spent
 * their calls). Notes are said once each; the problems, each once, are thrown together.
 */
export async function preflightAll(composer: Composer, configs: readonly ExperimentConfig[], note: (message: string) => void = stderrNote): Promise<void> {
  const problems: string[] = [];
  const notes = new Set<string>();
  for (const config of configs) {
    const report = await composer.preflight(config);
    for (const line of report.problems) if (!problems.includes(line)) problems.push(line);
    for (const line of report.notes) notes.add(line);
  }
  for (const line of notes) note(line);
  if (problems.length > 0) throw preflightError({ problems, notes: [...notes] });
}
