import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import type { Reporter } from './context';
import { classifyFailure, pythonProgram, runCommand, tail } from './fetch';

/**
 * MLflow for the tracking server, pinned. 3.18.0 is listed on PyPI but its `mlflow-skinny==3.18.0`
 * dependency is not, so 3.18.0 cannot be installed from the registry; 3.17.2 is the newest that can.
 */
export const MLFLOW_VERSION = '3.17.2';

export interface VenvOptions {
  venvDir: string;
  mlflowVersion?: string;
  report: Reporter;
}

export function venvPython(venvDir: string): string {
  return join(venvDir, 'bin', 'python');
}

export function venvMlflow(venvDir: string): string {
  return join(venvDir, 'bin', 'mlflow');
}

/** Is `mlflow==version` installed in the venv? Looks for its dist-info folder: no Python start-up. */
export function hasMlflow(venvDir: string, version: string): boolean {
  if (!existsSync(venvPython(venvDir)) || !existsSync(venvMlflow(venvDir))) return false;
  const lib = join(venvDir, 'lib');
  if (!existsSync(lib)) return false;
  return readdirSync(lib).some((py) => existsSync(join(lib, py, 'site-packages', `mlflow-${version}.dist-info`)));
}

/** Create the project venv and install the pinned MLflow into it, unless it is already there. */
export async function ensureVenv(options: VenvOptions): Promise<void> {
  const version = options.mlflowVersion ?? MLFLOW_VERSION;
  const { venvDir, report } = options;
  if (hasMlflow(venvDir, version)) {
    report.ok(`Python venv: mlflow ${version} already installed (${venvDir})`);
    return;
  }
  const manual = `${venvDir}/bin/python -m pip install mlflow==${version}`;
  if (!existsSync(venvPython(venvDir))) {
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
  report.note(`installing mlflow==${version} into ${venvDir} (about a minute)`);
  const installed = await runCommand(venvPython(venvDir), [
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--progress-bar',
    'off',
    '-q',
    `mlflow==${version}`,
  ]);
  if (installed.code !== 0) {
    const output = `${installed.stdout}\n${installed.stderr}`;
    const kind = classifyFailure(output);
    const why =
      kind === 'offline'
        ? 'PyPI could not be reached (offline?)'
        : kind === 'missing'
          ? `PyPI has no installable mlflow==${version} (or one of its dependencies):\n    ${tail(output, 2)}`
          : `pip failed:\n    ${tail(output)}`;
    throw new AmbiqaError(`cannot install mlflow==${version} into ${venvDir}: ${why}`, `check the network and run \`${manual}\` by hand, then rerun \`npx ambiqa setup\``);
  }
  const check = await runCommand(venvMlflow(venvDir), ['--version']);
  if (check.code !== 0 || !check.stdout.includes(version)) {
    throw new AmbiqaError(
      `mlflow in ${venvDir} does not run: \`mlflow --version\` said ${JSON.stringify(tail(`${check.stdout}\n${check.stderr}`, 2))}`,
      `delete ${venvDir} and rerun \`npx ambiqa setup\``,
    );
  }
  report.did(`Python venv: ${check.stdout.trim()} installed (${venvDir})`);
}
