import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Where things live. Two roots, never mixed:
 *
 * - the **package root**: ambiqa's own files (examples/, experiments/, scripts/, the Punkt
 *   parameters in src/metrics/punkt/, and the packages ambiqa depends on). In a clone that is the
 *   clone; in a project that installed ambiqa it is `node_modules/ambiqa`, which npm may delete
 *   and replace at any time, so nothing is ever written there.
 * - the **project root** (ambiqa's home): what ambiqa fetches and writes (models and caches,
 *   artifacts, the Python venv) and where the data is looked for. It is `AMBIQA_HOME`, else the
 *   working directory's project: the nearest folder upward with a package.json. In a clone,
 *   run from inside it, both roots are the clone, as they always were.
 *
 * Every location below can also be moved on its own with one environment variable, so that CI, a
 * notebook kernel and a user's shell agree without passing paths around.
 */

/** Whether `dir` holds ambiqa's own package.json. */
function isAmbiqaPackage(dir: string): boolean {
  const manifest = join(dir, 'package.json');
  if (!existsSync(manifest)) return false;
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'ambiqa';
  } catch {
    return false; // an unreadable package.json is not ours
  }
}

/** The first folder from `start` upward that satisfies `test`. */
function upward(start: string, test: (dir: string) => boolean): string | undefined {
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    if (test(dir)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** The key under which bin/ambiqa.mjs leaves the package root for sources run as ES modules. */
const PACKAGE_ROOT_KEY = Symbol.for('ambiqa.packageRoot');

function findPackageRoot(): string {
  // The compiled build (dist/cjs/config/paths.js), vitest and tslab all define __dirname; from
  // there the package root is the first folder up with ambiqa's package.json (dist/cjs has a
  // package.json of its own without a name, which is skipped).
  if (typeof __dirname === 'string') {
    const found = upward(__dirname, isAmbiqaPackage);
    if (found) return found;
  }
  // The sources run as ES modules by tsx (a development checkout whose dist/ is older than src/)
  // have no __dirname, and `import.meta` does not compile to CommonJS; the command says where it is.
  const fromCommand = (globalThis as Record<symbol, unknown>)[PACKAGE_ROOT_KEY];
  if (typeof fromCommand === 'string') return fromCommand;
  return upward(process.cwd(), isAmbiqaPackage) ?? process.cwd();
}

function findProjectRoot(): string {
  if (process.env.AMBIQA_HOME) return resolve(process.env.AMBIQA_HOME);
  return upward(process.cwd(), (dir) => existsSync(join(dir, 'package.json'))) ?? process.cwd();
}

/** ambiqa's own files: the clone, or `node_modules/ambiqa` in a project that installed it. Read only. */
export const packageRoot: string = findPackageRoot();

/**
 * ambiqa's home, where models, caches, artifacts and the venv go: `AMBIQA_HOME`, else the nearest
 * folder from the working directory upward with a package.json (the clone, inside a clone).
 */
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

/** Folder with the small example data shipped with ambiqa (works on a fresh clone and in an install). */
export const examplesDir: string = join(packageRoot, 'examples');
