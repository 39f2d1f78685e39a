import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { AmbiqaError } from '../errors';

/**
 * Servers this toolkit starts (`serve`, `mlflow-ui`, `notebook`) must prove they are the ones
 * answering. With another program already listening on the port, `serve` took any `/v1/models`
 * answer as its llama.cpp server and `mlflow-ui` advertised the other program in `server.json`.
 * Two checks close that:
 *
 *   - `assertPortFree` before the start: the port is bound for a moment and released; a port in
 *     use is refused in one line naming it;
 *   - `servedBy` once something answers: on Linux, the listening socket on the port (from
 *     /proc/net/tcp and tcp6) must be one of the file descriptors of the started process or of
 *     one of its descendants (from /proc/<pid>/fd). Elsewhere it answers undefined (unknown),
 *     and the free-port check is all there is.
 */
export async function assertPortFree(host: string, port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new AmbiqaError(`${what}: port ${port} on ${host} is already in use by another program; nothing was started`, `stop that program, or pick another port`));
      } else reject(new AmbiqaError(`${what}: cannot listen on ${host}:${port} (${error.code ?? error.message})`));
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

/** Socket inodes listening on `port` (any address), from /proc/net/tcp{,6}; undefined off Linux. */
export function listeningInodes(port: number): Set<string> | undefined {
  const inodes = new Set<string>();
  let read = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
      read = true;
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st ... inode (field 9)
      if (fields.length < 10 || fields[3] !== '0A') continue;
      const local = fields[1]!;
      if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) inodes.add(fields[9]!);
    }
  }
  return read ? inodes : undefined;
}

/** Field 22 of /proc/<pid>/stat (start time in ticks since boot), to tell a reused PID from the process seen before. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** `root` and every process below it, from /proc (parents read from /proc/<pid>/stat). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  let names: string[] = [];
  try {
    names = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [root];
  }
  for (const n of names) {
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(n));
      children.set(ppid, list);
    } catch {
      /* ended meanwhile */
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

/**
 * Whether what listens on `port` is `root` or one of its descendants: true, false (another
 * program listens there, or nothing does), or undefined when this system cannot tell.
 */
export function servedBy(root: number, port: number): boolean | undefined {
  const inodes = listeningInodes(port);
  if (!inodes) return undefined;
  if (inodes.size === 0) return false;
  for (const pid of processTree(root)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return true;
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return false;
}

/** Whether `port` on `host` can be bound now (bound for a moment and released). */
export async function portIsFree(host: string, port: number): Promise<boolean> {
  return assertPortFree(host, port, 'port').then(
    () => true,
    () => false,
  );
}

/**
 * The first of `count` ports from `from` that is free on `host`, else one the system picks.
 * For servers whose own "next free port" search would leave this process not knowing which port
 * it must then check (Jupyter's port_retries).
 */
export async function firstFreePort(host: string, from: number, count: number): Promise<number> {
  for (let port = from; port < from + count && port < 65536; port++) if (await portIsFree(host, port)) return port;
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
