import type { ChildProcess } from 'node:child_process';
import { spawnSupervised } from '../common/supervise';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { cacheDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import { assertPortFree, servedBy } from '../common/port';
import type { Reporter } from './context';
import { classifyFailure, runCommand, tail } from './fetch';
import { venvPython } from './venv';

/**
 * A real OpenAI-compatible server for the embedded GGUF: llama.cpp's, as packaged by
 * `llama-cpp-python[server]`, pinned. PyPI serves no wheel of it for this platform, so pip builds
 * llama.cpp from the sdist — only libllama and ggml, see `leanBuildCmakeArgs` (about 3 minutes on
 * an idle 2-core machine, docs/llm.md). The build is for this machine's CPU (`-march=native`), so
 * the built wheel is kept in a pip cache of ambiqa's own, one per CPU (`buildCacheDir`): a second
 * venv on the same machine installs it in seconds, and a wheel built elsewhere is never reused.
 */
export const LLAMA_CPP_PYTHON_VERSION = '0.3.36';

/** Written into the installed package by `ensureLlamaServer`: which CPU the build is for. */
const BUILD_MARKER = 'ambiqa-build.json';

/** The venv's site-packages folder that holds `llama-cpp-python==version`, if any. */
function installedSitePackages(venvDir: string, version: string): string | undefined {
  const lib = join(venvDir, 'lib');
  if (!existsSync(venvPython(venvDir)) || !existsSync(lib)) return undefined;
  return readdirSync(lib)
    .map((py) => join(lib, py, 'site-packages'))
    .find((site) => existsSync(join(site, `llama_cpp_python-${version}.dist-info`)));
}

/**
 * The CPU a native build is for: the architecture and the instruction-set flags the kernel reports
 * (what `-march=native` reads), hashed. Two machines with the same flags can share a build.
 */
export function cpuFingerprint(): string {
  let features = cpus()[0]?.model ?? 'unknown';
  try {
    const flags = /^flags\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (flags) features = flags[1]!.trim().split(/\s+/).sort().join(' ');
  } catch {
    /* not Linux: the CPU model stands in for its flags */
  }
  return createHash('sha256').update(`${process.arch}\n${features}`).digest('hex').slice(0, 16);
}

/**
 * Where a build's wheel is cached: one pip cache per CPU fingerprint and build arguments. pip's
 * own cache keys a wheel built from an sdist by the sdist alone, so a wheel compiled for another
 * CPU (a copied or shared home folder, a CI cache) or with other CMAKE_ARGS would be installed as
 * is — and a wheel with AVX-512 instructions dies of SIGILL on a CPU without them, at the server's
 * first matrix product.
 */
export function buildCacheDir(version: string, userCmakeArgs: string | undefined): string {
  const key = createHash('sha256').update(`${version}\n${cpuFingerprint()}\n${LEAN_BUILD_INCLUDE}\n${userCmakeArgs ?? ''}`).digest('hex').slice(0, 16);
  return join(cacheDir(), 'llama-cpp-python', `${version}-${key}`);
}

export type LlamaServerInstall = 'absent' | 'installed' | 'built-for-another-cpu';

/**
 * Is `llama-cpp-python==version` installed in the venv, and built for this CPU? Reads its
 * dist-info and ambiqa's build marker: no Python start-up. A package without the marker (installed
 * by hand) counts as installed.
 */
export function llamaServerInstall(venvDir: string, version: string = LLAMA_CPP_PYTHON_VERSION): LlamaServerInstall {
  const site = installedSitePackages(venvDir, version);
  if (!site) return 'absent';
  const marker = join(site, 'llama_cpp', BUILD_MARKER);
  if (!existsSync(marker)) return 'installed';
  try {
    const { cpu } = JSON.parse(readFileSync(marker, 'utf8')) as { cpu?: unknown };
    return cpu === cpuFingerprint() ? 'installed' : 'built-for-another-cpu';
  } catch {
    return 'built-for-another-cpu';
  }
}

/** Is `llama-cpp-python==version` installed in the venv and built for this CPU? */
export function hasLlamaServer(venvDir: string, version: string = LLAMA_CPP_PYTHON_VERSION): boolean {
  return llamaServerInstall(venvDir, version) === 'installed';
}

/** Why the server cannot start from this venv, with its fix, or undefined when it can. */
export function llamaServerMissing(venvDir: string, version: string = LLAMA_CPP_PYTHON_VERSION): AmbiqaError | undefined {
  const state = llamaServerInstall(venvDir, version);
  if (state === 'installed') return undefined;
  return state === 'absent'
    ? new AmbiqaError(`llama-cpp-python ${version} is not installed in ${venvDir}`, 'run `npx ambiqa setup --server` first (it builds llama.cpp: about 3 minutes on 2 cores)')
    : new AmbiqaError(
        `llama-cpp-python ${version} in ${venvDir} was built on a machine with another CPU: its native code may use instructions this CPU lacks`,
        'run `npx ambiqa setup --server`: it rebuilds llama.cpp for this CPU',
      );
}

/** Why this machine cannot build llama.cpp (no cmake, no C++ compiler), or undefined when it can. */
export async function buildToolsMissing(): Promise<string | undefined> {
  const missing: string[] = [];
  for (const [tool, args] of [
    ['cmake', ['--version']],
    [process.env.CXX ?? 'c++', ['--version']],
  ] as const) {
    const r = await runCommand(tool, [...args]);
    if (r.spawnError || r.code !== 0) missing.push(tool);
  }
  return missing.length > 0 ? `${missing.join(' and ')} not found (llama.cpp is compiled from source)` : undefined;
}

/**
 * Compile jobs for the build. CMAKE_BUILD_PARALLEL_LEVEL wins when set (a shared machine sets 1);
 * otherwise one per core: the build is the only thing `setup --server` does.
 */
export function buildJobs(env: NodeJS.ProcessEnv = process.env): string {
  const set = env.CMAKE_BUILD_PARALLEL_LEVEL;
  return set && /^\d+$/.test(set) && Number(set) > 0 ? set : String(availableParallelism());
}

/**
 * CMake arguments for a build of only what the server loads: libllama and ggml. The package's own
 * CMakeLists also compiles libmtmd (multimodal: clip, audio decoding) and forces on llama.cpp's
 * `common` library (argument parsing, chat templates, an HTTP client: code for llama.cpp's own
 * programs, which the Python package never loads) — together a large share of the compile. `-D`
 * cannot switch `common` off (the package sets it with FORCE), so a project include sets it as a
 * normal variable, which shadows the cache entry in every directory below. `mtmd` is imported
 * only by the vision chat handlers, which a text GGUF never uses. The user's own CMAKE_ARGS come
 * last and win (say, `-DLLAVA_BUILD=ON` for a multimodal model).
 */
export function leanBuildCmakeArgs(includeFile: string, userArgs: string | undefined): string {
  return [`-DLLAVA_BUILD=OFF`, `-DCMAKE_PROJECT_INCLUDE=${includeFile}`, userArgs ?? ''].join(' ').trim();
}

/**
 * The project include that `leanBuildCmakeArgs` names (CMake reads it after every `project()`):
 * switches off llama.cpp's `common` library, and compiles without AMX. ggml builds for the
 * machine's own CPU (`-march=native`), and a CPU can report AMX while its kernel or hypervisor has
 * not enabled the tile state for processes: the server then dies of SIGILL (`tileloadd`, invalid
 * opcode in libggml-cpu) on its first matrix product, after loading and answering `/v1/models`
 * (seen on a 2-core Xeon VM whose flags list amx_tile). `-mno-amx-*` turns off only ggml's AMX
 * kernels (AVX-512 stays); `-DAMBIQA_KEEP_AMX=ON` in CMAKE_ARGS keeps them where AMX works.
 */
export const LEAN_BUILD_INCLUDE = [
  '# written by ambiqa setup --server (src/setup/llama-server.ts says why)',
  '# the Python package never loads llama.cpp\'s common library',
  'set(LLAMA_BUILD_COMMON OFF)',
  '# no AMX kernels: a CPU may list AMX that its OS has not enabled (SIGILL at the first matrix product)',
  'if(NOT AMBIQA_KEEP_AMX AND NOT AMBIQA_NO_AMX_APPLIED)',
  '  include(CheckCXXCompilerFlag)',
  '  check_cxx_compiler_flag(-mno-amx-tile AMBIQA_COMPILER_HAS_NO_AMX)',
  '  if(AMBIQA_COMPILER_HAS_NO_AMX)',
  '    string(APPEND CMAKE_C_FLAGS " -mno-amx-tile -mno-amx-int8 -mno-amx-bf16")',
  '    string(APPEND CMAKE_CXX_FLAGS " -mno-amx-tile -mno-amx-int8 -mno-amx-bf16")',
  '  endif()',
  '  set(AMBIQA_NO_AMX_APPLIED ON)',
  'endif()',
  '',
].join('\n');

/** Install the pinned `llama-cpp-python[server]` into the project venv unless it is there. */
export async function ensureLlamaServer(options: { venvDir: string; report: Reporter; version?: string }): Promise<void> {
  const version = options.version ?? LLAMA_CPP_PYTHON_VERSION;
  const { venvDir, report } = options;
  const state = llamaServerInstall(venvDir, version);
  if (state === 'installed') {
    report.ok(`llama.cpp server: llama-cpp-python ${version} already installed (${venvDir})`);
    return;
  }
  if (state === 'built-for-another-cpu') report.note(`llama.cpp server: the llama-cpp-python in ${venvDir} was built for another CPU; rebuilding it for this one`);
  if (!existsSync(venvPython(venvDir))) {
    throw new AmbiqaError(`the Python venv ${venvDir} does not exist`, 'run `npx ambiqa setup --server` without --skip-venv (the server goes into the project venv)');
  }
  const spec = `llama-cpp-python[server]==${version}`;
  const jobs = buildJobs();
  const pipCache = buildCacheDir(version, process.env.CMAKE_ARGS);
  report.note(`installing ${spec} into ${venvDir}: pip compiles llama.cpp from the sdist unless ${pipCache} holds a wheel built here (about 3 minutes on 2 idle cores, ${jobs} compile job${jobs === '1' ? '' : 's'})`);
  const started = Date.now();
  // A path without spaces: CMAKE_ARGS is split on whitespace.
  const includeDir = mkdtempSync(join(tmpdir(), 'ambiqa-llama-build-'));
  const includeFile = join(includeDir, 'lean.cmake');
  writeFileSync(includeFile, LEAN_BUILD_INCLUDE);
  let installed: Awaited<ReturnType<typeof runCommand>>;
  try {
    // A reinstall over a build for another CPU replaces only llama-cpp-python, not its dependencies.
    const reinstall = state === 'built-for-another-cpu' ? ['--force-reinstall', '--no-deps'] : [];
    installed = await runCommand(venvPython(venvDir), ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '-q', ...reinstall, spec], {
      env: { ...process.env, PIP_CACHE_DIR: pipCache, CMAKE_BUILD_PARALLEL_LEVEL: jobs, CMAKE_ARGS: leanBuildCmakeArgs(includeFile, process.env.CMAKE_ARGS) },
    });
  } finally {
    rmSync(includeDir, { recursive: true, force: true });
  }
  if (installed.code !== 0) {
    const output = `${installed.stdout}\n${installed.stderr}`;
    const kind = classifyFailure(output);
    const tools = kind === 'other' ? await buildToolsMissing() : undefined;
    const why =
      kind === 'offline'
        ? 'PyPI could not be reached (offline?)'
        : tools
          ? `the build cannot run here: ${tools}`
          : `pip failed:\n    ${tail(output)}`;
    throw new AmbiqaError(
      `cannot install ${spec} into ${venvDir}: ${why}`,
      tools ? 'install cmake and a C++ compiler (Debian: `apt-get install cmake g++`), then rerun `npx ambiqa setup --server`' : `run \`${venvPython(venvDir)} -m pip install '${spec}'\` by hand to see the whole log`,
    );
  }
  const check = await runCommand(venvPython(venvDir), ['-c', 'import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)']);
  if (check.code !== 0 || check.stdout.trim() !== version) {
    throw new AmbiqaError(`llama-cpp-python in ${venvDir} does not import: ${tail(`${check.stdout}\n${check.stderr}`, 2)}`, `delete ${venvDir} and rerun \`npx ambiqa setup --server\``);
  }
  const site = installedSitePackages(venvDir, version);
  if (site) writeFileSync(join(site, 'llama_cpp', BUILD_MARKER), `${JSON.stringify({ cpu: cpuFingerprint(), builtBy: 'ambiqa setup --server' })}\n`);
  report.did(`llama.cpp server: llama-cpp-python ${version} installed in ${((Date.now() - started) / 1000).toFixed(0)} s (${venvDir})`);
}

// ------------------------------------------------------------------ running it

export interface LlamaServerOptions {
  venvDir: string;
  /** The .gguf file to serve. */
  modelPath: string;
  /** The model name clients send (`llm.model`). */
  alias: string;
  host?: string;
  /** Default: a free port. */
  port?: number;
  /** CPU threads for generation and prompt reading; always explicit (llama.cpp's default takes every core). */
  threads: number;
  /** Context window (default 4096, the embedded provider's). */
  contextSize?: number;
  /** The server's own log lines (stderr and stdout), e.g. to print or to keep for an error. */
  onLog?: (text: string) => void;
  /** How long to wait for the model to load. Default 120 s. */
  readyTimeoutMs?: number;
}

export interface RunningLlamaServer {
  /** The API root, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  model: string;
  /** The watchdog the server runs under (src/common/supervise.ts); its stdout and stderr are the server's. */
  process: ChildProcess;
  /** Resolves when the server process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 10 s); resolves when it is gone. */
  stop(graceMs?: number): Promise<void>;
}

/** A port nobody listens on now (the kernel's pick). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * What a server's exit status says, for an error message: 128 + n is signal n (src/common/supervise.ts).
 * SIGILL is the one with a known cause here: a build for another CPU.
 */
export function describeServerExit(code: number | null): string {
  if (code === 132) return 'killed by SIGILL (an illegal instruction: its llama.cpp build uses CPU instructions this machine does not run, e.g. a wheel built on another machine)';
  if (code === 137) return 'killed by SIGKILL (out of memory?)';
  if (code === 139) return 'killed by SIGSEGV';
  if (code !== null && code > 128) return `killed by signal ${code - 128}`;
  return `exit status ${code ?? 'unknown'}`;
}

/**
 * Start `python -m llama_cpp.server` on the GGUF and wait until it is ready: `/v1/models`
 * answers and a one-token completion comes back. The completion runs the model once, so a build
 * that cannot run on this CPU fails here, naming the cause, rather than at a client's first
 * request as a dropped connection. The model loads once; every client (CLI runs, a notebook
 * kernel, tests) then shares it over HTTP.
 */
export async function startLlamaServer(options: LlamaServerOptions): Promise<RunningLlamaServer> {
  const missing = llamaServerMissing(options.venvDir);
  if (missing) throw missing;
  if (!existsSync(options.modelPath)) throw new AmbiqaError(`model file ${options.modelPath} does not exist`, 'run `npx ambiqa setup` (or pass --llm with a fetched model)');
  const host = options.host ?? '127.0.0.1';
  // A port another program holds is refused before anything starts: that program would answer
  // /v1/models and be taken for this server.
  if (options.port !== undefined) await assertPortFree(host, options.port, '--port');
  const port = options.port ?? (await freePort(host));
  const args = [
    '-m',
    'llama_cpp.server',
    '--model', options.modelPath,
    '--model_alias', options.alias,
    '--host', host,
    '--port', String(port),
    '--n_threads', String(options.threads),
    '--n_threads_batch', String(options.threads),
    '--n_ctx', String(options.contextSize ?? 4096),
  ];
  // Under a watchdog (src/common/supervise.ts), in a process group of its own: a stop reaches
  // uvicorn and anything it started, and the server stops with this process however it ends
  // (SIGKILL included), so no model stays loaded on an orphaned port.
  const supervised = spawnSupervised(venvPython(options.venvDir), args, { stdio: ['ignore', 'pipe', 'pipe'], graceMs: 10_000 });
  const child = supervised.watchdog;
  let log = '';
  const onData = (d: Buffer) => {
    const text = d.toString();
    log = (log + text).slice(-4000);
    options.onLog?.(text);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = supervised.exited;
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async (graceMs = 10_000) => {
    if (gone) return;
    await supervised.stop(graceMs);
  };
  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
  while (true) {
    if (gone) throw new AmbiqaError(`the llama.cpp server exited before it was ready:\n    ${tail(log, 6)}`, 'see the lines above (a port in use, a model file it cannot read)');
    try {
      const r = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(2000) });
      await r.body?.cancel().catch(() => undefined);
      // What answers must be the server started here (its socket is one of its process tree's):
      // a program that took the port meanwhile is not taken for it.
      if (r.ok && servedBy(child.pid!, port) === false) {
        await stop();
        throw new AmbiqaError(`port ${port}: what answers at ${baseUrl} is not the llama.cpp server this command started (another program listens on port ${port})`, 'stop that program, or pick another --port');
      }
      if (r.ok) break;
    } catch (error) {
      if (error instanceof AmbiqaError) throw error;
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stop();
      throw new AmbiqaError(`the llama.cpp server did not answer on ${baseUrl} within ${((options.readyTimeoutMs ?? 120_000) / 1000).toFixed(0)} s:\n    ${tail(log, 6)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  // One token through the model: the first matrix product runs here.
  const warmUp = fetch(`${baseUrl}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: options.alias, prompt: 'Hello', max_tokens: 1, temperature: 0 }),
    signal: AbortSignal.timeout(Math.max(1000, deadline - Date.now())),
  }).then(
    async (r) => (r.ok ? undefined : `it answered HTTP ${r.status}: ${(await r.text()).slice(0, 300)}`),
    (e: unknown) => `no reply (${e instanceof Error ? e.message : String(e)})`,
  );
  const outcome = await Promise.race([warmUp.then((problem) => ({ problem })), exited.then((code) => ({ code }))]);
  if ('problem' in outcome && outcome.problem === undefined) return { baseUrl, model: options.alias, process: child, exited, stop };
  // The client sees the connection drop just before the process is reaped: give the exit a moment to explain it.
  const code = 'code' in outcome ? outcome.code : await Promise.race([exited, delay(2000, undefined, { ref: false })]);
  if (code === undefined) {
    await stop();
    throw new AmbiqaError(`the llama.cpp server did not complete a one-token prompt: ${'problem' in outcome ? outcome.problem : ''}\n    ${tail(log, 6)}`, 'see the lines above');
  }
  throw new AmbiqaError(
    `the llama.cpp server died on its first completion, ${describeServerExit(code)}:\n    ${tail(log, 6)}`,
    code === 132
      ? `remove it (\`${join(options.venvDir, 'bin', 'pip')} uninstall -y llama-cpp-python\`) and run \`npx ambiqa setup --server\` on this machine: it builds llama.cpp for this CPU`
      : 'see the lines above',
  );
}
