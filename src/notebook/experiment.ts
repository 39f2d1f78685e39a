/**
 * Running experiments from a notebook cell. The config is an object in the notebook; it is
 * written as YAML and run by the `ambiqa run` / `ambiqa sweep` command in a child process, so a
 * notebook run is exactly a CLI run (same validation, run directory, resume and MLflow logging),
 * the embedded model's native memory lives and dies with the child, and the kernel compiles only
 * the small modules it displays with. The result is read back from the run directory — what a
 * report or a later notebook would read.
 *
 * Notebooks re-run top to bottom, so by default a run with the same name is started afresh (its
 * old directory removed): the persistent LLM cache replays every call made before, which makes a
 * re-run cheap. Pass `fresh: false` to resume instead.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { artifactsDir, projectRoot } from '../config/paths';
import { AmbiqaError } from '../errors';
import { loadRun, loadSweep, type LoadedRun, type LoadedSweep } from '../report/load';

export interface NotebookRunOptions {
  /** Run (or sweep) name: the folder under artifacts/runs (or artifacts/sweeps). */
  name: string;
  /** Answer only the first N selected questions. */
  limit?: number;
  /** Start afresh (default) or resume an existing run directory. */
  fresh?: boolean;
  /** Print the command's progress lines (default true). */
  verbose?: boolean;
}

const NAME = /^[A-Za-z0-9._-]+$/;

function writeConfig(raw: Record<string, unknown>, name: string): string {
  if (!NAME.test(name)) throw new AmbiqaError(`run name '${name}' is not a safe folder name`, 'use letters, digits, dot, dash or underscore');
  const dir = join(artifactsDir(), 'notebooks', 'configs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `# written by a notebook (src/notebook/experiment.ts)\n${stringify(raw)}`);
  return file;
}

/** Run `ambiqa <args>` and stream its output into the notebook; reject with its last lines on failure. */
function ambiqa(args: string[], verbose: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'ambiqa.mjs'), ...args], {
      cwd: projectRoot,
      env: { ...process.env, AMBIQA_ROOT: projectRoot },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split(/\r?\n|\r/)) {
        if (!line.trim()) continue;
        tail.push(line);
        if (tail.length > 40) tail.shift();
        if (verbose) console.log(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`ambiqa ${args[0]} exited with ${code}:\n${tail.join('\n')}`));
    });
  });
}

/** Run one experiment (`ambiqa run`) and return its run directory's contents. */
export async function runExperimentInNotebook(raw: Record<string, unknown>, options: NotebookRunOptions): Promise<LoadedRun> {
  const file = writeConfig(raw, options.name);
  const runDir = join(artifactsDir(), 'runs', options.name);
  const fresh = options.fresh ?? true;
  if (fresh && existsSync(runDir)) rmSync(runDir, { recursive: true, force: true });
  await ambiqa(
    ['run', file, '--name', options.name, ...(options.limit !== undefined ? ['--limit', String(options.limit)] : []), ...(fresh ? [] : ['--resume'])],
    options.verbose ?? true,
  );
  return loadRun(runDir);
}

/** Run a sweep (`ambiqa sweep`, the config's `sweep:` grid) and return the sweep directory's contents. */
export async function runSweepInNotebook(raw: Record<string, unknown>, options: NotebookRunOptions): Promise<LoadedSweep> {
  const file = writeConfig(raw, options.name);
  const dir = join(artifactsDir(), 'sweeps', options.name);
  const fresh = options.fresh ?? true;
  if (fresh && existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  await ambiqa(
    ['sweep', file, '--name', options.name, ...(options.limit !== undefined ? ['--limit', String(options.limit)] : []), ...(fresh ? [] : ['--resume'])],
    options.verbose ?? true,
  );
  return loadSweep(dir);
}

/** Run `ambiqa report <dir> [args]` (e.g. `--mlflow` to attach the report and figures to the run). */
export async function reportInNotebook(dir: string, args: string[] = [], options: { verbose?: boolean } = {}): Promise<void> {
  await ambiqa(['report', dir, ...args], options.verbose ?? true);
}
