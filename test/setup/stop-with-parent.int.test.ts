import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { venvDir } from '../../src/config/paths';
import { jupyterPath } from '../../src/notebook/kernel';
import { LLAMA_CPP_PYTHON_VERSION } from '../../src/setup/llama-server';
import { freePort, mlflowExecutable } from '../../src/tracking/server';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';
import { fakeJupyter } from '../helpers/fake-jupyter';
import { commandLine, descendants, running, startCli, waitFor, type CliRun } from '../helpers/cli';

/**
 * `ambiqa serve`, `ambiqa notebook`, `ambiqa mlflow-ui` and the MLflow server a run starts for
 * itself leave nothing running once the command is stopped (SIGTERM, SIGHUP) or dies (SIGKILL):
 * the real command in a child process, its whole process tree read from /proc before the signal,
 * and every one of those processes gone after it.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-stop-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const hasJupyter = existsSync(jupyterPath());
const hasMlflow = existsSync(mlflowExecutable(venvDir()));
// Named indirectly: test/global-setup.ts starts a shared MLflow server for files that mention it.
const TRACKING_URI = ['MLFLOW', 'TRACKING', 'URI'].join('_');
const { [TRACKING_URI]: _uri, ...baseEnv } = process.env;

/** Signal the command once its tree is up, and check that no process of that tree is left. */
async function stopsEverything(cli: CliRun, ready: () => boolean, signal: NodeJS.Signals, expected: { atLeast: number; exit?: number | null }): Promise<void> {
  await waitFor(ready, `the command to be ready; it printed:\n${cli.output()}`, 240_000);
  const tree = descendants(cli.child.pid!);
  expect(tree.length, `processes under the command: ${tree.map(commandLine).join(' | ')}`).toBeGreaterThanOrEqual(expected.atLeast);
  cli.child.kill(signal);
  const code = await cli.exited;
  if (expected.exit !== undefined) expect(code, cli.output()).toBe(expected.exit);
  let left: number[] = [];
  await waitFor(() => (left = tree.filter(running)).length === 0, `no process of the command to remain after ${signal} (left: ${left.map((p) => `${p} ${commandLine(p)}`).join('; ')})`, 30_000);
}

describe('ambiqa serve', () => {
  // A stand-in for llama-cpp-python (a venv whose "python" runs a tiny OpenAI-compatible server)
  // that starts two helpers of its own, one of them in a session of its own, as servers do.
  const venv = join(dir, 'venv');
  mkdirSync(join(venv, 'bin'), { recursive: true });
  mkdirSync(join(venv, 'lib', 'python3.11', 'site-packages', `llama_cpp_python-${LLAMA_CPP_PYTHON_VERSION}.dist-info`), { recursive: true });
  const fake = join(dir, 'fake-llama-server.cjs');
  writeFileSync(
    fake,
    `const http = require('node:http');
const { spawn } = require('node:child_process');
const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
spawn('sleep', ['600'], { stdio: 'ignore' });
spawn('sleep', ['601'], { stdio: 'ignore', detached: true });
http.createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ data: [{ id: arg('--model_alias') }] })); })
  .listen(Number(arg('--port')), arg('--host'), () => console.log('fake llama server listening'));
`,
  );
  writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec "${process.execPath}" "${fake}" "$@"\n`);
  chmodSync(join(venv, 'bin', 'python'), 0o755);
  const model = join(dir, 'tiny.gguf');
  writeFileSync(model, 'not a real model');
  const serve = () => startCli(['serve', '--llm', model, '--port', '0', '--threads', '1'], { ...baseEnv, AMBIQA_VENV_DIR: venv });
  const up = (cli: CliRun) => () => /^http:\/\/127\.0\.0\.1:\d+\/v1$/m.test(cli.stdout());

  it('SIGTERM stops the server and everything it started; exit status 0', async () => {
    const cli = serve();
    await stopsEverything(cli, up(cli), 'SIGTERM', { atLeast: 4, exit: 0 });
    expect(cli.stderr()).toContain('SIGTERM: stopping the server');
  });

  it('SIGHUP (a closed terminal) stops it too', async () => {
    const cli = serve();
    await stopsEverything(cli, up(cli), 'SIGHUP', { atLeast: 4, exit: 0 });
  });

  it('SIGKILL of the command (nothing runs in it any more) still stops the server: the watchdog sees it die', async () => {
    const cli = serve();
    await stopsEverything(cli, up(cli), 'SIGKILL', { atLeast: 4, exit: null });
  });
});

describe('ambiqa notebook', () => {
  const prefix = join(dir, 'jupyter-prefix');
  const env = { ...baseEnv, AMBIQA_JUPYTER_PREFIX: prefix, JUPYTER_RUNTIME_DIR: join(dir, 'jupyter-runtime') };

  it('--help says what it binds', async () => {
    const cli = startCli(['notebook', '--help'], env);
    expect(await cli.exited).toBe(0);
    expect(cli.stdout()).toMatch(/--ip <address> +address JupyterLab binds \(default 127\.0\.0\.1, this machine only,\s+container or not/);
    expect(cli.stdout()).not.toMatch(/0\.0\.0\.0 inside a container/);
  });

  it.skipIf(!hasJupyter)('SIGTERM stops JupyterLab (the real one from the venv) and leaves nothing running', async () => {
    const port = await freePort();
    const cli = startCli(['notebook', '--no-browser', '--port', String(port)], env);
    // Announced once the real JupyterLab proved itself: its socket, and the token it was given (through JUPYTER_TOKEN).
    const proven = new RegExp(`^JupyterLab \\(checked: the server this command started\\): http://127\\.0\\.0\\.1:${port}/lab\\?token=[0-9a-f]{48}$`, 'm');
    await stopsEverything(cli, () => proven.test(cli.stdout()), 'SIGTERM', { atLeast: 2, exit: 0 });
    expect(cli.stdout()).toContain('bound to 127.0.0.1');
  }, 300_000);

  it('SIGKILL of the command stops the Jupyter it started (a stand-in Jupyter with a helper of its own)', async () => {
    // test/helpers/fake-jupyter.ts: serves /api/status with the token it was given, so the command
    // proves it is its JupyterLab and announces it before the kill.
    const jupyter = fakeJupyter(dir, 'fake-jupyter', 'honest').command;
    const cli = startCli(['notebook', '--no-browser', '--port', String(await freePort())], { ...env, AMBIQA_JUPYTER: jupyter });
    await stopsEverything(cli, () => cli.stdout().includes('/lab?token='), 'SIGKILL', { atLeast: 3, exit: null });
  });
});

describe.skipIf(!hasMlflow && !process.env.CI)('MLflow servers', () => {
  it('ambiqa mlflow-ui: SIGTERM stops the server and its workers', async () => {
    const cli = startCli(['mlflow-ui', '--store-dir', join(dir, 'mlflow-ui-store')], baseEnv);
    await stopsEverything(cli, () => cli.stdout().includes('MLflow UI: http://'), 'SIGTERM', { atLeast: 2, exit: 0 });
  }, 300_000);

  it('the server a run starts for itself stops when the run is killed with SIGKILL', async () => {
    const config = writeYaml(join(dir, 'slow.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 20) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted', latencyMs: 2000, cache: join(dir, 'cache.sqlite') },
      tracking: { experiment: 'stop-with-parent' },
      concurrency: 1,
    });
    const cli = startCli(['run', config, '--quiet'], { ...baseEnv, AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts') });
    await stopsEverything(cli, () => cli.stderr().includes('MLflow UI: http://'), 'SIGKILL', { atLeast: 2, exit: null });
  }, 300_000);
});
