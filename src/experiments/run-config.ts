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
import { noteOf, type RunEnvironment } from './observers';
import { checkRunDir } from './run-dir';
import { acquireDirLock } from './run-lock';
import { runSession, type RunOutcome } from './runner';

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
  /** Signal, warnings, notes, progress, tags beside the composer's provenance tags, figures. */
  env?: RunEnvironment;
  /** The run's folder (default: artifacts/runs/<name>; `ambiqa reproduce` writes under artifacts/reproductions). */
  runDir?: string;
}

/** The folder of a run under the project's artifacts. */
export function runDirOf(config: ExperimentConfig): string {
  return join(runsDir(), config.name);
}

/**
 * Run one checked config. Undefined when the signal stopped it before the first question (during
 * the preflight): nothing was written then.
 */
export async function runConfig(config: ExperimentConfig, options: RunConfigOptions): Promise<RunOutcome | undefined> {
  const { composer } = options;
  const env = options.env ?? {};
  const note = noteOf(env);
  const runDir = options.runDir ?? runDirOf(config);
  // Taken once, here, and held to the end of the session: a second process for this folder is
  // refused now, naming the holder, before its preflight or any model loads (run-lock.ts). Taken
  // before the folder is read or emptied.
  const lock = acquireDirLock(runDir, { notify: note });
  try {
    const resume = typeof options.resume === 'function' ? options.resume(runDir) : options.resume;
    // Under the lock, so that what is checked is what this process will find.
    const exists = checkRunDir(runDir, resume);
    if (options.resume === true && !exists) note(`no run at ${runDir} yet; starting it`);
    if (options.preflight !== false) await preflightAll(composer, [config], note);
    if (env.signal?.aborted) return undefined; // stopped during the preflight: nothing started
    const components = await composer.components(config);
    return await runSession({
      config,
      runDir,
      resume,
      components,
      tracking: composer.tracking(),
      env: { ...env, tags: { ...composer.tags(config), ...env.tags } },
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
export async function preflightAll(composer: Composer, configs: readonly ExperimentConfig[], note: (message: string) => void = noteOf(undefined)): Promise<void> {
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
