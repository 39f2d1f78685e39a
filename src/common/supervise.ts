import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { processStartTime, processTree } from './port';

/**
 * A long-running child (JupyterLab, llama.cpp's server) that must not outlive the command that
 * started it. A child left behind keeps its port, its token and its memory, reparented to init,
 * after `ambiqa notebook` was killed. So the child runs under a small Node watchdog:
 *
 *   - the watchdog starts the child in a process group of its own and holds the read end of a
 *     pipe whose write end only this process has: when this process ends for any reason (exit,
 *     a signal, SIGKILL) the pipe closes and the watchdog stops the child;
 *   - SIGINT, SIGTERM or SIGHUP to the watchdog, or `stop()`, stop the child too;
 *   - stopping is SIGTERM to the child's group and to every descendant of the child found in
 *     /proc (children that started a session of their own, such as Jupyter's kernels, are not in
 *     the group), then SIGKILL to all of them after a grace period;
 *   - when the child exits by itself, what it left in its group is killed, and the watchdog exits
 *     with the child's status.
 * The child's stdin, stdout and stderr are the watchdog's, which are what `stdio` says.
 *
 * The watchdog itself may be killed with SIGKILL (alone, or with this process's group, which it
 * is in). Two more guards cover that:
 *   - on Linux the child is started through util-linux's `setpriv --pdeathsig SIGTERM`, which
 *     sets `prctl(PR_SET_PDEATHSIG)` and execs it: the kernel sends the child SIGTERM when the
 *     watchdog dies, whatever killed it (a server stops its own workers on SIGTERM);
 *   - the watchdog tells this process its child's PID over the pipe, and when the watchdog dies
 *     without being asked to while this process lives, this process stops the child's group.
 */
export interface Supervised {
  /** The watchdog process (its pid is not the child's). */
  watchdog: ChildProcess;
  /** Resolves with the child's exit status (128 + n when a signal n ended it) once it and the watchdog are gone. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs` (default the spawn's); resolves when the child is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface SuperviseOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The child's stdin, stdout and stderr (default inherit all three). */
  stdio?: ['ignore' | 'inherit' | 'pipe', 'ignore' | 'inherit' | 'pipe', 'ignore' | 'inherit' | 'pipe'];
  /** How long a stopped child gets between SIGTERM and SIGKILL (default 10 s). */
  graceMs?: number;
}

// Plain JavaScript, run with `node -e`: it must start in milliseconds and needs nothing else.
const WATCHDOG = String.raw`
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const [command, argsJson, graceText] = process.argv.slice(1);
const grace = Number(graceText);
function which(name) {
  if (name.includes('/')) return fs.existsSync(name) ? name : undefined;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir || '.', name);
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch {}
  }
  return undefined;
}
// setpriv only when both it and the command exist: a missing command keeps spawn's own error.
const setpriv = process.platform === 'linux' && which(command) ? ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)) : undefined;
const child = setpriv
  ? spawn(setpriv, ['--pdeathsig', 'SIGTERM', '--', command, ...JSON.parse(argsJson)], { stdio: 'inherit', detached: true })
  : spawn(command, JSON.parse(argsJson), { stdio: 'inherit', detached: true });
child.on('error', (e) => { process.stderr.write(String(e.message) + '\n'); process.exit(127); });
function descendants(root) {
  const parents = new Map();
  let names = [];
  try { names = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)); } catch { return []; }
  for (const n of names) {
    try {
      const stat = fs.readFileSync('/proc/' + n + '/stat', 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!parents.has(ppid)) parents.set(ppid, []);
      parents.get(ppid).push(Number(n));
    } catch {}
  }
  const out = [];
  const queue = [root];
  while (queue.length) for (const c of parents.get(queue.shift()) || []) { out.push(c); queue.push(c); }
  return out;
}
const known = new Set();
function signal(sig) {
  for (const pid of descendants(child.pid)) known.add(pid);
  try { process.kill(-child.pid, sig); } catch {}
  for (const pid of known) { try { process.kill(pid, sig); } catch {} }
}
let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  signal('SIGTERM');
  setTimeout(() => signal('SIGKILL'), grace).unref();
}
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, stop);
// A socket, not fs.createReadStream: a blocking read of fd 3 in the thread pool would keep this
// process from exiting after the child does.
const parent = new (require('node:net').Socket)({ fd: 3, readable: true, writable: true });
if (child.pid) parent.write('child ' + child.pid + '\n', () => {});
parent.on('data', () => {});
parent.on('end', stop);
parent.on('error', stop);
parent.on('close', stop);
child.on('exit', (code, sig) => {
  signal('SIGKILL');
  process.exit(code !== null ? code : 128 + (os.constants.signals[sig] || 0));
});
`;

/** Start `command` under a watchdog (see above). */
export function spawnSupervised(command: string, args: string[], options: SuperviseOptions = {}): Supervised {
  const graceMs = options.graceMs ?? 10_000;
  const stdio: StdioOptions = [...(options.stdio ?? ['inherit', 'inherit', 'inherit']), 'pipe'];
  const watchdog = spawn(process.execPath, ['-e', WATCHDOG, command, JSON.stringify(args), String(graceMs)], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: options.env ?? process.env,
    stdio,
  });
  const exited = new Promise<number | null>((resolve) => {
    watchdog.once('exit', (code) => resolve(code));
    watchdog.once('error', () => resolve(null));
  });
  let gone = false;
  let asked = false;
  void exited.then(() => (gone = true));
  // The child's PID, from the watchdog (its first line on the pipe).
  let childPid: number | undefined;
  const pipe = watchdog.stdio[3] as NodeJS.ReadableStream | null | undefined;
  // What the child started, refreshed every 2 s: once the watchdog is gone, a helper the child
  // started in a session of its own is reparented to init and found neither in the child's group
  // nor below it.
  // PID → start time: a PID that ended and was reused by another process is never signalled.
  const known = new Map<number, string | undefined>();
  const remember = (pid: number) => {
    if (!known.has(pid)) known.set(pid, processStartTime(pid));
  };
  const snapshot = setInterval(() => {
    if (childPid !== undefined) for (const pid of processTree(childPid)) remember(pid);
  }, 2_000);
  snapshot.unref();
  pipe?.on('data', (chunk: Buffer) => {
    const m = /child (\d+)/.exec(chunk.toString());
    if (m) childPid = Number(m[1]);
  });
  pipe?.on('error', () => undefined);
  watchdog.once('exit', (_code, signal) => {
    clearInterval(snapshot);
    // The watchdog was killed (SIGKILL, the OOM killer) while this process lives and did not ask:
    // nothing else would stop the child now. Its group gets SIGTERM, then SIGKILL after the grace.
    if (asked || signal === null || childPid === undefined) return;
    const pid = childPid;
    // The child's tree as seen now and before: what it started in sessions of its own is not in its group.
    for (const p of processTree(pid)) remember(p);
    const send = (sig: NodeJS.Signals) => {
      const alive = [...known].filter(([p, started]) => started !== undefined && processStartTime(p) === started).map(([p]) => p);
      // The group only while one of its known members lives: an empty group's number may be reused.
      for (const target of alive.length > 0 ? [-pid, ...alive] : []) {
        try {
          process.kill(target, sig);
        } catch {
          /* gone */
        }
      }
    };
    send('SIGTERM');
    setTimeout(() => send('SIGKILL'), Math.min(graceMs, 5_000)).unref();
  });
  return {
    watchdog,
    exited,
    async stop(grace = graceMs) {
      if (gone) return;
      asked = true;
      // The watchdog forwards a stop to the child's whole tree; SIGKILL to the watchdog itself
      // only if it does not end after the child's grace (it then closes nothing behind it, but
      // its pipe closing stops nothing more either: the tree was signalled already).
      watchdog.kill('SIGTERM');
      const timer = setTimeout(() => watchdog.kill('SIGKILL'), grace + 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
