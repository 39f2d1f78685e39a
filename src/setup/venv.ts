import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import type { Reporter } from './context';
import { classifyFailure, pythonProgram, runCommand, tail } from './fetch';

/**
 * MLflow for the tracking server, pinned. 3.18.0 is listed on PyPI but its `mlflow-skinny==3.18.0`
 * dependency is not, so 3.18.0 cannot be installed from the registry; 3.17.2 is the newest that can.
 */
export const MLFLOW_VERSION = '3.17.2';

/**
 * The notebook front-end, pinned, installed into the same venv as MLflow: JupyterLab 4 (what
 * `ambiqa notebook` opens), nbconvert (with nbclient: headless execution in `ambiqa notebook
 * --execute`, the tests and CI) and plotly, whose `jupyterlab-plotly` extension draws the
 * `application/vnd.plotly.v1+json` figures that `show()` emits, without scripts in the notebook.
 * plotly 6.5.2's extension is declared safe, so it draws in untrusted (received) notebooks too.
 */
export const JUPYTER_PACKAGES = { jupyterlab: '4.6.6', nbconvert: '7.17.2', plotly: '6.5.2' } as const;

export interface VenvOptions {
  venvDir: string;
  mlflowVersion?: string;
  /** Also install JUPYTER_PACKAGES (default true). */
  jupyter?: boolean;
  report: Reporter;
}

export function venvPython(venvDir: string): string {
  return join(venvDir, 'bin', 'python');
}

export function venvMlflow(venvDir: string): string {
  return join(venvDir, 'bin', 'mlflow');
}

export function venvJupyter(venvDir: string): string {
  return join(venvDir, 'bin', 'jupyter');
}

/** Is `name==version` installed in the venv? Looks for its dist-info folder: no Python start-up. */
export function hasPackage(venvDir: string, name: string, version: string): boolean {
  if (!existsSync(venvPython(venvDir))) return false;
  const lib = join(venvDir, 'lib');
  if (!existsSync(lib)) return false;
  return readdirSync(lib).some((py) => existsSync(join(lib, py, 'site-packages', `${name}-${version}.dist-info`)));
}

export function hasMlflow(venvDir: string, version: string): boolean {
  return existsSync(venvMlflow(venvDir)) && hasPackage(venvDir, 'mlflow', version);
}

/** The pinned Jupyter packages the venv lacks, as pip requirements (`name==version`). */
export function missingJupyterPackages(venvDir: string): string[] {
  return Object.entries(JUPYTER_PACKAGES)
    .filter(([name, version]) => !hasPackage(venvDir, name, version))
    .map(([name, version]) => `${name}==${version}`);
}

/**
 * Install the pinned Jupyter packages into an existing venv unless they are there. Called by
 * `ensureVenv` and by `ambiqa notebook` (a venv made before JupyterLab was part of it).
 */
export async function ensureJupyter(options: { venvDir: string; report: Reporter }): Promise<void> {
  const { venvDir, report } = options;
  markVenvCommonJs(venvDir);
  const missing = missingJupyterPackages(venvDir);
  if (missing.length === 0) {
    report.ok(`Python venv: JupyterLab ${JUPYTER_PACKAGES.jupyterlab}, nbconvert, plotly already installed`);
    return;
  }
  report.note(`installing ${missing.join(' ')} into ${venvDir} (about a minute)`);
  await pipInstall(venvDir, missing);
  report.did(`Python venv: ${missing.join(', ')} installed (${venvDir})`);
}

/**
 * JupyterLab runs small Node scripts from its package (a Node version check, yarn's config) at
 * start-up. With the venv inside the repository, Node reads the repository's package.json
 * (`"type": "module"`) for them, fails on their `require`, and prints a page of minified source.
 * A package.json at the venv's root says they are CommonJS, which they are.
 */
export function markVenvCommonJs(venvDir: string): void {
  const path = join(venvDir, 'package.json');
  const text = `${JSON.stringify({ description: 'written by ambiqa setup: Node scripts inside this Python venv (JupyterLab\'s) are CommonJS', type: 'commonjs' }, null, 2)}\n`;
  if (existsSync(venvDir) && (!existsSync(path) || readFileSync(path, 'utf8') !== text)) writeFileSync(path, text);
}

async function pipInstall(venvDir: string, requirements: string[]): Promise<void> {
  const installed = await runCommand(venvPython(venvDir), [
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--progress-bar',
    'off',
    '-q',
    ...requirements,
  ]);
  if (installed.code !== 0) {
    const output = `${installed.stdout}\n${installed.stderr}`;
    const kind = classifyFailure(output);
    const what = requirements.join(' ');
    const why =
      kind === 'offline'
        ? 'PyPI could not be reached (offline?)'
        : kind === 'missing'
          ? `PyPI has no installable ${what} (or one of their dependencies):\n    ${tail(output, 2)}`
          : `pip failed:\n    ${tail(output)}`;
    throw new AmbiqaError(
      `cannot install ${what} into ${venvDir}: ${why}`,
      `check the network and run \`${venvDir}/bin/python -m pip install ${what}\` by hand, then rerun \`npx ambiqa setup\``,
    );
  }
}

/** Create the project venv and install the pinned MLflow and Jupyter into it, unless they are there. */
export async function ensureVenv(options: VenvOptions): Promise<void> {
  const version = options.mlflowVersion ?? MLFLOW_VERSION;
  const { venvDir, report } = options;
  if (hasMlflow(venvDir, version)) {
    report.ok(`Python venv: mlflow ${version} already installed (${venvDir})`);
  } else {
    await createVenv(venvDir, report);
    report.note(`installing mlflow==${version} into ${venvDir} (about a minute)`);
    await pipInstall(venvDir, [`mlflow==${version}`]);
    const check = await runCommand(venvMlflow(venvDir), ['--version']);
    if (check.code !== 0 || !check.stdout.includes(version)) {
      throw new AmbiqaError(
        `mlflow in ${venvDir} does not run: \`mlflow --version\` said ${JSON.stringify(tail(`${check.stdout}\n${check.stderr}`, 2))}`,
        `delete ${venvDir} and rerun \`npx ambiqa setup\``,
      );
    }
    report.did(`Python venv: ${check.stdout.trim()} installed (${venvDir})`);
  }
  if (options.jupyter ?? true) await ensureJupyter({ venvDir, report });
}

async function createVenv(venvDir: string, report: Reporter): Promise<void> {
  if (existsSync(venvPython(venvDir))) return;
  report.note(`creating the Python venv ${venvDir}`);
  const created = await runCommand(pythonProgram(), ['-m', 'venv', venvDir]);
  if (created.spawnError || created.code !== 0) {
    const output = created.spawnError ? String(created.spawnError.code) : tail(`${created.stdout}\n${created.stderr}`);
    throw new AmbiqaError(
      `cannot create the Python venv ${venvDir} with '${pythonProgram()} -m venv': ${output}`,
      /ensurepip|venv/i.test(output)
        ? 'install the venv module (Debian: `apt-get install python3-venv`, or run scripts/system-deps.sh as root), or set AMBIQA_PYTHON to another Python 3'
        : 'install Python 3 (3.10 or newer), or set AMBIQA_PYTHON to one',
    );
  }
}
