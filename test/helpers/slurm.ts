import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * A one-node Slurm cluster for a test: munged, slurmctld and slurmd (Debian's 22.05 packages)
 * started in the foreground as children of the test process, with every file (config, key,
 * state, spool, logs, sockets) in one temporary folder and their own ports, so that nothing on
 * the machine is touched and two test runs do not meet. `stop()` cancels what is still queued,
 * waits for the jobs to end, stops the three daemons by PID and removes the folder.
 */
export interface LocalSlurm {
  dir: string;
  /** SLURM_CONF: what the client commands (sbatch, scontrol, scancel) need to find it. */
  env: { SLURM_CONF: string };
  node: string;
  partition: string;
  /** munged, slurmctld and slurmd. */
  pids: number[];
  /** Runs a client command against this cluster. */
  command(name: string, args: string[]): Promise<string>;
  stop(): Promise<void>;
}

const daemons = ['munged', 'slurmctld', 'slurmd'] as const;
const clients = ['sbatch', 'scontrol', 'scancel', 'squeue', 'sinfo'] as const;

function which(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  return dirs.map((d) => join(d, name)).find((p) => p && existsSync(p));
}

/** Why a local Slurm cannot start here, or undefined when it can. */
export function localSlurmUnavailable(): string | undefined {
  const missing = [...daemons, ...clients].filter((n) => !which(n));
  if (missing.length > 0) {
    return `${missing.join(', ')} not found (Debian: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge; .ci/run installs them)`;
  }
  // slurmd starts each job as its submitting user, which needs root; the test cluster's
  // SlurmUser is root as well.
  if (process.getuid?.() !== 0) return 'slurmd must run as root to start jobs (this process is not root)';
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited(child);
  clearTimeout(timer);
}

export async function startLocalSlurm(options: { partition?: string; cpus?: number; gpus?: number } = {}): Promise<LocalSlurm> {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-slurm-'));
  // munged refuses a socket folder that others cannot traverse.
  chmodSync(dir, 0o755);
  for (const sub of ['state', 'spool']) mkdirSync(join(dir, sub));
  const partition = options.partition ?? 'debug';
  const node = `ambiqa-test-${process.pid}`;
  const conf = join(dir, 'slurm.conf');
  const env = { ...process.env, SLURM_CONF: conf };
  const children: ChildProcess[] = [];
  const log = (name: string) => join(dir, `${name}.log`);
  const start = (name: (typeof daemons)[number], args: string[]) => {
    const child = spawn(which(name)!, args, { env, stdio: 'ignore' });
    children.push(child);
    writeFileSync(join(dir, 'daemons.pid'), children.map((c) => c.pid).join(' '));
    return child;
  };
  const command = (name: string, args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(which(name) ?? name, args, { env, encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${name} ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout))),
    );
  // Should this process die without stop() (a killed test worker), a watchdog outside it cancels
  // the cluster's jobs and stops its daemons, so that nothing outlives the test run.
  const pidFile = join(dir, 'daemons.pid');
  const watchdog = spawn(
    'bash',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
       ids=$(squeue -h -o %A 2>/dev/null | sort -u); [ -n "$ids" ] && scancel $ids && sleep 5
       pids=$(cat '${pidFile}' 2>/dev/null); [ -n "$pids" ] && kill $pids 2>/dev/null && sleep 3 && kill -9 $pids 2>/dev/null
       rm -rf '${dir}'`,
    ],
    { env, stdio: 'ignore', detached: true },
  );
  watchdog.unref();
  const stop = async () => {
    await stopChild(watchdog);
    try {
      const queued = (await command('squeue', ['-h', '-o', '%A'])).split('\n').filter(Boolean);
      if (queued.length > 0) await command('scancel', [...new Set(queued)]);
      const deadline = Date.now() + 40_000;
      while (Date.now() < deadline && (await command('squeue', ['-h', '-o', '%A'])).trim() !== '') await new Promise((r) => setTimeout(r, 500));
    } catch {
      /* a controller that is already gone has no jobs to cancel */
    }
    for (const child of [...children].reverse()) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const key = join(dir, 'munge.key');
    writeFileSync(key, randomBytes(1024), { mode: 0o600 });
    const socket = join(dir, 'munge.sock');
    const munged = start('munged', ['--foreground', '--force', `--socket=${socket}`, `--key-file=${key}`, `--pid-file=${join(dir, 'munged.pid')}`, `--log-file=${log('munged')}`, `--seed-file=${join(dir, 'munged.seed')}`]);
    await waitUntil(() => existsSync(socket), 10_000, () => `munged did not create its socket${munged.exitCode !== null ? ` (exit ${munged.exitCode})` : ''}: ${tail(log('munged'))}`);

    const gpus = options.gpus ?? 0;
    const cpus = options.cpus ?? 2;
    writeFileSync(
      conf,
      [
        'ClusterName=ambiqatest',
        'SlurmctldHost=localhost(127.0.0.1)',
        `SlurmctldPort=${await freePort()}`,
        `SlurmdPort=${await freePort()}`,
        'AuthType=auth/munge',
        `AuthInfo=socket=${socket}`,
        'CredType=cred/munge',
        'SlurmUser=root',
        'SlurmdUser=root',
        `StateSaveLocation=${join(dir, 'state')}`,
        `SlurmdSpoolDir=${join(dir, 'spool')}`,
        `SlurmctldPidFile=${join(dir, 'slurmctld.pid')}`,
        `SlurmdPidFile=${join(dir, 'slurmd.pid')}`,
        `SlurmctldLogFile=${log('slurmctld')}`,
        `SlurmdLogFile=${log('slurmd')}`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core',
        'ReturnToService=2',
        'MpiDefault=none',
        'MailProg=/bin/true',
        'JobCompType=jobcomp/none',
        'AccountingStorageType=accounting_storage/none',
        'JobAcctGatherType=jobacct_gather/none',
        // Between scancel's SIGTERM and its SIGKILL: the shard writes and uploads in that time.
        'KillWait=20',
        ...(gpus > 0 ? ['GresTypes=gpu'] : []),
        `NodeName=${node} NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=${cpus} RealMemory=500${gpus > 0 ? ` Gres=gpu:${gpus}` : ''} State=UNKNOWN`,
        `PartitionName=${partition} Nodes=${node} Default=YES MaxTime=INFINITE State=UP`,
        '',
      ].join('\n'),
    );
    if (gpus > 0) {
      // Stand-in devices: slurmd counts a GPU per device file, and task/none constrains nothing.
      const devices = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random'].slice(0, gpus);
      writeFileSync(join(dir, 'gres.conf'), devices.map((d) => `NodeName=${node} Name=gpu File=${d}\n`).join(''));
    }
    start('slurmctld', ['-D', '-f', conf]);
    start('slurmd', ['-D', '-f', conf, '-N', node]);
    let state = '';
    await waitUntil(
      async () => {
        state = (await command('sinfo', ['-h', '-n', node, '-o', '%T']).catch(() => '')).trim();
        return state === 'idle';
      },
      30_000,
      () => `the node did not become idle (state ${JSON.stringify(state)}); slurmctld: ${tail(log('slurmctld'))}; slurmd: ${tail(log('slurmd'))}`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, env: { SLURM_CONF: conf }, node, partition, pids: children.map((c) => c.pid!), command, stop };
}

/** Spool files a running job step leaves (sockets `<node>_<job>.<step>`); none once all jobs ended. */
export function stepFiles(cluster: LocalSlurm): string[] {
  const spool = join(cluster.dir, 'spool');
  return existsSync(spool) ? readdirSync(spool).filter((f) => /_\d+\.\d+$/.test(f)) : [];
}

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number, why: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(why());
    await new Promise((r) => setTimeout(r, 200));
  }
}

function tail(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').slice(-3).join(' | ') : '(no log)';
}
