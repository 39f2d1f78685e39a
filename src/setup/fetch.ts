import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';

/**
 * How setup gets archives from the package registries. The real one shells out to the registries'
 * own clients (pip for PyPI, Maven for Maven Central) so that proxies, mirrors and credentials
 * configured for them apply unchanged; tests inject a fake.
 */
export interface Fetcher {
  /** Download `name==version` (no dependencies) into `destDir`; returns the archive's path. */
  pypi(name: string, version: string, destDir: string, options?: PypiOptions): Promise<string>;
  /** Download the jar `group:artifact:version` into `destDir`; returns the jar's path. */
  maven(coordinates: string, destDir: string): Promise<string>;
}

export interface PypiOptions {
  /** A wheel only (`--only-binary=:all:`). */
  binaryOnly?: boolean;
  /** The source archive only (`--no-binary=:all:`): Anserini's jar is pinned inside pyserini's sdist. */
  sourceOnly?: boolean;
  /**
   * Fetch a package whose `Requires-Python` excludes this Python: only a file is wanted from it
   * (pyserini 2.x asks for Python >= 3.12; its jar runs on Java, not Python).
   */
  ignoreRequiresPython?: boolean;
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the program itself could not be started (ENOENT: not installed). */
  spawnError?: NodeJS.ErrnoException;
}

/** Run a program to completion, capturing its output (never throws). */
export function runCommand(
  program: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; onOutput?: (text: string) => void } = {},
): Promise<CommandResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    const child = spawn(program, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      options.onOutput?.(d.toString());
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      options.onOutput?.(d.toString());
    });
    child.on('error', (error: NodeJS.ErrnoException) => resolve({ code: null, stdout, stderr, spawnError: error }));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The Python that runs pip and creates the venv: `AMBIQA_PYTHON`, else `python3` on PATH. */
export function pythonProgram(): string {
  return process.env.AMBIQA_PYTHON ?? 'python3';
}

const OFFLINE_PATTERNS = [
  /NewConnectionError/i,
  /Failed to establish a new connection/i,
  /Temporary failure in name resolution/i,
  /Name or service not known/i,
  /Network is unreachable/i,
  /Connection refused/i,
  /Could not resolve host/i,
  /ConnectTimeout|Read timed out|timed out/i,
  /UnknownHostException|Connect to .* failed|Could not transfer artifact/i,
];

/** Why a registry client failed, in words a person can act on. */
export function classifyFailure(output: string): 'offline' | 'missing' | 'other' {
  // Connection errors first: an unreachable pip index also ends in "No matching distribution".
  if (OFFLINE_PATTERNS.some((p) => p.test(output))) return 'offline';
  if (/No matching distribution found|Could not find a version that satisfies/i.test(output)) return 'missing';
  if (/Could not find artifact|was not found in|Could not resolve dependencies/i.test(output) && !/Could not transfer/i.test(output)) {
    return 'missing';
  }
  return 'other';
}

/** The last few meaningful lines of a tool's output, for an error message. */
export function tail(output: string, lines = 4): string {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^\[?(INFO|WARNING)\]?\b/.test(l))
    .slice(-lines)
    .join('\n    ');
}

/** Move the single new file out of a private temp folder (so concurrent runs never clash). */
function takeSingleFile(tempDir: string, destDir: string, what: string): string {
  const files = readdirSync(tempDir);
  if (files.length !== 1) {
    throw new AmbiqaError(`expected one downloaded file for ${what}, found ${files.length}: ${files.join(', ') || '(none)'}`);
  }
  const target = join(destDir, files[0]);
  renameSync(join(tempDir, files[0]), target);
  return target;
}

export const registryFetcher: Fetcher = {
  async pypi(name, version, destDir, options = {}) {
    mkdirSync(destDir, { recursive: true });
    const temp = mkdtempSync(join(destDir, '.pip-'));
    try {
      const args = ['-m', 'pip', 'download', '--no-deps', '--no-cache-dir', '--disable-pip-version-check', '--progress-bar', 'off'];
      if (options.binaryOnly) args.push('--only-binary=:all:');
      if (options.sourceOnly) args.push('--no-binary=:all:');
      if (options.ignoreRequiresPython) args.push('--ignore-requires-python');
      args.push('-d', temp, `${name}==${version}`);
      const result = await runCommand(pythonProgram(), args);
      const spec = `${name}==${version}`;
      if (result.spawnError) {
        throw new AmbiqaError(
          `cannot download ${spec}: '${pythonProgram()}' could not be started (${result.spawnError.code})`,
          'install Python 3 with pip, or set AMBIQA_PYTHON to a Python that has pip',
        );
      }
      if (result.code !== 0) {
        const output = `${result.stdout}\n${result.stderr}`;
        const kind = classifyFailure(output);
        const why =
          kind === 'missing'
            ? `PyPI has no package ${spec}`
            : kind === 'offline'
              ? 'PyPI could not be reached (offline?)'
              : `pip failed:\n    ${tail(output)}`;
        throw new AmbiqaError(`cannot download ${spec}: ${why}`, undefined, { cause: output });
      }
      return takeSingleFile(temp, destDir, spec);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  },

  async maven(coordinates, destDir) {
    mkdirSync(destDir, { recursive: true });
    const temp = mkdtempSync(join(destDir, '.mvn-'));
    try {
      const result = await runCommand('mvn', [
        '-B',
        '-q',
        'org.apache.maven.plugins:maven-dependency-plugin:2.8:copy',
        `-Dartifact=${coordinates}:jar`,
        `-DoutputDirectory=${temp}`,
      ]);
      if (result.spawnError) {
        throw new AmbiqaError(`cannot download ${coordinates}: Maven ('mvn') is not installed`);
      }
      if (result.code !== 0) {
        const output = `${result.stdout}\n${result.stderr}`;
        const kind = classifyFailure(output);
        const why =
          kind === 'missing'
            ? `Maven Central has no artifact ${coordinates}`
            : kind === 'offline'
              ? 'Maven Central could not be reached (offline?)'
              : `mvn failed:\n    ${tail(output)}`;
        throw new AmbiqaError(`cannot download ${coordinates}: ${why}`, undefined, { cause: output });
      }
      return takeSingleFile(temp, destDir, coordinates);
    } finally {
      rmSync(temp, { recursive: true, force: true });
    }
  },
};
