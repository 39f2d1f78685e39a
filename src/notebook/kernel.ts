/**
 * The TypeScript Jupyter kernel for ambiqa's notebooks: tslab, registered under a project-local
 * Jupyter prefix (`<project>/.jupyter`, git-ignored), started from the project root (this
 * repository, or a project that installed ambiqa).
 *
 * Why from the root: tslab compiles every cell and every imported `.ts` file to CommonJS with
 * `rootDir` = the kernel's working directory, and notebooks `import … from 'ambiqa'`, which
 * resolves through `<root>/node_modules/ambiqa` — whichever folder the notebook sits in. The
 * kernel's argv therefore `cd`s there before starting tslab. `ambiqa notebook`, CI and the
 * notebook tests all register the kernel through `registerKernel()` here (or
 * scripts/jupyter-kernel.sh, which calls it). Jupyter itself is the project venv's: JupyterLab 4,
 * nbconvert and plotly's renderer, pinned in src/setup/venv.ts and installed by `ambiqa setup`.
 */
import { spawnSync } from 'node:child_process';
import { spawnSupervised } from '../common/supervise';
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, delimiter, join, resolve, sep } from 'node:path';
import { packageRoot, projectRoot, venvDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import { requireToolSet } from '../config/tools';

export const KERNEL_NAME = 'ambiqa-tslab';
export const KERNEL_DISPLAY_NAME = 'TypeScript (ambiqa, tslab)';

/** Where the kernel spec lives: `<repo>/.jupyter` unless AMBIQA_JUPYTER_PREFIX moves it. */
export function jupyterPrefix(root: string = projectRoot): string {
  return resolve(process.env.AMBIQA_JUPYTER_PREFIX ?? join(root, '.jupyter'));
}

/** Where the project's Jupyter is: the venv's (`ambiqa setup` installs it), unless AMBIQA_JUPYTER names another. */
export function jupyterPath(): string {
  return process.env.AMBIQA_JUPYTER ?? join(venvDir(), 'bin', 'jupyter');
}

/** The project's Jupyter, or a clear error saying how to get it. */
export function jupyterBinary(): string {
  const bin = jupyterPath();
  if (!existsSync(bin)) {
    throw new AmbiqaError(
      `Jupyter not found at ${bin}`,
      'run `npx ambiqa setup` (it installs JupyterLab, nbconvert and plotly into the project venv beside MLflow), or set AMBIQA_JUPYTER to a jupyter command',
    );
  }
  return bin;
}

export interface KernelRegistration {
  name: string;
  prefix: string;
  /** Put this first on JUPYTER_PATH so Jupyter finds the kernel. */
  jupyterPath: string;
  kernelJson: string;
  root: string;
}

export interface KernelSpec {
  argv: string[];
  display_name: string;
  language: string;
  env: Record<string, string>;
  metadata: Record<string, unknown>;
}

/**
 * The kernel spec. The root and the tslab binary are passed to `sh -c` as positional arguments
 * ($1, $2) rather than spliced into the script, so paths with spaces or quotes are safe; `$0` is
 * the connection file Jupyter substitutes for `{connection_file}`.
 */
export function kernelSpec(root: string, tslab: string, tslabDir?: string): KernelSpec {
  return {
    argv: ['/bin/sh', '-c', 'cd "$1" && exec "$2" kernel --config-path "$0"', '{connection_file}', root, tslab],
    display_name: KERNEL_DISPLAY_NAME,
    language: 'typescript',
    // AMBIQA_TSLAB: the tslab package the kernel runs, whose display functions ambiqa's must use.
    env: { AMBIQA_HOME: root, ...(tslabDir ? { AMBIQA_TSLAB: tslabDir } : {}) },
    metadata: { ambiqa: { note: 'written by ambiqa notebook / scripts/jupyter-kernel.sh; runs tslab from the repository root' } },
  };
}

/** Write (or refresh) the kernel spec. Cheap and idempotent: call it before every Jupyter start. */
export function registerKernel(options: { prefix?: string; root?: string } = {}): KernelRegistration {
  const root = resolve(options.root ?? projectRoot);
  const prefix = resolve(options.prefix ?? jupyterPrefix(root));
  // tslab is no dependency of the project (it would link its own TypeScript 5.0.4 as the
  // project's `tsc`): `ambiqa setup` installs it into the tool folder (src/config/tools.ts).
  const tslabDir = requireToolSet('notebook').packageDir;
  const tslab = join(tslabDir, 'bin', 'tslab');
  if (!existsSync(tslab)) throw new AmbiqaError(`tslab's command is missing: ${tslab}`, 'run `npx ambiqa setup --notebook` again');
  // In this repository, node_modules/ambiqa is a link to it; in a project that installed ambiqa
  // it is the installed package, already where tslab looks.
  if (root === packageRoot) {
    linkSelf(root);
    buildIfStale(root);
  }
  const dir = join(prefix, 'share', 'jupyter', 'kernels', KERNEL_NAME);
  mkdirSync(dir, { recursive: true });
  const kernelJson = join(dir, 'kernel.json');
  const text = JSON.stringify(kernelSpec(root, tslab, tslabDir), null, 2) + '\n';
  if (!existsSync(kernelJson) || readFileSync(kernelJson, 'utf8') !== text) writeFileSync(kernelJson, text);
  return { name: KERNEL_NAME, prefix, jupyterPath: join(prefix, 'share', 'jupyter'), kernelJson, root };
}

/**
 * Notebooks `import … from 'ambiqa'`. tslab type-checks cells with Node10 module resolution,
 * which knows neither `exports` nor a package's own name, so it looks for
 * `<root>/node_modules/ambiqa`: a link to the repository itself, as npm makes for a `file:`
 * dependency. Its `types` and `main` then lead to the build, dist/cjs/index.d.ts and index.js.
 */
export function linkSelf(root: string): void {
  const link = join(root, 'node_modules', 'ambiqa');
  const modules = join(root, 'node_modules');
  // A node_modules shared with other checkouts (a symlink out of the repository) is not ours to
  // change: the link would flip between checkouts. Say so; the shared link stays as it is.
  if (existsSync(modules) && lstatSync(modules).isSymbolicLink() && !realpathSync(modules).startsWith(realpathSync(root) + sep)) {
    let target = '(none)';
    try {
      target = realpathSync(link);
    } catch {
      /* no link yet */
    }
    if (target !== realpathSync(root)) process.stderr.write(`note: ${modules} is shared (a symlink); not linking node_modules/ambiqa to ${root} (it points to ${target})\n`);
    return;
  }
  try {
    if (realpathSync(link) === realpathSync(root)) return;
    rmSync(link, { force: true, recursive: false });
  } catch {
    /* missing or dangling: (re)create it */
    rmSync(link, { force: true });
  }
  if (!existsSync(join(root, 'node_modules'))) {
    throw new AmbiqaError(`no node_modules in ${root}`, 'run `npm ci` in the repository first');
  }
  symlinkSync(root, link, 'dir');
}

/**
 * The kernel loads ambiqa's build (dist/), not its sources; in a clone whose src/ changed since
 * the last build, build first (tsc, 15–30 s) so that notebooks never run stale code.
 */
function buildIfStale(root: string): void {
  const script = join(root, 'scripts', 'build.mjs');
  if (!existsSync(script)) return;
  // Its output goes to stderr: `--print-env` prints shell exports on stdout.
  const r = spawnSync(process.execPath, [script, '--if-stale'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (r.status !== 0) throw new AmbiqaError('the build of dist/ failed (see above)', 'fix the type errors and run `npm run build`');
}

/** Environment for Jupyter processes that should see the project kernel. */
export function jupyterEnv(reg: KernelRegistration, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    JUPYTER_PATH: [reg.jupyterPath, base.JUPYTER_PATH].filter(Boolean).join(delimiter),
    // debugpy warns on every kernel start without this.
    PYDEVD_DISABLE_FILE_VALIDATION: '1',
    // jupyter_core 5 warns on every command until told to use the platform's directories.
    JUPYTER_PLATFORM_DIRS: '1',
    AMBIQA_HOME: reg.root,
    // Errors from ambiqa's compiled code name its TypeScript lines (dist/ has source maps). Here
    // rather than in the kernel spec, whose env would replace the user's NODE_OPTIONS.
    NODE_OPTIONS: withSourceMaps(base.NODE_OPTIONS),
  };
}

/** `NODE_OPTIONS` with `--enable-source-maps` added once to what the user had. */
export function withSourceMaps(options: string | undefined): string {
  if (options?.split(/\s+/).includes('--enable-source-maps')) return options;
  return [options, '--enable-source-maps'].filter(Boolean).join(' ');
}

export interface NotebookRun {
  notebook: string;
  output: string;
  ok: boolean;
  exitCode: number | null;
  seconds: number;
  /** nbconvert's stderr: on failure it names the cell and the error. */
  log: string;
}

/**
 * Execute a notebook headless with nbconvert (never `--allow-errors`: with it tslab reports empty
 * outputs for every later cell and exit code 0). The executed copy goes to `outDir`; the source
 * notebook is not modified.
 */
export function executeNotebook(
  notebook: string,
  options: { outDir: string; registration?: KernelRegistration; cellTimeoutS?: number; env?: NodeJS.ProcessEnv },
): Promise<NotebookRun> {
  const reg = options.registration ?? registerKernel();
  const jupyter = jupyterBinary();
  mkdirSync(options.outDir, { recursive: true });
  const name = basename(notebook).replace(/\.ipynb$/, '.out.ipynb');
  const args = [
    'nbconvert', '--to', 'notebook', '--execute', resolve(notebook),
    '--output-dir', resolve(options.outDir), '--output', name,
    `--ExecutePreprocessor.kernel_name=${reg.name}`,
    `--ExecutePreprocessor.timeout=${options.cellTimeoutS ?? 600}`,
  ];
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    // Under a watchdog (src/common/supervise.ts): nbconvert and its kernel stop with this process.
    const run = spawnSupervised(jupyter, args, { cwd: reg.root, env: jupyterEnv(reg, options.env ?? process.env), stdio: ['ignore', 'pipe', 'pipe'] });
    const child = run.watchdog;
    let log = '';
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({
        notebook,
        output: join(resolve(options.outDir), name),
        ok: code === 0,
        exitCode: code,
        seconds: (Date.now() - started) / 1000,
        log,
      }),
    );
  });
}
