import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import {
  type GpuBuild,
  type ToolSet,
  type ToolStamp,
  TOOL_MAIN,
  TOOL_EXTRAS,
  TOOL_STAMP,
  llamaCpuPackage,
  llamaGpuPackage,
  locateTool,
  readToolStamp,
  toolSetDir,
  toolsDir,
} from '../config/tools';
import type { Reporter } from './context';

/**
 * Installs a tool set (src/config/tools.ts) into its own folder of the tool folder with npm:
 * a package.json naming the pinned packages, `npm install --ignore-scripts` (no install script
 * runs: onnxruntime-node's downloads CUDA from GitHub, node-llama-cpp's and zeromq's only check
 * the prebuilt binaries the packages carry) and, for the engine, `--omit=optional`, which leaves
 * out node-llama-cpp's GPU builds; the CPU build of this platform is named explicitly instead.
 * The install goes to a temporary sibling folder renamed into place when done, so a crash or a
 * second setup running at the same time never leaves a half-installed set behind a stamp.
 */

/** What a set's package.json lists: the pinned main package and, for the engine, its native builds. */
export function toolPackages(set: ToolSet, gpu: GpuBuild[] = []): Record<string, string> {
  const main = TOOL_MAIN[set];
  const packages: Record<string, string> = { [main.name]: main.version, ...TOOL_EXTRAS[set] };
  if (set === 'engine') {
    const cpu = llamaCpuPackage();
    if (cpu) packages[cpu] = main.version;
    for (const build of gpu) {
      const name = llamaGpuPackage(build);
      if (!name) throw new AmbiqaError(`--gpu ${build}: node-llama-cpp has no ${build} build for ${process.platform}-${process.arch}`, 'leave --gpu out (the CPU build is installed)');
      packages[name] = main.version;
    }
  }
  return packages;
}

/** The npm command line (`npm`, or the npm that runs this process under `npx`). */
function npmCommand(): { cmd: string; args: string[] } {
  const execPath = process.env.npm_execpath;
  if (execPath && /npm-cli\.js$|npx-cli\.js$/.test(execPath)) return { cmd: process.execPath, args: [execPath.replace(/npx-cli\.js$/, 'npm-cli.js')] };
  return { cmd: process.platform === 'win32' ? 'npm.cmd' : 'npm', args: [] };
}

export type NpmRunner = (args: string[], cwd: string) => Promise<void>;

/** Run npm in `cwd`; its output is kept and shown only when it fails. */
export const runNpm: NpmRunner = (args, cwd) =>
  new Promise((resolvePromise, reject) => {
    const npm = npmCommand();
    // The user's npm settings (registry, cache, proxy) apply; ambiqa's own package scripts' do not.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_package_') && k !== 'npm_lifecycle_event' && k !== 'npm_lifecycle_script'));
    // npm.cmd on Windows runs only through a shell (Node refuses to spawn a .cmd directly).
    const child = spawn(npm.cmd, [...npm.args, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], shell: npm.cmd.endsWith('.cmd') });
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    child.on('error', (error) => reject(new AmbiqaError(`npm could not be started (${error.message})`, 'install Node.js with npm, or put npm on PATH')));
    child.on('close', (code) => {
      if (code === 0) resolvePromise();
      else reject(new AmbiqaError(`npm ${args.join(' ')} in ${cwd} failed (exit ${code}):\n${log.trim().split('\n').slice(-15).join('\n')}`, 'check that the npm registry is reachable (npm config get registry), then rerun `npx ambiqa setup`'));
    });
  });

export interface EnsureToolOptions {
  report: Reporter;
  /** GPU builds to add to the engine set (kept with the ones already installed). */
  gpu?: GpuBuild[];
  /** The tool folder (default `toolsDir()`). */
  dir?: string;
  /** Injected in tests. */
  npm?: NpmRunner;
}

/**
 * Make sure a tool set is usable: already resolvable at the pinned version (ambiqa's own
 * dependencies, or an earlier setup), else installed now. Returns whether it installed anything.
 */
export async function ensureToolSet(set: ToolSet, options: EnsureToolOptions): Promise<boolean> {
  const dir = options.dir ?? toolsDir();
  const main = TOOL_MAIN[set];
  const stamp = readToolStamp(set, dir);
  const gpu = [...new Set([...(stamp?.gpu ?? []), ...(set === 'engine' ? (options.gpu ?? []) : [])])].sort();
  const wanted = toolPackages(set, gpu);
  const located = locateTool(set, dir);
  const stampHolds = stamp !== undefined && Object.entries(wanted).every(([name, version]) => stamp.packages[name] === version);
  if (located && (located.source === 'package' ? gpu.length === 0 : stampHolds)) {
    options.report.ok(`${main.title}: ${main.name}@${main.version} (${located.source === 'package' ? `resolved from ${located.packageDir}` : toolSetDir(set, dir)}${gpu.length ? `, GPU: ${gpu.join(', ')}` : ''})`);
    return false;
  }
  const target = toolSetDir(set, dir);
  const staging = `${target}.installing-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(
    join(staging, 'package.json'),
    JSON.stringify({ name: `ambiqa-tools-${set}`, private: true, description: `${main.title}, installed by \`ambiqa setup\``, dependencies: wanted }, null, 2) + '\n',
  );
  options.report.note(`installing ${main.title} from the npm registry: ${Object.entries(wanted).map(([n, v]) => `${n}@${v}`).join(' ')}`);
  const started = Date.now();
  const args = ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-update-notifier', '--loglevel=error'];
  if (set === 'engine') args.push('--omit=optional');
  try {
    await (options.npm ?? runNpm)(args, staging);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  const written: ToolStamp = { set, packages: wanted, gpu, installedAt: new Date().toISOString() };
  writeFileSync(join(staging, TOOL_STAMP), JSON.stringify(written, null, 2) + '\n');
  // Swap the new folder in; the old one (if any) is moved aside first and then deleted, so a
  // process loading from it meanwhile keeps its open files.
  const old = `${target}.old-${process.pid}`;
  try {
    if (existsSync(target)) renameSync(target, old);
    renameSync(staging, target);
  } catch (error) {
    // Another setup swapped its install in between: use that one if it holds what is wanted.
    rmSync(staging, { recursive: true, force: true });
    const other = readToolStamp(set, dir);
    if (!other || !Object.entries(wanted).every(([name, version]) => other.packages[name] === version)) throw error;
  }
  rmSync(old, { recursive: true, force: true });
  options.report.did(`${main.title}: ${main.name}@${main.version} installed into ${target} in ${((Date.now() - started) / 1000).toFixed(0)} s${gpu.length ? ` (GPU: ${gpu.join(', ')})` : ''}`);
  return true;
}
