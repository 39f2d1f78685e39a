import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jupyterPath, KERNEL_NAME } from '../../src/notebook/kernel';
import { locateTool, toolsDir } from '../../src/config/tools';

const root = resolve(__dirname, '../..');
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [join(root, 'bin/ambiqa.mjs'), 'notebook', ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 300_000 });
const hasJupyter = existsSync(jupyterPath());

describe('ambiqa notebook', () => {
  it('registers the kernel under a prefix of choice and prints the environment', () => {
    const prefix = mkdtempSync(join(tmpdir(), 'ambiqa-jupyter-'));
    const res = cli(['--register-only'], { AMBIQA_JUPYTER_PREFIX: prefix });
    expect(res.status).toBe(0);
    const kernelJson = join(prefix, 'share/jupyter/kernels', KERNEL_NAME, 'kernel.json');
    expect(res.stdout).toContain(kernelJson);
    const spec = JSON.parse(readFileSync(kernelJson, 'utf8'));
    // tslab from the tool folder `ambiqa setup` fills (never the project's node_modules/.bin), and
    // the kernel told which copy it runs, so ambiqa's display helpers use the same one.
    const tslab = locateTool('notebook')!.packageDir;
    expect(tslab.startsWith(toolsDir())).toBe(true);
    expect(spec.argv.slice(3)).toEqual(['{connection_file}', root, join(tslab, 'bin', 'tslab')]);
    expect(spec.env).toEqual({ AMBIQA_HOME: root, AMBIQA_TSLAB: tslab });
    const env = cli(['--register-only', '--print-env'], { AMBIQA_JUPYTER_PREFIX: prefix });
    expect(env.stdout).toBe(`export JUPYTER_PATH='${prefix}/share/jupyter'\nexport PYDEVD_DISABLE_FILE_VALIDATION=1\n`);
  });

  it('installs the kernel on first use into an empty tool folder, reporting on stderr (stdout stays the exports)', () => {
    const tools = mkdtempSync(join(tmpdir(), 'ambiqa-tools-first-'));
    const prefix = mkdtempSync(join(tmpdir(), 'ambiqa-jupyter-'));
    const res = cli(['--register-only', '--print-env'], { AMBIQA_TOOLS_DIR: tools, AMBIQA_JUPYTER_PREFIX: prefix });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toBe(`export JUPYTER_PATH='${prefix}/share/jupyter'\nexport PYDEVD_DISABLE_FILE_VALIDATION=1\n`);
    expect(res.stderr).toMatch(/^\+ the notebook kernel \(tslab\): tslab@1\.0\.22 installed into .*notebook in \d+ s$/m);
    const spec = JSON.parse(readFileSync(join(prefix, 'share/jupyter/kernels', KERNEL_NAME, 'kernel.json'), 'utf8'));
    expect(spec.argv[5]).toBe(join(tools, 'notebook', 'node_modules', 'tslab', 'bin', 'tslab'));
    expect(existsSync(spec.argv[5])).toBe(true);
    // tslab's own TypeScript stays inside the tool folder.
    expect(existsSync(join(tools, 'notebook', 'node_modules', '@tslab', 'typescript-for-tslab'))).toBe(true);
    // A second start finds it and says nothing.
    const again = cli(['--register-only', '--print-env'], { AMBIQA_TOOLS_DIR: tools, AMBIQA_JUPYTER_PREFIX: prefix });
    expect(again.stderr).toBe('');
    for (const dir of [tools, prefix]) rmSync(dir, { recursive: true, force: true });
  });

  it('rejects bad options with a message and no stack', () => {
    const res = cli(['--port', 'abc']);
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/--port: 'abc' is not a port number/);
    // 0 would let Jupyter pick a port the command could not check is its own.
    for (const port of ['0', '65536']) expect(cli(['--port', port]).stderr).toContain(`--port: '${port}' is not a port number (1 to 65535)`);
    expect(cli(['x.ipynb']).stderr).toMatch(/only taken with --execute/);
    expect(cli(['--help']).stdout).toMatch(/usage: ambiqa notebook/);
  });

  it.skipIf(!hasJupyter)('--execute runs notebooks headless and fails on a failing cell', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-nb-cli-'));
    const write = (name: string, source: string) => {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify({
        cells: [{ cell_type: 'code', id: 'a', metadata: {}, execution_count: null, outputs: [], source }],
        metadata: { kernelspec: { name: KERNEL_NAME, display_name: 'TypeScript', language: 'typescript' } },
        nbformat: 4, nbformat_minor: 5,
      }));
      return path;
    };
    const ok = cli(['--execute', write('ok.ipynb', "import { linspace } from './src/plots/kde';\nconsole.log(linspace(0, 1, 3).join(','));"), '--out', join(dir, 'out')]);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/^ok +.*ok\.ipynb/m);
    expect(readFileSync(join(dir, 'out', 'ok.out.ipynb'), 'utf8')).toContain('0,0.5,1');
    const bad = cli(['--execute', write('bad.ipynb', "throw new Error('cell exploded');"), '--out', join(dir, 'out')]);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/^FAILED .*bad\.ipynb/m);
    expect(bad.stderr).toContain('cell exploded');
  });
});
