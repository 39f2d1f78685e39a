import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { AmbiqaError } from '../errors';
import { servedBy } from '../common/port';
import { spawnSupervised, type Supervised } from '../common/supervise';

/**
 * JupyterLab started for `ambiqa notebook`, and the proof that what answers on its port is it.
 *
 * Checking that the port is free before the start leaves a window, and a program on another
 * address of the same port could still answer: the URL printed, token included, would then lead
 * the user (and the token) to that program. So JupyterLab gets a fresh random token (in its
 * environment, JUPYTER_TOKEN: the command line is readable by every user, a process's
 * environment only by its owner), and the URL is announced only once
 *
 *   - the socket listening on the port is one of the started process tree's (Linux, /proc; the
 *     check `serve` and `mlflow-ui` make), and
 *   - `GET /api/status` answers 200 with that token and does not answer 200 without it: a
 *     program that answers anything, or that does not know the token, is not this JupyterLab.
 *
 * A program outside the tree that tells requests with a token from those without passes the
 * second check; only the first catches it (so off Linux such a program is not caught).
 */
export interface LabOptions {
  /** The jupyter command and its arguments (this adds `--port`, `--ip`, `--no-browser`, port_retries). */
  jupyter: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The address JupyterLab binds. */
  ip: string;
  port: number;
  /** How long JupyterLab may take to answer (default 180 s: a first start builds its assets' index, slow on busy cores). */
  readyTimeoutMs?: number;
  /** Where JupyterLab's own log lines go, the token in them replaced (default this process's stdout/stderr). */
  out?: (line: string) => void;
  err?: (line: string) => void;
}

export interface StartedLab {
  /** The watchdog over JupyterLab: stop it at once, even before it is ready. */
  supervised: Supervised;
  port: number;
  /**
   * Resolves with `http://host:port/lab?token=…`, the address to open, once what answers is
   * proven to be this JupyterLab; rejects (after stopping it) when JupyterLab exits first, does not
   * answer in time, or something else answers.
   */
  ready: Promise<string>;
}

/** Where to connect to reach a server bound to `ip` (a wildcard address is reached on loopback). */
export function connectHost(ip: string): string {
  if (ip === '0.0.0.0' || ip === '') return '127.0.0.1';
  if (ip === '::' || ip === '[::]') return '::1';
  return ip;
}

function origin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The status of `GET url` (no redirects followed), or undefined when nothing answers. */
async function statusOf(url: string, headers: Record<string, string>): Promise<number | undefined> {
  try {
    const r = await fetch(url, { headers, redirect: 'manual', signal: AbortSignal.timeout(2_000) });
    await r.body?.cancel().catch(() => undefined);
    return r.status;
  } catch {
    return undefined;
  }
}

export function startLab(options: LabOptions): StartedLab {
  const { port } = options;
  // 24 random bytes: the token is this start's nonce, never reused and never on a command line.
  const token = randomBytes(24).toString('hex');
  const { JUPYTER_TOKEN_FILE: _file, ...env } = options.env;
  const args = [...options.args, `--ip=${options.ip}`, `--port=${port}`, '--ServerApp.port_retries=0', '--no-browser'];
  const supervised = spawnSupervised(options.jupyter, args, { cwd: options.cwd, env: { ...env, JUPYTER_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
  const child = supervised.watchdog;
  // JupyterLab's banner prints its URL with the token before anything is proven; its lines pass
  // through with the token replaced, and the URL is announced by the caller once proven.
  const hide = (line: string) => line.split(token).join('<token>');
  const out = options.out ?? ((l: string) => process.stdout.write(`${l}\n`));
  const err = options.err ?? ((l: string) => process.stderr.write(`${l}\n`));
  createInterface({ input: child.stdout! }).on('line', (l) => out(hide(l)));
  createInterface({ input: child.stderr! }).on('line', (l) => err(hide(l)));
  let exitCode: number | null | undefined;
  void supervised.exited.then((code) => (exitCode = code));

  const base = origin(connectHost(options.ip), port);
  const refuse = async (why: string): Promise<never> => {
    await supervised.stop();
    throw new AmbiqaError(`port ${port}: what answers at ${base} is not the JupyterLab this command started (${why}); nothing was opened`, 'stop the program that holds the port, or pick another --port');
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 180_000);
  const ready = (async (): Promise<string> => {
    while (true) {
      if (exitCode !== undefined) {
        throw new AmbiqaError(`port ${port}: JupyterLab exited with ${describeExit(exitCode)} before it answered on ${base}`, 'see its log lines above (a port in use, a broken venv: run `npx ambiqa setup` again)');
      }
      const withToken = await statusOf(`${base}/api/status`, { authorization: `token ${token}` });
      if (withToken !== undefined) {
        // The socket first: it names the culprit when another program holds the port.
        if (servedBy(child.pid!, port) === false) await refuse(`another program listens on port ${port}`);
        if (withToken !== 200) await refuse(`GET /api/status with the token this command gave JupyterLab answered HTTP ${withToken}; a token or password set in a Jupyter config file also does this`);
        const without = await statusOf(`${base}/api/status`, {});
        if (without === 200) await refuse('it answers without the token this command gave JupyterLab; a Jupyter config that turns authentication off also does this');
        return `${base}/lab?token=${token}`;
      }
      if (Date.now() > deadline) {
        await supervised.stop();
        throw new AmbiqaError(`port ${port}: JupyterLab did not answer on ${base} within ${Math.round((options.readyTimeoutMs ?? 180_000) / 1000)} s; it was stopped`);
      }
      await Promise.race([supervised.exited, new Promise((r) => setTimeout(r, 250))]);
    }
  })();
  return { supervised, port, ready };
}

/** "code 3", "signal 9" (the watchdog reports a signal n as 128 + n). */
export function describeExit(code: number | null): string {
  if (code === null) return 'an unknown status';
  return code > 128 ? `signal ${code - 128}` : `code ${code}`;
}
