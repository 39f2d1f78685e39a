import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { cacheDir, packageRoot } from './paths';

/**
 * The heavy runtime pieces ambiqa loads but a project that installs it does not carry in its
 * node_modules: the llama.cpp engine (node-llama-cpp, whose optional dependencies are every GPU
 * build, about 670 MB on Linux x64), transformers.js (onnxruntime-node with every platform's
 * binaries and onnxruntime-web, about 300 MB) and the notebook kernel (tslab, which brings its own
 * TypeScript 5.0.4 and would link it as the project's `tsc`). `ambiqa setup` installs each set
 * from the npm registry into its own folder under the tool folder (`<cache>/tools/<set>`), pinned,
 * with install scripts off (onnxruntime-node's would download CUDA from GitHub) and, for the
 * engine, without the optional GPU builds but with the one CPU build of this platform. ambiqa then
 * loads them from there with `createRequire`, so they never reach the user's `.bin` or module
 * resolution. Where the tool folder lacks a set, a copy of the same pinned version that ambiqa's
 * own package resolves (a development checkout's devDependencies) is used instead.
 */

export const TOOL_SETS = ['engine', 'embedder', 'notebook'] as const;
export type ToolSet = (typeof TOOL_SETS)[number];

/** The pinned versions (the same ones a development checkout has as devDependencies). */
export const NODE_LLAMA_CPP_VERSION = '3.22.1';
export const TRANSFORMERS_VERSION = '3.8.0';
export const TSLAB_VERSION = '1.0.22';
export const PLAYWRIGHT_CORE_VERSION = '1.65.1';

/** The package each set is loaded through, and its pinned version. */
export const TOOL_MAIN: Record<ToolSet, { name: string; version: string; title: string }> = {
  engine: { name: 'node-llama-cpp', version: NODE_LLAMA_CPP_VERSION, title: 'the embedded llama.cpp engine' },
  embedder: { name: '@huggingface/transformers', version: TRANSFORMERS_VERSION, title: 'the embedder runtime (transformers.js, onnxruntime-node)' },
  notebook: { name: 'tslab', version: TSLAB_VERSION, title: 'the notebook kernel (tslab)' },
};

/**
 * Packages installed beside a set's main one: the notebooks export figures as PNG through
 * chromium driven by playwright-core (src/plots/export.ts), which nothing else needs.
 */
export const TOOL_EXTRAS: Record<ToolSet, Record<string, string>> = {
  engine: {},
  embedder: {},
  notebook: { 'playwright-core': PLAYWRIGHT_CORE_VERSION },
};

/** GPU builds of llama.cpp that `ambiqa setup --gpu` adds to the engine set (opt-in). */
export const GPU_BUILDS = ['cuda', 'cuda-ext', 'vulkan'] as const;
export type GpuBuild = (typeof GPU_BUILDS)[number];

/** The folder the tool sets go in: `AMBIQA_TOOLS_DIR`, else `<cache>/tools`. */
export function toolsDir(): string {
  return resolve(process.env.AMBIQA_TOOLS_DIR ?? join(cacheDir(), 'tools'));
}

export function toolSetDir(set: ToolSet, dir: string = toolsDir()): string {
  return join(dir, set);
}

/** Written into a set's folder last, once its install finished: what it holds. */
export const TOOL_STAMP = 'ambiqa-tools.json';

export interface ToolStamp {
  set: ToolSet;
  packages: Record<string, string>;
  gpu: GpuBuild[];
  installedAt: string;
}

export function readToolStamp(set: ToolSet, dir: string = toolsDir()): ToolStamp | undefined {
  const file = join(toolSetDir(set, dir), TOOL_STAMP);
  if (!existsSync(file)) return undefined;
  try {
    const stamp = JSON.parse(readFileSync(file, 'utf8')) as ToolStamp;
    return stamp.set === set && typeof stamp.packages === 'object' ? { ...stamp, gpu: stamp.gpu ?? [] } : undefined;
  } catch {
    return undefined; // a torn or foreign file: the set counts as not installed
  }
}

/** node-llama-cpp's prebuilt CPU binary package for this platform (`@node-llama-cpp/linux-x64`, …). */
export function llamaCpuPackage(platform: string = process.platform, arch: string = process.arch): string | undefined {
  const key = `${platform}-${arch}`;
  const name: Record<string, string> = {
    'linux-x64': 'linux-x64',
    'linux-arm64': 'linux-arm64',
    'linux-arm': 'linux-armv7l',
    'darwin-arm64': 'mac-arm64-metal',
    'darwin-x64': 'mac-x64',
    'win32-x64': 'win-x64',
    'win32-arm64': 'win-arm64',
  };
  return name[key] ? `@node-llama-cpp/${name[key]}` : undefined;
}

/** The GPU build package of llama.cpp for this platform, if node-llama-cpp publishes one. */
export function llamaGpuPackage(gpu: GpuBuild, platform: string = process.platform, arch: string = process.arch): string | undefined {
  if (arch !== 'x64') return undefined;
  if (platform === 'linux') return `@node-llama-cpp/linux-x64-${gpu}`;
  if (platform === 'win32') return `@node-llama-cpp/win-x64-${gpu}`;
  return undefined;
}

/** The installed version of package `name` as resolved from `from` (a folder with a package.json), if any. */
function resolvedVersion(from: string, name: string): { dir: string; version: string } | undefined {
  try {
    // A package's package.json is not always exported; find it upward from its resolved entry.
    const entry = createRequire(join(from, 'package.json')).resolve(name);
    for (let dir = dirname(entry); dirname(dir) !== dir; dir = dirname(dir)) {
      const manifest = join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return { dir, version: pkg.version ?? 'unknown' };
    }
  } catch {
    /* not installed there */
  }
  return undefined;
}

export interface LocatedTool {
  /** The folder whose `package.json` the set's packages resolve from. */
  from: string;
  /** The main package's own folder. */
  packageDir: string;
  /** Where it came from: ambiqa's own package, or the tool folder `ambiqa setup` filled. */
  source: 'package' | 'tools';
}

/**
 * Where a set's main package is: the set's folder in the tool folder when `ambiqa setup` installed
 * it there (checked by its stamp and the installed version; it may hold a GPU build), else
 * ambiqa's own resolution when that finds the pinned version (a development checkout's
 * devDependencies, or a project that installed it itself), else undefined.
 */
export function locateTool(set: ToolSet, dir: string = toolsDir()): LocatedTool | undefined {
  const main = TOOL_MAIN[set];
  const setDir = toolSetDir(set, dir);
  if (readToolStamp(set, dir)?.packages[main.name] === main.version) {
    const installed = resolvedVersion(setDir, main.name);
    if (installed && installed.version === main.version) return { from: setDir, packageDir: installed.dir, source: 'tools' };
  }
  const own = resolvedVersion(packageRoot, main.name);
  if (own && own.version === main.version) return { from: packageRoot, packageDir: own.dir, source: 'package' };
  return undefined;
}

/** Like `locateTool`, but a missing set is an error that says how to install it. */
export function requireToolSet(set: ToolSet): LocatedTool {
  const found = locateTool(set);
  if (found) return found;
  const main = TOOL_MAIN[set];
  throw new AmbiqaError(
    `${main.title} is not installed: ${main.name}@${main.version} is neither resolvable from ${packageRoot} nor in ${toolSetDir(set)}`,
    `run \`npx ambiqa setup\` (it installs it into ${toolsDir()} from the npm registry${set === 'notebook' ? '; `npx ambiqa setup --notebook` installs only the notebook parts' : ''})`,
  );
}

/** Resolve `id` (the set's package or a path inside it) from where the set is installed. */
export function resolveTool(set: ToolSet, id: string): string {
  return createRequire(join(requireToolSet(set).from, 'package.json')).resolve(id);
}

/** `require(id)` from where the set is installed (CommonJS builds: transformers.js has one). */
export function requireTool(set: ToolSet, id: string): unknown {
  return createRequire(join(requireToolSet(set).from, 'package.json'))(id);
}
