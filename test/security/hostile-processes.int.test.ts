import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedBy } from '../../src/common/port';
import { spawnSupervised } from '../../src/common/supervise';
import { venvDir } from '../../src/config/paths';
import { LLAMA_CPP_PYTHON_VERSION } from '../../src/setup/llama-server';
import { WATCHDOG } from '../../src/tracking/server';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';
import { ensureBuilt } from '../helpers/build';
import { fakeJupyter } from '../helpers/fake-jupyter';
import { commandLine, descendants, running, startCli, waitFor, type CliRun } from '../helpers/cli';

/**
 * Processes and ports under attack (issue 43), with the real command in a child process: a FIFO
 * at a run's lock path, another program on the port `serve` or `mlflow-ui` is told to use, an
 * impostor answering on the server's port, and SIGKILL of the command, of its watchdog, or of
 * both at once. Stand-ins replace llama.cpp's server and Jupyter (the real ones take minutes to
 * build or start); what is tested is ambiqa's side: refusals, and that nothing is left running.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-hostile-proc-'));
// Named indirectly: test/global-setup.ts starts a real MLflow server for files that mention it.
const TRACKING_URI = ['MLFLOW', 'TRACKING', 'URI'].join('_');
const { [TRACKING_URI]: _uri, ...baseEnv } = process.env;
const cleanup: Array<() => void> = [];
beforeAll(() => ensureBuilt(), 300_000);
afterAll(() => {
  for (const f of cleanup) f();
  rmSync(dir, { recursive: true, force: true });
});

/** Another program on a loopback port: answers everything as an OpenAI-compatible server and MLflow would. */
async function squatter(): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(req.url === '/health' ? 'OK' : JSON.stringify({ data: [{ id: 'impostor' }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => server.close());
  return { port: (server.address() as AddressInfo).port, server };
}

async function finishes(cli: CliRun, withinMs: number): Promise<number | null> {
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), withinMs);
  const code = await cli.exited;
  clearTimeout(timer);
  return code;
}

/** A venv whose "python" runs `script` with node (a stand-in for llama-cpp-python's server). */
function fakeVenv(name: string, script: string): { venv: string; marker: string } {
  const venv = join(dir, name);
  mkdirSync(join(venv, 'bin'), { recursive: true });
  mkdirSync(join(venv, 'lib', 'python3.11', 'site-packages', `llama_cpp_python-${LLAMA_CPP_PYTHON_VERSION}.dist-info`), { recursive: true });
  const marker = join(venv, 'started');
  const file = join(venv, 'server.cjs');
  writeFileSync(file, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, String(process.pid));\n${script}`);
  writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec "${process.execPath}" "${file}" "$@"\n`);
  chmodSync(join(venv, 'bin', 'python'), 0o755);
  // For mlflow-ui: an "mlflow" that marks that it was started.
  writeFileSync(join(venv, 'bin', 'mlflow'), `#!/bin/sh\ntouch "${marker}"\nexec sleep 600\n`);
  chmodSync(join(venv, 'bin', 'mlflow'), 0o755);
  return { venv, marker };
}

const llamaStandIn = `const http = require('node:http');
const { spawn } = require('node:child_process');
const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
spawn('sleep', ['600'], { stdio: 'ignore' });
spawn('sleep', ['601'], { stdio: 'ignore', detached: true });
http.createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ data: [{ id: arg('--model_alias') }] })); })
  .listen(Number(arg('--port')), arg('--host'), () => console.log('fake llama server listening'));
`;
const model = join(dir, 'tiny.gguf');
writeFileSync(model, 'not a real model');

describe('a FIFO at a run lock', () => {
  it('`ambiqa run` fails within 5 s with one line naming the lock file, instead of blocking for good', async () => {
    const artifacts = join(dir, 'fifo-artifacts');
    mkdirSync(join(artifacts, 'runs', 'fifo'), { recursive: true });
    spawnSync('mkfifo', [join(artifacts, 'runs', 'fifo', 'run.lock')]);
    const config = writeYaml(join(dir, 'fifo.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 2) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted' },
      metrics: ['str_em'],
      tracking: { enabled: false },
    });
    const started = Date.now();
    const cli = startCli(['run', config, '--name', 'fifo'], { ...baseEnv, AMBIQA_ARTIFACTS_DIR: artifacts });
    const code = await finishes(cli, 20_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    const lines = cli.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`lock file ${join(artifacts, 'runs', 'fifo', 'run.lock')} is a FIFO, not a regular file`);
  });
});

describe('ports: servers prove who they are', () => {
  it('`serve --port P` with another program on P exits non-zero naming the port, and starts nothing', async () => {
    const { port } = await squatter();
    const { venv, marker } = fakeVenv('venv-taken', llamaStandIn);
    const cli = startCli(['serve', '--llm', model, '--port', String(port), '--threads', '1'], { ...baseEnv, AMBIQA_VENV_DIR: venv });
    const code = await finishes(cli, 30_000);
    expect(code).not.toBe(0);
    expect(cli.stderr()).toContain(`--port: port ${port} on 127.0.0.1 is already in use by another program; nothing was started`);
    expect(cli.stdout()).toBe('');
    expect(existsSync(marker)).toBe(false);
  });

  it('`mlflow-ui --port P` with another program on P exits non-zero naming the port, and advertises nothing', async () => {
    const { port } = await squatter();
    const { venv, marker } = fakeVenv('venv-mlflow', '');
    const store = join(dir, 'mlflow-store');
    const cli = startCli(['mlflow-ui', '--port', String(port), '--store-dir', store], { ...baseEnv, AMBIQA_VENV_DIR: venv });
    const code = await finishes(cli, 30_000);
    expect(code).not.toBe(0);
    expect(cli.stderr()).toContain(`--port: port ${port} on 127.0.0.1 is already in use by another program`);
    expect(cli.stdout()).not.toContain('MLflow UI:');
    expect(existsSync(join(store, 'server.json'))).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });

  it('`serve` refuses an impostor: a program outside the tree it started answering on its port', async () => {
    // The stand-in starts the real listener through a double fork (reparented to init), then
    // waits: the port answers, but not from anything `serve` started.
    const pidFile = join(dir, 'impostor.pid');
    const listener = join(dir, 'impostor.cjs');
    writeFileSync(
      listener,
      `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
require('node:http').createServer((q, s) => s.end(JSON.stringify({ data: [] }))).listen(Number(process.argv[2]), process.argv[3]);
`,
    );
    const impostor = `const { spawn } = require('node:child_process');
const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
spawn('sh', ['-c', '"$0" "$1" "$2" "$3" </dev/null >/dev/null 2>&1 &', process.execPath, ${JSON.stringify(listener)}, arg('--port'), arg('--host')], { stdio: 'ignore' });
setInterval(() => {}, 1000);
`;
    const { venv } = fakeVenv('venv-impostor', impostor);
    cleanup.push(() => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* not started */
      }
    });
    const cli = startCli(['serve', '--llm', model, '--port', '0', '--threads', '1'], { ...baseEnv, AMBIQA_VENV_DIR: venv });
    const code = await finishes(cli, 60_000);
    expect(code).not.toBe(0);
    expect(cli.stderr()).toMatch(/port (\d+): what answers at http:\/\/127\.0\.0\.1:\1\/v1 is not the llama\.cpp server this command started/);
    expect(cli.stdout()).toBe('');
  });

  it('servedBy tells the process that listens from one that does not', async () => {
    const { port } = await squatter();
    expect(servedBy(process.pid, port)).toBe(true);
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    cleanup.push(() => other.kill('SIGKILL'));
    expect(servedBy(other.pid!, port)).toBe(false);
  });
});

describe('notebook: what answers on the port is the JupyterLab it started', () => {
  // A stand-in Jupyter (test/helpers/fake-jupyter.ts), the kernel spec in a prefix of its own.
  const env = { ...baseEnv, AMBIQA_JUPYTER_PREFIX: join(dir, 'jupyter-prefix'), JUPYTER_RUNTIME_DIR: join(dir, 'jupyter-runtime') };
  const notebook = async (mode: Parameters<typeof fakeJupyter>[2], name: string, port?: number) => {
    const fake = fakeJupyter(dir, name, mode);
    cleanup.push(() => {
      try {
        process.kill(Number(readFileSync(fake.files.pid, 'utf8')), 'SIGKILL');
      } catch {
        /* not started, or gone */
      }
    });
    const p = port ?? (await freePortHere());
    return { fake, port: p, cli: startCli(['notebook', '--no-browser', '--port', String(p)], { ...env, AMBIQA_JUPYTER: fake.command }) };
  };
  const announced = (cli: CliRun) => /^JupyterLab \(checked: the server this command started\): (\S+)$/m.exec(cli.stdout())?.[1];

  it('`notebook --port P` with another program on P exits non-zero naming the port, and starts nothing', async () => {
    const { port } = await squatter();
    const { fake, cli } = await notebook('honest', 'nb-taken', port);
    const code = await finishes(cli, 30_000);
    expect(code).not.toBe(0);
    expect(cli.stderr()).toContain(`--port: port ${port} on 127.0.0.1 is already in use by another program; nothing was started`);
    expect(existsSync(fake.files.started)).toBe(false);
  });

  it('announces the URL with a fresh token only once its JupyterLab answers; a server that dies makes it exit 1 naming the port', async () => {
    const { fake, port, cli } = await notebook('honest', 'nb-honest');
    await waitFor(() => announced(cli) !== undefined, `the URL to be announced:\n${cli.output()}`, 30_000);
    const token = readFileSync(fake.files.token, 'utf8');
    expect(token).toMatch(/^[0-9a-f]{48}$/);
    expect(announced(cli)).toBe(`http://127.0.0.1:${port}/lab?token=${token}`);
    // The token came through the environment, never on the command line, and Jupyter's own banner
    // (printed before the proof) shows it hidden: the announcement is the only place it appears.
    expect(cli.stdout()).toContain('fake jupyter lab');
    expect(cli.stdout()).not.toMatch(new RegExp(`fake jupyter .*${token}`));
    expect(cli.stderr()).toContain(`http://127.0.0.1:${port}/lab?token=<token>`);
    expect(cli.output().split(token)).toHaveLength(2);
    // A second start gets another token.
    const again = await notebook('honest', 'nb-honest-2');
    await waitFor(() => announced(again.cli) !== undefined, `the second URL:\n${again.cli.output()}`, 30_000);
    expect(readFileSync(again.fake.files.token, 'utf8')).not.toBe(token);
    again.cli.child.kill('SIGTERM');
    expect(await finishes(again.cli, 20_000)).toBe(0);
    // The server dies by itself: non-zero, one line naming the port.
    process.kill(Number(readFileSync(fake.files.pid, 'utf8')), 'SIGKILL');
    expect(await finishes(cli, 20_000)).toBe(1);
    expect(cli.stderr().trim().split('\n').at(-1)).toBe(`port ${port}: JupyterLab exited with signal 9 (it died while this command ran)`);
  });

  it('a JupyterLab that exits before it answers: non-zero, naming the port', async () => {
    const { port, cli } = await notebook('crash', 'nb-crash');
    expect(await finishes(cli, 30_000)).toBe(1);
    expect(cli.stderr()).toContain(`port ${port}: JupyterLab exited with code 3 before it answered on http://127.0.0.1:${port}`);
    expect(cli.stdout()).not.toContain('token=');
  });

  it('an impostor outside the tree it started (that fakes the token check) is refused: the socket is not its child\'s', async () => {
    const { port, cli } = await notebook('outside', 'nb-outside');
    const code = await finishes(cli, 30_000);
    expect(code, cli.output()).toBe(1);
    expect(cli.stderr()).toContain(`port ${port}: what answers at http://127.0.0.1:${port} is not the JupyterLab this command started (another program listens on port ${port}); nothing was opened`);
    expect(cli.stdout()).not.toContain('token=');
  });

  it('a server in its own tree that answers without the token is refused: it is not the JupyterLab that was given the token', async () => {
    const { port, cli } = await notebook('open', 'nb-open');
    const code = await finishes(cli, 30_000);
    expect(code, cli.output()).toBe(1);
    expect(cli.stderr()).toContain(`port ${port}: what answers at http://127.0.0.1:${port} is not the JupyterLab this command started (it answers without the token this command gave JupyterLab`);
    expect(cli.stdout()).not.toContain('token=');
  });
});

/** A port free now on loopback (bound for a moment by this process). */
async function freePortHere(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('children die with their parent, whatever kills it', () => {
  const serve = (name: string, options: { detached?: boolean } = {}) => {
    const { venv } = fakeVenv(name, llamaStandIn);
    const env = { ...baseEnv, AMBIQA_VENV_DIR: venv };
    if (!options.detached) return startCli(['serve', '--llm', model, '--port', '0', '--threads', '1'], env);
    // In a process group of its own, so that the whole group (the command and its watchdog) can be killed at once.
    const child = spawn(process.execPath, [join(__dirname, '../../bin/ambiqa.mjs'), 'serve', '--llm', model, '--port', '0', '--threads', '1'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    return { child, exited, stdout: () => out, stderr: () => out, output: () => out } as CliRun;
  };
  const up = (cli: CliRun) => () => /^http:\/\/127\.0\.0\.1:\d+\/v1$/m.test(cli.stdout());

  async function nothingLeft(tree: number[], withinMs: number, what: string): Promise<void> {
    let left: number[] = [];
    await waitFor(() => (left = tree.filter(running)).length === 0, `no process to remain after ${what} (left: ${left.map((p) => `${p} ${commandLine(p)}`).join('; ')})`, withinMs);
  }

  it('SIGKILL of `ambiqa serve` leaves no server process behind within 5 s', async () => {
    const cli = serve('venv-kill-cli');
    await waitFor(up(cli), `serve to be up:\n${cli.output()}`, 60_000);
    const tree = descendants(cli.child.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(4);
    cli.child.kill('SIGKILL');
    await nothingLeft(tree, 5_000, 'SIGKILL of the command');
  });

  it('SIGKILL of the watchdog alone: the command stops the server and its helpers within 5 s, and exits non-zero', async () => {
    const cli = serve('venv-kill-watchdog');
    await waitFor(up(cli), `serve to be up:\n${cli.output()}`, 60_000);
    // The command refreshes what it knows of the server's tree every 2 s.
    await new Promise((r) => setTimeout(r, 2_500));
    const tree = descendants(cli.child.pid!);
    const watchdog = tree.find((p) => commandLine(p).includes('-e'))!;
    expect(watchdog).toBeDefined();
    process.kill(watchdog, 'SIGKILL');
    await nothingLeft(tree, 5_000, 'SIGKILL of the watchdog');
    expect(await cli.exited).toBe(1);
  });

  it('SIGKILL of the command and its watchdog at once (their process group): the server gets its parent-death signal', async () => {
    const cli = serve('venv-kill-group', { detached: true });
    await waitFor(up(cli), `serve to be up:\n${cli.output()}`, 60_000);
    const tree = descendants(cli.child.pid!);
    const server = tree.find((p) => commandLine(p).includes('server.cjs'))!;
    expect(server).toBeDefined();
    process.kill(-cli.child.pid!, 'SIGKILL');
    // The server itself (the process the watchdog started) ends by the kernel's signal; helpers
    // it started are its own to stop on SIGTERM, as a real server does.
    await nothingLeft([server], 5_000, 'SIGKILL of the group');
    cleanup.push(() => {
      for (const p of tree) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    });
  });

  it('a supervised child stops when its watchdog is killed, in-process too', async () => {
    const sup = spawnSupervised('sleep', ['600'], { stdio: ['ignore', 'ignore', 'ignore'], graceMs: 1_000 });
    await waitFor(() => descendants(sup.watchdog.pid!).length > 0, 'the child to start', 10_000);
    const tree = descendants(sup.watchdog.pid!);
    await new Promise((r) => setTimeout(r, 300));
    sup.watchdog.kill('SIGKILL');
    await nothingLeft(tree, 5_000, 'SIGKILL of the watchdog');
  });
});

describe("the MLflow server's watchdog", () => {
  const python = [join(venvDir(), 'bin', 'python'), '/usr/bin/python3'].find((p) => existsSync(p));
  it.skipIf(!python)('stops its child on SIGTERM and exits cleanly (no "Fatal Python error: _enter_buffered_busy")', async () => {
    const child = spawn(python!, ['-c', WATCHDOG, 'sleep', '600'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    await waitFor(() => descendants(child.pid!).length > 0, 'the child to start', 10_000);
    const tree = descendants(child.pid!);
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    await nothingLeft(tree, 5_000, 'SIGTERM of the watchdog');
  });

  async function nothingLeft(tree: number[], withinMs: number, what: string): Promise<void> {
    let left: number[] = [];
    await waitFor(() => (left = tree.filter(running)).length === 0, `no process to remain after ${what} (left: ${left.join(', ')})`, withinMs);
  }
});
