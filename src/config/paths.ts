import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Where things live. Every location can be moved with one environment variable so that CI, a
 * notebook kernel and a user's shell agree without passing paths around.
 */
function findProjectRoot(): string {
  // `import.meta` is not available under tslab (it compiles notebooks' imports to CommonJS), so
  // the root comes from AMBIQA_ROOT (set by bin/ambiqa.mjs) or from walking up from the working
  // directory to ambiqa's package.json.
  if (process.env.AMBIQA_ROOT) return resolve(process.env.AMBIQA_ROOT);
  let dir = process.cwd();
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'ambiqa') return dir;
      } catch {
        /* an unreadable package.json is not ours; keep walking */
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

export const projectRoot: string = findProjectRoot();

/** Downloaded models and other fetched files (git-ignored). `AMBIQA_CACHE_DIR` moves it. */
export function cacheDir(): string {
  return resolve(process.env.AMBIQA_CACHE_DIR ?? join(projectRoot, '.cache', 'ambiqa'));
}

/** Folder holding the evaluation data (`../shared/data` beside the project by default). */
export function dataDir(): string {
  return resolve(process.env.AMBIQA_DATA_DIR ?? join(projectRoot, '..', 'shared', 'data'));
}

/** Outputs of runs, sweeps, reports and the local MLflow store (git-ignored). */
export function artifactsDir(): string {
  return resolve(process.env.AMBIQA_ARTIFACTS_DIR ?? join(projectRoot, 'artifacts'));
}

/** The project-local Python virtual environment that holds the MLflow server. */
export function venvDir(): string {
  return resolve(process.env.AMBIQA_VENV_DIR ?? join(projectRoot, '.venv'));
}

/** Folder with the small example data shipped in the repository (works on a fresh clone). */
export const examplesDir: string = join(projectRoot, 'examples');
