import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { configFingerprint, configToYaml, diffConfigs, normaliseConfig, readResolvedConfig, type ExperimentConfig } from './config';
import { repairJsonl, writeFileAtomic } from '../common/jsonl';
import { runFiles } from '../run-files';
import { redactConfig } from './secrets';

/** Absolute paths of one run directory's files. */
export type RunDirPaths = { [K in keyof typeof runFiles]: string };

export function runDirPaths(runDir: string): RunDirPaths {
  return Object.fromEntries(Object.entries(runFiles).map(([key, file]) => [key, join(runDir, file)])) as RunDirPaths;
}

/** A run has started once its resolved config is written; that file is the mark, nothing else. */
export function runStarted(runDir: string): boolean {
  return existsSync(join(runDir, runFiles.config));
}

/**
 * Refuse early (before models load) to write into an existing run without `--resume`. `--resume`
 * of a run that does not exist yet starts it, so that a retried job (a Kubernetes pod restart,
 * a GNU parallel retry) can always pass `--resume`. Returns whether there is a run to resume.
 * The one place that decides whether a run dir may be written.
 */
export function checkRunDir(runDir: string, resume: boolean): boolean {
  const started = runStarted(runDir);
  if (started && !resume) {
    throw new AmbiqaError(
      `run directory already exists: ${runDir}`,
      'add --resume to finish or extend it, or --name <new-name> to start a new run',
    );
  }
  return started;
}

export interface OpenedRunDir {
  paths: RunDirPaths;
  /** The config with secrets removed: what is written to disk and logged. */
  redacted: ExperimentConfig;
}

/**
 * Makes `runDir` ready for a session: checks that a resumed run keeps its config, writes the
 * resolved config, and cuts a torn last line that a killed writer left in the JSONL files.
 */
export function openRunDir(config: ExperimentConfig, runDir: string, resume: boolean, warn: (m: string) => void): OpenedRunDir {
  const paths = runDirPaths(runDir);
  const redacted = redactConfig(config);
  if (checkRunDir(runDir, resume)) {
    const saved = readResolvedConfig(paths.config);
    // Compared as both read back: a config given to the runner directly may leave defaults out.
    const differences = diffConfigs(configFingerprint(saved), configFingerprint(normaliseConfig(redacted, `run ${config.name}`)));
    if (differences.length > 0) {
      throw new AmbiqaError(
        `cannot resume ${runDir}: the config differs from the one it was started with in ${differences.join(', ')}`,
        'resume with the same config and --set (and --trials) values, or start a new run with --name',
      );
    }
  } else if (resume && existsSync(paths.results)) {
    throw new AmbiqaError(`cannot resume ${runDir}: its ${runFiles.config} is missing`);
  }
  mkdirSync(runDir, { recursive: true });
  writeFileAtomic(paths.config, configToYaml(redacted, `resolved config of run ${config.name}, written by ambiqa run`));
  for (const p of [paths.results, paths.traces]) {
    const cut = repairJsonl(p);
    if (cut > 0) warn(`${p}: removed a torn last line (${cut} bytes) left by an interrupted write`);
  }
  return { paths, redacted };
}
