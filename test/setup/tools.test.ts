import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmbiqaError, describeError } from '../../src/errors';
import { TOOL_MAIN, llamaCpuPackage, llamaGpuPackage, locateTool, readToolStamp, requireToolSet, toolSetDir } from '../../src/config/tools';
import { type NpmRunner, ensureToolSet, toolPackages } from '../../src/setup/tools';
import { run as setupCommand } from '../../src/cli/commands/setup';
import { memoryReporter } from './fakes';

/**
 * The tool folder (src/config/tools.ts, src/setup/tools.ts) with a fake npm: it writes into
 * node_modules what its package.json names, as `npm install` would, so the install, the stamp,
 * the swap into place and the loader's lookup run without a registry.
 */
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ambiqa-tools-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface NpmCall {
  args: string[];
  cwd: string;
  dependencies: Record<string, string>;
}

/** A fake `npm install`: each dependency becomes node_modules/<name> with a package.json and an entry. */
function fakeNpm(calls: NpmCall[], options: { fail?: string; version?: string } = {}): NpmRunner {
  return async (args, cwd) => {
    const { dependencies } = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    calls.push({ args, cwd, dependencies });
    for (const [name, version] of Object.entries(dependencies)) {
      const dir = join(cwd, 'node_modules', name);
      mkdirSync(join(dir, 'bin'), { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: options.version ?? version, main: 'index.js' }));
      writeFileSync(join(dir, 'index.js'), `module.exports = { fake: ${JSON.stringify(name)} };\n`);
      writeFileSync(join(dir, 'bin', name.split('/').pop()!), '#!/bin/sh\n');
    }
    if (options.fail) throw new AmbiqaError(options.fail);
  };
}

describe('tool sets', () => {
  it('name the pinned packages: the engine with this platform\'s CPU build and no GPU build unless asked', () => {
    const engine = toolPackages('engine');
    expect(engine['node-llama-cpp']).toBe(TOOL_MAIN.engine.version);
    const cpu = llamaCpuPackage();
    if (cpu) expect(engine[cpu]).toBe(TOOL_MAIN.engine.version);
    expect(Object.keys(engine).filter((n) => /cuda|vulkan/.test(n))).toEqual([]);
    expect(toolPackages('embedder')).toEqual({ '@huggingface/transformers': TOOL_MAIN.embedder.version });
    expect(Object.keys(toolPackages('notebook')).sort()).toEqual(['playwright-core', 'tslab']);
    expect(llamaCpuPackage('linux', 'x64')).toBe('@node-llama-cpp/linux-x64');
    expect(llamaCpuPackage('darwin', 'arm64')).toBe('@node-llama-cpp/mac-arm64-metal');
    expect(llamaCpuPackage('linux', 'arm')).toBe('@node-llama-cpp/linux-armv7l');
    expect(llamaCpuPackage('aix', 'ppc64')).toBeUndefined();
    expect(llamaGpuPackage('cuda', 'linux', 'x64')).toBe('@node-llama-cpp/linux-x64-cuda');
    expect(llamaGpuPackage('vulkan', 'win32', 'x64')).toBe('@node-llama-cpp/win-x64-vulkan');
    expect(llamaGpuPackage('cuda', 'darwin', 'arm64')).toBeUndefined();
  });

  it('installs a missing set once, with no install scripts, into its folder, and finds it there', async () => {
    const dir = join(root, 'once');
    const calls: NpmCall[] = [];
    const report = memoryReporter();
    // tslab is no dependency of this checkout, so the notebook set is only ever in the tool folder.
    expect(locateTool('notebook', dir)).toBeUndefined();
    expect(await ensureToolSet('notebook', { report, dir, npm: fakeNpm(calls) })).toBe(true);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args).toContain('--ignore-scripts');
    expect(calls[0]!.args).not.toContain('--omit=optional');
    expect(calls[0]!.dependencies).toEqual(toolPackages('notebook'));
    const found = locateTool('notebook', dir);
    expect(found).toEqual({ from: toolSetDir('notebook', dir), packageDir: join(toolSetDir('notebook', dir), 'node_modules', 'tslab'), source: 'tools' });
    expect(readToolStamp('notebook', dir)?.packages).toEqual(toolPackages('notebook'));
    // Only the set's folder is left: no staging or old folder beside it.
    expect(readdirSync(dir)).toEqual(['notebook']);
    expect(report.text()).toMatch(/^did: the notebook kernel \(tslab\): tslab@1\.0\.22 installed into .*notebook/m);

    const again = memoryReporter();
    expect(await ensureToolSet('notebook', { report: again, dir, npm: fakeNpm(calls) })).toBe(false);
    expect(calls).toHaveLength(1);
    expect(again.lines.map((l) => l.kind)).toEqual(['ok']);
  });

  it('a failed npm leaves nothing behind and says how to retry', async () => {
    const dir = join(root, 'failing');
    const calls: NpmCall[] = [];
    const error = await ensureToolSet('notebook', { report: memoryReporter(), dir, npm: fakeNpm(calls, { fail: 'npm install failed: ENOTFOUND registry' }) }).catch((e: unknown) => e);
    expect(describeError(error)).toContain('ENOTFOUND registry');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
    expect(locateTool('notebook', dir)).toBeUndefined();
  });

  it('a folder holding another version than the pinned one does not count', async () => {
    const dir = join(root, 'other-version');
    await ensureToolSet('notebook', { report: memoryReporter(), dir, npm: fakeNpm([], { version: '0.0.1' }) });
    // The stamp names the pinned version, but the installed package says otherwise.
    expect(readToolStamp('notebook', dir)).toBeDefined();
    expect(locateTool('notebook', dir)).toBeUndefined();
  });

  it.skipIf(!llamaGpuPackage('cuda'))('--gpu adds the GPU build to the engine set, kept by later runs without --gpu', async () => {
    const dir = join(root, 'gpu');
    const calls: NpmCall[] = [];
    await ensureToolSet('engine', { report: memoryReporter(), dir, npm: fakeNpm(calls), gpu: ['cuda'] });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args).toContain('--omit=optional');
    expect(Object.keys(calls[0]!.dependencies).sort()).toEqual(['node-llama-cpp', llamaCpuPackage()!, llamaGpuPackage('cuda')!].sort());
    expect(readToolStamp('engine', dir)?.gpu).toEqual(['cuda']);
    // A plain setup afterwards keeps the GPU build and installs nothing.
    expect(await ensureToolSet('engine', { report: memoryReporter(), dir, npm: fakeNpm(calls) })).toBe(false);
    expect(calls).toHaveLength(1);
  });

  it('a missing set is one error naming the package, the folder and the command that installs it', () => {
    const saved = process.env.AMBIQA_TOOLS_DIR;
    process.env.AMBIQA_TOOLS_DIR = join(root, 'empty');
    try {
      const error = (() => {
        try {
          requireToolSet('notebook');
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(AmbiqaError);
      const text = describeError(error);
      expect(text).toContain(`tslab@${TOOL_MAIN.notebook.version}`);
      expect(text).toContain(join(root, 'empty', 'notebook'));
      expect(text).toContain('npx ambiqa setup --notebook');
    } finally {
      if (saved === undefined) delete process.env.AMBIQA_TOOLS_DIR;
      else process.env.AMBIQA_TOOLS_DIR = saved;
    }
  });

  it('`ambiqa setup --gpu` takes only the builds node-llama-cpp publishes', async () => {
    await expect(setupCommand(['--gpu', 'rocm'])).rejects.toThrow("--gpu: unknown build 'rocm'");
    await expect(setupCommand(['--notebook', '--only', 'llm'])).rejects.toThrow('--notebook and --only: choose one');
  });
});
