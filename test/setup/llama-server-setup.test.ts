import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCacheDir, buildJobs, cpuFingerprint, ensureLlamaServer, leanBuildCmakeArgs, hasLlamaServer, llamaServerInstall, llamaServerMissing, LLAMA_CPP_PYTHON_VERSION, startLlamaServer } from '../../src/setup/llama-server';
import { runSetup } from '../../src/setup/setup';
import type { Reporter } from '../../src/setup/context';
import { describeError } from '../../src/errors';

function recorder(): Reporter & { lines: string[] } {
  const lines: string[] = [];
  return { lines, did: (m) => lines.push(`did ${m}`), ok: (m) => lines.push(`ok ${m}`), note: (m) => lines.push(`note ${m}`), fail: (m) => lines.push(`fail ${m}`) };
}

/** A venv folder as pip leaves it, with or without llama-cpp-python's dist-info (nothing runs). */
function fakeVenv(withServer: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-server-venv-'));
  mkdirSync(join(dir, 'bin'), { recursive: true });
  writeFileSync(join(dir, 'bin', 'python'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  const site = join(dir, 'lib', 'python3.11', 'site-packages');
  mkdirSync(site, { recursive: true });
  if (withServer) mkdirSync(join(site, `llama_cpp_python-${LLAMA_CPP_PYTHON_VERSION}.dist-info`));
  return dir;
}

describe('ambiqa setup --server', () => {
  it('a second setup finds the pinned server installed and does nothing', async () => {
    const venv = fakeVenv(true);
    expect(hasLlamaServer(venv)).toBe(true);
    expect(hasLlamaServer(venv, '0.3.35')).toBe(false);
    const report = recorder();
    // The fake python exits 1: reaching pip would fail the step, so passing proves it was not run.
    await ensureLlamaServer({ venvDir: venv, report });
    expect(report.lines).toEqual([`ok llama.cpp server: llama-cpp-python ${LLAMA_CPP_PYTHON_VERSION} already installed (${venv})`]);
  });

  it('runs only when asked (--server), after the venv step, and reports a failure with its fix', async () => {
    const report = recorder();
    const order: string[] = [];
    const base = { parts: ['venv' as const], report, venvStep: async () => void order.push('venv') };
    await runSetup({ ...base, serverStep: async () => void order.push('server') });
    expect(order).toEqual(['venv']);
    const result = await runSetup({ ...base, server: true, serverStep: async () => void order.push('server') });
    expect(order).toEqual(['venv', 'venv', 'server']);
    expect(result.failed).toEqual([]);
    const venv = fakeVenv(false);
    const failing = await runSetup({ parts: [], report, server: true, venvDir: venv });
    expect(failing.failed.map((f) => f.step)).toEqual(['llama.cpp server']);
    expect(failing.failed[0]!.error.message).toMatch(/cannot install llama-cpp-python\[server\]==0\.3\.36 into .*ambiqa-server-venv-/);
  });

  it('builds only what the server loads: no multimodal library, llama.cpp\'s common library switched off by a project include, the user\'s CMAKE_ARGS last', async () => {
    const venv = fakeVenv(false);
    // The fake python stands in for pip: it records the CMake arguments pip would pass on and the
    // project include they name, then fails (so the step reports an error, as a failed build would).
    writeFileSync(
      join(venv, 'bin', 'python'),
      `#!/bin/sh\nprintf '%s' "$CMAKE_ARGS" > ${venv}/cmake-args\ninclude=$(printf '%s' "$CMAKE_ARGS" | sed -n 's/.*-DCMAKE_PROJECT_INCLUDE=\\([^ ]*\\).*/\\1/p')\necho "$include" > ${venv}/include-path\ncat "$include" > ${venv}/include\nexit 1\n`,
      { mode: 0o755 },
    );
    const saved = process.env.CMAKE_ARGS;
    process.env.CMAKE_ARGS = '-DGGML_BLAS=ON';
    try {
      await expect(ensureLlamaServer({ venvDir: venv, report: recorder() })).rejects.toThrow(/cannot install llama-cpp-python/);
    } finally {
      if (saved === undefined) delete process.env.CMAKE_ARGS;
      else process.env.CMAKE_ARGS = saved;
    }
    const args = readFileSync(join(venv, 'cmake-args'), 'utf8').split(' ');
    expect(args[0]).toBe('-DLLAVA_BUILD=OFF');
    expect(args[1]).toMatch(/^-DCMAKE_PROJECT_INCLUDE=\S+lean\.cmake$/);
    expect(args.at(-1)).toBe('-DGGML_BLAS=ON');
    // CMake reads the include as a script: a normal variable that shadows the package's FORCEd cache entry.
    const include = readFileSync(join(venv, 'include'), 'utf8');
    expect(include).toMatch(/^set\(LLAMA_BUILD_COMMON OFF\)$/m);
    // No AMX kernels (a CPU may list AMX its OS has not enabled: SIGILL), for C and C++, unless AMBIQA_KEEP_AMX.
    expect(include).toMatch(/^if\(NOT AMBIQA_KEEP_AMX AND NOT AMBIQA_NO_AMX_APPLIED\)$/m);
    for (const lang of ['C', 'CXX']) expect(include).toContain(`string(APPEND CMAKE_${lang}_FLAGS " -mno-amx-tile -mno-amx-int8 -mno-amx-bf16")`);
    // The include lives only for the build.
    expect(existsSync(readFileSync(join(venv, 'include-path'), 'utf8').trim())).toBe(false);
    expect(leanBuildCmakeArgs('/x/lean.cmake', undefined)).toBe('-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE=/x/lean.cmake');
  });

  it('a build made for another CPU is not taken as installed: setup rebuilds it, in a pip cache of its own for this CPU and these CMake arguments', async () => {
    const venv = fakeVenv(true);
    const pkg = join(venv, 'lib', 'python3.11', 'site-packages', 'llama_cpp');
    mkdirSync(pkg);
    // Installed by hand (no marker): taken as is.
    expect(llamaServerInstall(venv)).toBe('installed');
    writeFileSync(join(pkg, 'ambiqa-build.json'), JSON.stringify({ cpu: cpuFingerprint() }));
    expect(llamaServerInstall(venv)).toBe('installed');
    writeFileSync(join(pkg, 'ambiqa-build.json'), JSON.stringify({ cpu: '0123456789abcdef' }));
    expect(llamaServerInstall(venv)).toBe('built-for-another-cpu');
    expect(hasLlamaServer(venv)).toBe(false);
    expect(llamaServerMissing(venv)?.message).toMatch(/built on a machine with another CPU/);
    expect(llamaServerMissing(fakeVenv(false))?.message).toMatch(/is not installed in/);

    // The fake python records what pip would be asked and where its cache is, then fails.
    writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\necho "$@" > ${venv}/pip-args\necho "$PIP_CACHE_DIR" > ${venv}/pip-cache\nexit 1\n`, { mode: 0o755 });
    const report = recorder();
    const saved = { cache: process.env.AMBIQA_CACHE_DIR, args: process.env.CMAKE_ARGS };
    process.env.AMBIQA_CACHE_DIR = join(venv, 'cache');
    delete process.env.CMAKE_ARGS;
    try {
      await expect(ensureLlamaServer({ venvDir: venv, report })).rejects.toThrow(/cannot install llama-cpp-python/);
      expect(report.lines[0]).toMatch(/built for another CPU; rebuilding it/);
      // Only the package is replaced, not its dependencies.
      expect(readFileSync(join(venv, 'pip-args'), 'utf8')).toMatch(/install .*--force-reinstall --no-deps llama-cpp-python\[server\]==/);
      const cache = readFileSync(join(venv, 'pip-cache'), 'utf8').trim();
      expect(cache).toBe(buildCacheDir(LLAMA_CPP_PYTHON_VERSION, undefined));
      expect(cache.startsWith(join(venv, 'cache', 'llama-cpp-python', `${LLAMA_CPP_PYTHON_VERSION}-`))).toBe(true);
      // Other build arguments or another version: another cache, so neither wheel stands in for the other.
      expect(buildCacheDir(LLAMA_CPP_PYTHON_VERSION, '-DGGML_BLAS=ON')).not.toBe(cache);
      expect(buildCacheDir('0.3.35', undefined)).not.toBe(cache);
    } finally {
      for (const [k, v] of [['AMBIQA_CACHE_DIR', saved.cache], ['CMAKE_ARGS', saved.args]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('a server that dies on its first completion (SIGILL: a build for another CPU) fails its start, naming the cause, instead of dropping clients\' connections', async () => {
    const venv = fakeVenv(true);
    // A stand-in for llama-cpp-python that loads, answers /v1/models, and dies of SIGILL on the
    // first completion, as a native build for another CPU does at its first matrix product.
    const fake = join(venv, 'fake-server.cjs');
    writeFileSync(
      fake,
      `const http = require('node:http');
const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
http.createServer((req, res) => {
  if (req.url.endsWith('/models')) { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ data: [{ id: arg('--model_alias') }] })); return; }
  console.error('llama_model_load: loaded; computing');
  process.kill(process.pid, 'SIGILL');
}).listen(Number(arg('--port')), arg('--host'));
`,
    );
    writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec "${process.execPath}" "${fake}" "$@"\n`, { mode: 0o755 });
    const model = join(venv, 'tiny.gguf');
    writeFileSync(model, 'not a real model');
    const started = Date.now();
    const error = await startLlamaServer({ venvDir: venv, modelPath: model, alias: 'tiny', threads: 1, readyTimeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const text = describeError(error);
    expect(text).toMatch(/died on its first completion, killed by SIGILL \(an illegal instruction/);
    expect(text).toContain('llama_model_load: loaded; computing');
    expect(text).toContain('pip uninstall -y llama-cpp-python');
    // Told at once, not after a client's retries and timeouts.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('compiles with one job per core unless CMAKE_BUILD_PARALLEL_LEVEL says otherwise', () => {
    expect(buildJobs({ CMAKE_BUILD_PARALLEL_LEVEL: '1' })).toBe('1');
    expect(Number(buildJobs({}))).toBeGreaterThanOrEqual(1);
    expect(buildJobs({ CMAKE_BUILD_PARALLEL_LEVEL: 'lots' })).toBe(buildJobs({}));
  });
});
