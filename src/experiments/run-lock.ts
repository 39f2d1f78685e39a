/**
 * One writer per run folder. Two processes in one run directory corrupt it quietly: once one
 * rewrites `results.jsonl` (atomically, by rename), the other's appends go to the deleted file,
 * and `run.json` updates are lost. So a session holds a lock file in the directory from before
 * its first write to its end, and a second `ambiqa run` (or `--resume`) of the same folder is
 * refused in one line naming the holder.
 *
 * The lock is a small JSON file created with `link()` from a complete temporary file, so it
 * appears whole or not at all (no reader sees a half-written holder). A lock whose process is
 * gone (SIGKILL, a power cut) is stale: the next session on the same host sees that the PID no
 * longer runs (or now belongs to a process that started later) and takes the lock over, saying
 * so, by renaming its own complete lock file over the stale one. A process on another host (a
 * shared filesystem: a Slurm shard requeued onto another node after its first node died) cannot
 * be asked, so the holder touches its lock file every
 * `HEARTBEAT_MS`, and a lock from another host not touched for `STALE_MS` is stale too; one
 * touched recently is refused with the path to remove once that process is known to be gone.
 * Shards write folders of their own, so they never share a lock.
 *
 * Each session takes its folder's lock once (`runConfig` before its preflight, `runExperiment`
 * for a sweep's point, `runSweep` for the sweep folder). Within one process the lock is still
 * re-entrant, so a library caller that holds it may run a session there.
 */
import { closeSync, constants, existsSync, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmdirSync, statSync, unlinkSync, utimesSync, writeFileSync, type Stats } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { redactText } from '../common/secrets';
import { escapeControl } from '../common/safe-name';

export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  /** The process's start time in clock ticks since boot (Linux), to tell a reused PID from the holder. */
  procStart?: string;
  /** What the holder runs (its command line), for the refusal message. */
  command?: string;
  /** Tells this process's lock from another's with the same PID (a container's PID 1). */
  nonce: string;
}

export interface HeldLock {
  /** The lock file. */
  path: string;
  /** Give the lock up (idempotent); a directory this lock created, and that is still empty, is removed. */
  release(): void;
}

/** How often a holder touches its lock file, and how old another host's lock must be to count as stale. */
export const HEARTBEAT_MS = 15_000;
export const STALE_MS = 120_000;

interface Entry {
  count: number;
  heartbeat: NodeJS.Timeout;
  path: string;
  nonce: string;
  /** The directory did not exist before the lock: removed on release when nothing else was written. */
  createdDir: boolean;
  dir: string;
}

const held = new Map<string, Entry>();
let exitHookInstalled = false;

/** Lock file names: one for a run directory, one for a sweep directory. */
export const RUN_LOCK_FILE = 'run.lock';
export const SWEEP_LOCK_FILE = 'sweep.lock';

/**
 * Take the lock of `dir` (created if missing) for this process, or throw an AmbiqaError naming
 * the process that holds it. `notify` is told when a stale lock is taken over.
 */
export function acquireDirLock(dir: string, options: { file?: string; what?: string; notify?: (message: string) => void } = {}): HeldLock {
  const file = options.file ?? RUN_LOCK_FILE;
  const what = options.what ?? 'run directory';
  const notify = options.notify ?? ((m: string) => process.stderr.write(`note: ${m}\n`));
  const abs = resolve(dir);
  const key = join(abs, file);
  const mine = held.get(key);
  if (mine) {
    mine.count += 1;
    return handle(key);
  }
  const createdDir = !existsSync(abs);
  mkdirSync(abs, { recursive: true });
  const self = currentHolder();
  const tmp = join(abs, `.${file}.${process.pid}.${self.nonce}`);
  try {
    writeFileSync(tmp, JSON.stringify(self) + '\n');
  } catch (error) {
    // A session refused a moment ago removed the folder it had made (and found empty).
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(abs, { recursive: true });
    writeFileSync(tmp, JSON.stringify(self) + '\n');
  }
  try {
    // Contending processes wait for each other's takeover for a moment, not for a fixed count of tries.
    const giveUpAt = Date.now() + 10_000;
    for (;;) {
      try {
        linkSync(tmp, key);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readHolder(key);
      if (holder && isAlive(holder, key)) {
        if (createdDir) removeIfEmpty(abs, [tmp]);
        const seen = holder.host === self.host ? '' : `, last seen ${Math.round(lockAgeMs(key) / 1000)} s ago`;
        // The holder's strings are the file's, which anyone who can write the folder wrote:
        // printed with control characters escaped, so an escape sequence does not reach the terminal.
        throw new AmbiqaError(
          `${what} ${abs} is in use by PID ${holder.pid} on host ${escapeControl(holder.host, 80)} (since ${escapeControl(String(holder.startedAt), 40)}${holder.command ? `: ${escapeControl(holder.command, 120)}` : ''}${seen}); one run folder has one writer — wait for that process to end, or remove ${key} once it is known to be gone`,
        );
      }
      if (Date.now() > giveUpAt) throw new AmbiqaError(`${what} ${abs}: could not take over the stale lock ${key}`, `remove ${key} by hand once no ambiqa process uses the folder`);
      // Stale (or unreadable): replace it with this process's lock in one rename, under a short
      // takeover lock. The process that replaces the stale holder is the one that holds the lock,
      // so of several finding it stale at once exactly one says it took the lock over; the others
      // then see a live holder and are refused. (Removing the stale file and racing for it through
      // link() let a process say it took the lock over and then lose it to another.)
      if (takeOver(key, holder, tmp)) {
        notify(
          !holder
            ? `${what} ${abs} had an unreadable lock file; taking it over`
            : holder.host === self.host
              ? `${what} ${abs} was locked by PID ${holder.pid} on host ${escapeControl(holder.host, 80)} (since ${escapeControl(String(holder.startedAt), 40)}), which no longer runs; taking the lock over`
              : `${what} ${abs} was locked by PID ${holder.pid} on host ${escapeControl(holder.host, 80)} (since ${escapeControl(String(holder.startedAt), 40)}), whose lock was not renewed for ${Math.round(STALE_MS / 1000)} s or more; taking the lock over`,
        );
        break;
      }
    }
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
  }
  // The heartbeat: hosts that cannot ask this process whether it runs see the file's age.
  const heartbeat = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(key, now, now);
    } catch {
      /* the folder was removed; nothing to keep alive */
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();
  held.set(key, { count: 1, heartbeat, path: key, nonce: self.nonce, createdDir, dir: abs });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A second Ctrl-C or an uncaught error ends the process without unwinding: the lock goes too.
    process.on('exit', releaseAll);
  }
  return handle(key);
}

function handle(key: string): HeldLock {
  let released = false;
  return {
    path: key,
    release() {
      if (released) return;
      released = true;
      const entry = held.get(key);
      if (!entry) return;
      entry.count -= 1;
      if (entry.count > 0) return;
      held.delete(key);
      dropLock(entry);
    },
  };
}

function releaseAll(): void {
  for (const [key, entry] of held) {
    held.delete(key);
    dropLock(entry);
  }
}

function dropLock(entry: Entry): void {
  clearInterval(entry.heartbeat);
  // Only our own lock file is removed: never one another process took over meanwhile.
  let ours = false;
  try {
    ours = readHolder(entry.path)?.nonce === entry.nonce;
  } catch {
    /* replaced by something that is not a lock: not ours to remove */
  }
  if (ours) {
    try {
      unlinkSync(entry.path);
    } catch {
      /* already gone */
    }
  }
  // A run refused before it wrote anything (a failed preflight) leaves no folder behind.
  if (entry.createdDir) removeIfEmpty(entry.dir);
}

function removeIfEmpty(dir: string, ignoring: string[] = []): void {
  try {
    const left = readdirSync(dir).filter((n) => !ignoring.includes(join(dir, n)));
    if (left.length === 0) {
      for (const f of ignoring) if (existsSync(f)) unlinkSync(f);
      rmdirSync(dir);
    }
  } catch {
    /* someone else is writing there now: leave it */
  }
}

/**
 * Replace the lock file by `ours` (a complete lock file of this process) if it still holds
 * `stale` and that holder is still not alive; true when this process now holds the lock. With
 * `stale` undefined, an existing file that does not parse is replaced; a missing one is not
 * (the caller's link() takes it, and a rename there could overwrite a lock linked meanwhile).
 */
function takeOver(key: string, stale: LockHolder | undefined, ours: string): boolean {
  const mutex = `${key}.takeover`;
  if (!takeMutex(mutex)) return false;
  try {
    const now = readHolder(key);
    const same = stale === undefined ? now === undefined && existsSync(key) : now?.nonce === stale.nonce && now.pid === stale.pid;
    if (!same || (now && isAlive(now, key))) return false;
    try {
      renameSync(ours, key);
    } catch {
      return false;
    }
    return true;
  } finally {
    try {
      unlinkSync(mutex);
    } catch {
      /* gone */
    }
  }
}

/**
 * Take the short takeover lock `mutex`, or return false (after a short wait) when another
 * process holds it. It is linked from a complete file, like the run lock: created with
 * `open(wx)` and then written, it was empty for a moment, and a process reading it then took it
 * for a dead holder's and removed it while its owner was inside — two processes took the run
 * lock over at once (a fresh-clone CI saw two "held"). A takeover lock whose process died is
 * removed only after moving it aside under a name of this process's own and finding there the
 * very file that was read, so a lock another process made meanwhile is never the one removed.
 */
function takeMutex(mutex: string): boolean {
  const nonce = Math.random().toString(36).slice(2, 10);
  const text = `${process.pid} ${nonce}`;
  // Dot-named like the run lock's own temporary file: nothing that lists a run folder picks it up.
  const tmp = join(dirname(mutex), `.${basename(mutex)}.${process.pid}.${nonce}`);
  writeFileSync(tmp, text);
  try {
    linkSync(tmp, mutex);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      /* gone */
    }
  }
  const seen = readLockText(mutex);
  // Gone already (its owner finished): the caller looks at the run lock again.
  if (seen === undefined) return false;
  const pid = Number(seen.split(' ')[0]);
  if (Number.isInteger(pid) && pid > 1 && pidRuns(pid)) {
    sleepMs(10);
    return false;
  }
  const aside = join(dirname(mutex), `.${basename(mutex)}.dead.${process.pid}.${nonce}`);
  try {
    renameSync(mutex, aside);
  } catch {
    return false;
  }
  if (readLockText(aside) !== seen) {
    // Another process's live takeover lock: put it back (unless a newer one is there already).
    try {
      linkSync(aside, mutex);
    } catch {
      /* a newer one is there */
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    /* gone */
  }
  return false;
}

function currentHolder(): LockHolder {
  const procStart = processStart(process.pid);
  // Masked like every run file: a known key on the command line must not land in the folder.
  const command = redactText([process.argv[1]?.split('/').pop(), ...process.argv.slice(2)].filter(Boolean).join(' '));
  return {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    ...(procStart ? { procStart } : {}),
    ...(command ? { command: command.length > 120 ? `${command.slice(0, 117)}...` : command } : {}),
    nonce: Math.random().toString(36).slice(2, 10),
  };
}

/**
 * The lock's holder; undefined when the file is gone or does not parse. PID 0, 1 and negative
 * PIDs are not holders: `kill(0, 0)` and `kill(-1, 0)` succeed for any caller and PID 1 always
 * runs, so a lock naming them would be "in use" forever.
 */
export function readHolder(path: string): LockHolder | undefined {
  const text = readLockText(path);
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as LockHolder;
    return Number.isInteger(value.pid) && value.pid > 1 && typeof value.host === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A lock file is a few hundred bytes; anything larger is not one ambiqa wrote. */
export const MAX_LOCK_BYTES = 64 * 1024;

/**
 * The text of a lock file, read so that no file can hang or flood this process: `lstat` first
 * (a FIFO opened for reading blocks until a writer comes, and then the main thread cannot even
 * handle SIGTERM), then an open with O_NONBLOCK and O_NOFOLLOW and an `fstat` of what was opened
 * (the name may have been swapped between the two), at most `MAX_LOCK_BYTES`. Undefined when the
 * file does not exist; anything but a small regular file is refused in one line naming it.
 */
function readLockText(path: string): string | undefined {
  let info: Stats;
  try {
    info = lstatSync(path);
  } catch {
    return undefined;
  }
  checkLockFile(path, info);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') checkLockFile(path, lstatSync(path));
    throw error;
  }
  try {
    const opened = fstatSync(fd);
    checkLockFile(path, opened);
    const buffer = Buffer.alloc(opened.size);
    let got = 0;
    while (got < buffer.length) {
      const n = readSync(fd, buffer, got, buffer.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return buffer.subarray(0, got).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function checkLockFile(path: string, info: Stats): void {
  const kind = info.isFile() ? undefined : info.isFIFO() ? 'a FIFO' : info.isSymbolicLink() ? 'a symbolic link' : info.isDirectory() ? 'a directory' : info.isSocket() ? 'a socket' : 'a device';
  if (kind) throw new AmbiqaError(`lock file ${path} is ${kind}, not a regular file; ambiqa does not read it — remove it (no ambiqa process made it)`);
  if (info.size > MAX_LOCK_BYTES) throw new AmbiqaError(`lock file ${path} is ${info.size} bytes, more than the ${MAX_LOCK_BYTES} a lock holds; ambiqa does not read it — remove it (no ambiqa process made it)`);
}

/** Milliseconds since the lock file was last written or touched (0 when it cannot be read). */
function lockAgeMs(path: string): number {
  try {
    return Math.max(0, Date.now() - statSync(path).mtimeMs);
  } catch {
    return 0;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Whether the lock's holder still runs. On this host: its PID (and start time). On another host,
 * which cannot be asked: whether it renewed the lock within `STALE_MS`.
 */
function isAlive(holder: LockHolder, path: string): boolean {
  if (holder.host !== hostname()) return lockAgeMs(path) < STALE_MS;
  if (!pidRuns(holder.pid)) return false;
  // The PID runs, but it may be a new process that got the number: compare start times.
  if (holder.procStart) {
    const now = processStart(holder.pid);
    if (now && now !== holder.procStart) return false;
  }
  return true;
}

function pidRuns(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 1) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Field 22 of /proc/<pid>/stat (start time since boot), or undefined off Linux. */
function processStart(pid: number): string | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  if (!stat) return undefined;
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19];
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
