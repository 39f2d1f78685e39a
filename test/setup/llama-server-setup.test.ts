import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJobs, ensureLlamaServer, leanBuildCmakeArgs, hasLlamaServer, LLAMA_CPP_PYTHON_VERSION } from '../../src/setup/llama-server';
import { runSetup } from '../../src/setup/setup';
import type { Reporter } from '../../src/setup/context';

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

  it('compiles with one job per core unless CMAKE_BUILD_PARALLEL_LEVEL says otherwise', () => {
    expect(buildJobs({ CMAKE_BUILD_PARALLEL_LEVEL: '1' })).toBe('1');
    expect(Number(buildJobs({}))).toBeGreaterThanOrEqual(1);
    expect(buildJobs({ CMAKE_BUILD_PARALLEL_LEVEL: 'lots' })).toBe(buildJobs({}));
  });
});
