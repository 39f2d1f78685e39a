import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { assertPortFree, servedBy } from '../common/port';
import { artifactsDir, venvDir } from '../config/paths';
import { MlflowClient } from './client';

/**
 * A local MLflow server from the project venv, for when MLFLOW_TRACKING_URI is not set: sqlite
 * store and artifacts under `artifacts/mlflow/`, bound to 127.0.0.1 on a free port, artifacts
 * served through the server (`--serve-artifacts`), so the REST client needs nothing but HTTP.
 *
 * The server runs under a small Python watchdog that reads our end of a pipe: when this process
 * ends for any reason — normal exit, Ctrl-C, even SIGKILL — the pipe closes and the watchdog
 * stops the server's whole process group. No orphaned servers holding ports and sqlite locks.
 */

export interface LocalServer {
  uri: string;
  /** Folder with `mlflow.db`, `artifacts/` and `server.log`. */
  storeDir: string;
  logFile: string;
  /** Stop the server and wait for it to exit (idempotent). */
  stop(): Promise<void>;
  /** Settles when the server process has exited, for whatever reason. */
  exited: Promise<void>;
}

export interface StartServerOptions {
  /** Default: `artifactsDir()/mlflow`. */
  storeDir?: string;
  /** Default: `venvDir()`. */
  venv?: string;
  host?: string;
  /** Default: a free port. */
  port?: number;
  /** How long to wait for `/health` (default 240 s: a first start migrates the sqlite schema, slow on 2 busy cores). */
  timeoutMs?: number;
  /** Keep the event loop alive while the server runs (for `ambiqa mlflow-ui`). Default false. */
  keepAlive?: boolean;
}

/** The exact command line, shared by the CLI, the tests' global setup and the docs. */
export function serverCommand(venv: string, storeDir: string, host: string, port: number): string[] {
  return [
    join(venv, 'bin', 'mlflow'),
    'server',
    '--backend-store-uri',
    `sqlite:///${join(storeDir, 'mlflow.db')}`,
    '--artifacts-destination',
    join(storeDir, 'artifacts'),
    '--serve-artifacts',
    '--host',
    host,
    '--port',
    String(port),
    // One worker is plenty for one user and keeps a 2-core machine free for the models.
    '--workers',
    '1',
  ];
}

/**
 * Environment for the server: MLflow 3 starts a job runner with seven huey consumer processes
 * by default (for GenAI scorer jobs we never use); switching it off saves hundreds of MB and
 * seconds of start-up.
 */
export function serverEnv(): NodeJS.ProcessEnv {
  return { ...process.env, MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false', PYTHONUNBUFFERED: '1' };
}

// The watchdog between this process and the MLflow server (Python: the venv has it, and it
// starts in milliseconds). It reads its stdin, a pipe whose other end only this process holds,
// with os.read: a daemon thread blocked in sys.stdin.buffer.read holds the buffered reader's lock
// at interpreter shutdown, which ended every watchdog with "Fatal Python error:
// _enter_buffered_busy". It ends with os._exit for the same reason (no finalisation while that
// thread is blocked). On Linux the server gets PR_SET_PDEATHSIG (SIGTERM): should the watchdog be
// killed with SIGKILL, the kernel still stops the server.
export const WATCHDOG = `
import os, signal, subprocess, sys, threading
def guard():
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except Exception:
        pass
child = subprocess.Popen(sys.argv[1:], start_new_session=True, preexec_fn=guard if sys.platform.startswith('linux') else None)
stopping = threading.Event()
def stop(*_):
    if stopping.is_set():
        return
    stopping.set()
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    def force():
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    threading.Thread(target=force, daemon=True).start()
def watch_parent():
    try:
        while os.read(0, 4096):
            pass
    except Exception:
        pass
    stop()
threading.Thread(target=watch_parent, daemon=True).start()
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGHUP, stop)
code = child.wait()
try:
    os.killpg(child.pid, signal.SIGKILL)
except ProcessLookupError:
    pass
os._exit(code if code >= 0 else 0)
`;

export function mlflowExecutable(venv = venvDir()): string {
  return join(venv, 'bin', 'mlflow');
}

function assertInstalled(venv: string): void {
  if (!existsSync(mlflowExecutable(venv)) || !existsSync(join(venv, 'bin', 'python'))) {
    throw new AmbiqaError(
      `MLflow is not installed: ${mlflowExecutable(venv)} does not exist`,
      'run `npx ambiqa setup` (it creates the project venv with mlflow), or set MLFLOW_TRACKING_URI to a running MLflow server',
    );
  }
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startLocalServer(options: StartServerOptions = {}): Promise<LocalServer> {
  const venv = options.venv ?? venvDir();
  assertInstalled(venv);
  const storeDir = options.storeDir ?? join(artifactsDir(), 'mlflow');
  const host = options.host ?? '127.0.0.1';
  mkdirSync(join(storeDir, 'artifacts'), { recursive: true });
  const logFile = join(storeDir, 'server.log');

  // A port given is refused at once when another program holds it: that program would answer
  // /health and be advertised as this store's server.
  if (options.port) await assertPortFree(host, options.port, '--port');
  // A port found free can be taken before the server binds it; try a few.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = options.port ?? (await freePort(host));
    try {
      return await launch(venv, storeDir, host, port, logFile, options);
    } catch (error) {
      lastError = error;
      if (options.port || !(error instanceof PortTaken)) break;
    }
  }
  throw lastError;
}

class PortTaken extends Error {}

async function launch(venv: string, storeDir: string, host: string, port: number, logFile: string, options: StartServerOptions): Promise<LocalServer> {
  const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
  const logFd = openSync(logFile, 'a');
  const child: ChildProcess = spawn(join(venv, 'bin', 'python'), ['-c', WATCHDOG, ...serverCommand(venv, storeDir, host, port)], {
    stdio: ['pipe', logFd, logFd],
    detached: true, // own process group: Ctrl-C in the terminal reaches us, not the server directly
    env: serverEnv(),
  });
  closeSync(logFd);
  const uri = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let exited: number | null = null;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exited = code ?? 0;
      resolve();
    });
  });
  const killOnExit = (): void => {
    try {
      child.kill('SIGTERM');
    } catch {
      /* already gone */
    }
  };
  process.once('exit', killOnExit);
  if (!options.keepAlive) {
    child.unref();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return exitPromise;
    stopped = true;
    process.removeListener('exit', killOnExit);
    if (exited === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exitPromise;
      clearTimeout(timer);
    }
    child.stdin?.destroy();
  };

  const client = new MlflowClient(uri);
  const deadline = Date.now() + (options.timeoutMs ?? 240_000);
  while (Date.now() < deadline) {
    if (exited !== null) break;
    if (await client.isHealthy(2000)) {
      // The answer must come from the server started here (a socket of its process tree), not
      // from a program that took the port between the check and the start.
      if (servedBy(child.pid!, port) === false) {
        await stop();
        if (!options.port) throw new PortTaken(`port ${port} is taken`);
        throw new AmbiqaError(`--port ${port}: what answers at ${uri} is not the MLflow server this command started (another program listens on port ${port})`, 'stop that program, or pick another --port');
      }
      return { uri, storeDir, logFile, stop, exited: exitPromise };
    }
    await Promise.race([exitPromise, new Promise((r) => setTimeout(r, 500))]);
  }
  await stop();
  const log = readLogTail(logFile, logStart);
  if (/address already in use|Errno 98/i.test(log)) throw new PortTaken(`port ${port} is taken`);
  const why = exited !== null ? `exited with code ${exited}` : `did not answer ${uri}/health within ${Math.round((options.timeoutMs ?? 240_000) / 1000)} s`;
  throw new AmbiqaError(
    `the local MLflow server (${mlflowExecutable(venv)}) ${why}; last lines of ${logFile}:\n${indent(log)}`,
    'fix what the log says (a broken venv: run `npx ambiqa setup` again), or set MLFLOW_TRACKING_URI to a running server',
  );
}

function readLogTail(logFile: string, from: number): string {
  try {
    const text = readFileSync(logFile, 'utf8').slice(from);
    return text.trim().split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}

// -------------------------------------------------------------------------- shared local server

/** Written while a local server started by `ambiqa mlflow-ui` runs, so that other commands reuse it. */
const SERVER_FILE = 'server.json';

interface ServerRecord {
  uri: string;
  pid: number;
}

function readServerRecord(storeDir: string): ServerRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(storeDir, SERVER_FILE), 'utf8')) as ServerRecord;
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Record a long-running server (mlflow-ui) so that later commands talk to it instead of starting another. */
export function advertiseServer(server: LocalServer): () => void {
  const path = join(server.storeDir, SERVER_FILE);
  writeFileSync(path, JSON.stringify({ uri: server.uri, pid: process.pid } satisfies ServerRecord) + '\n');
  return () => {
    const current = readServerRecord(server.storeDir);
    if (current?.pid === process.pid) rmSync(path, { force: true });
  };
}

/**
 * The server a person browses runs with right now, without starting one: MLFLOW_TRACKING_URI when
 * set, else a running `ambiqa mlflow-ui` on the project store; undefined when neither.
 */
export function browsingServerUri(storeDir = join(artifactsDir(), 'mlflow')): string | undefined {
  const fromEnv = process.env.MLFLOW_TRACKING_URI?.trim();
  if (fromEnv) return fromEnv.replace(/\/+$/, '');
  const shared = readServerRecord(storeDir);
  return shared && processAlive(shared.pid) ? shared.uri : undefined;
}

/**
 * A run's MLflow address as it should be linked now. A run logged to a server this process
 * started for itself recorded that server's port, which is gone once the command ended; the
 * same store is what `ambiqa mlflow-ui` serves, so the link follows the server the user browses
 * with. Addresses of other hosts are kept as they are.
 */
export function followBrowsingServer(runUrl: string, storeDir?: string): { url: string; note?: string } {
  let recorded: URL;
  try {
    recorded = new URL(runUrl);
  } catch {
    return { url: runUrl };
  }
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(recorded.hostname)) return { url: runUrl };
  const current = browsingServerUri(storeDir);
  const rest = runUrl.slice(recorded.origin.length);
  if (current) return { url: `${current}${rest}` };
  return { url: runUrl, note: 'the local MLflow server that logged this run has stopped: start `npx ambiqa mlflow-ui` and open the run from there' };
}

export interface ResolvedTracking {
  uri: string;
  /** 'env': MLFLOW_TRACKING_URI; 'shared': a running `ambiqa mlflow-ui`; 'local': started for this process. */
  source: 'env' | 'shared' | 'local';
  server?: LocalServer;
}

let localServer: Promise<LocalServer> | undefined;

/**
 * The tracking server to use: MLFLOW_TRACKING_URI when set; otherwise a local server already
 * running for this project (`ambiqa mlflow-ui`); otherwise one started now for the life of this
 * process (one per process, however often this is called). Prints the UI address when it starts one.
 */
export async function resolveTrackingUri(options: { notify?: (message: string) => void; storeDir?: string } = {}): Promise<ResolvedTracking> {
  const fromEnv = process.env.MLFLOW_TRACKING_URI?.trim();
  if (fromEnv) return { uri: fromEnv.replace(/\/+$/, ''), source: 'env' };
  const storeDir = options.storeDir ?? join(artifactsDir(), 'mlflow');
  const shared = readServerRecord(storeDir);
  if (shared && processAlive(shared.pid) && (await new MlflowClient(shared.uri).isHealthy())) {
    return { uri: shared.uri, source: 'shared' };
  }
  const notify = options.notify ?? ((m: string) => console.error(m));
  if (!localServer) {
    notify(`starting a local MLflow server (store: ${storeDir}) …`);
    localServer = startLocalServer({ storeDir });
    localServer.catch(() => {
      localServer = undefined;
    });
    const server = await localServer;
    notify(`MLflow UI: ${server.uri}  (local server; it stops when this command ends — \`npx ambiqa mlflow-ui\` keeps one running)`);
  }
  const server = await localServer;
  return { uri: server.uri, source: 'local', server };
}

/** Stop the server resolveTrackingUri() started, if any (tests; the CLI just exits). */
export async function stopLocalServer(): Promise<void> {
  const pending = localServer;
  localServer = undefined;
  if (pending) await (await pending).stop();
}
