import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { acquireDirLock, HEARTBEAT_MS, RUN_LOCK_FILE } from '../../src/experiments/run-lock';

// The lock's own behaviour in one process; test/experiments/run-lock.int.test.ts runs real
// concurrent commands against it.
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-dirlock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('acquireDirLock', () => {
  it('is re-entrant within a process and goes with the last release; a folder it made and nothing else filled goes too', () => {
    const runDir = join(dir, 'fresh');
    const outer = acquireDirLock(runDir);
    const inner = acquireDirLock(runDir);
    expect(JSON.parse(readFileSync(join(runDir, RUN_LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    inner.release();
    expect(existsSync(join(runDir, RUN_LOCK_FILE))).toBe(true);
    outer.release();
    outer.release(); // idempotent
    expect(existsSync(runDir)).toBe(false);
  });

  it('renews its file every HEARTBEAT_MS, so other hosts can tell a live holder from a dead one', () => {
    vi.useFakeTimers();
    try {
      const runDir = join(dir, 'beat');
      const lock = acquireDirLock(runDir);
      const file = join(runDir, RUN_LOCK_FILE);
      const old = new Date(Date.now() - 600_000);
      utimesSync(file, old, old);
      vi.advanceTimersByTime(HEARTBEAT_MS);
      expect(Math.abs(statSync(file).mtimeMs - Date.now())).toBeLessThan(2_000);
      lock.release();
    } finally {
      vi.useRealTimers();
    }
  });
  describe('the takeover lock (run.lock.takeover) beside a stale run lock', () => {
    const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
    const staleRunDir = (name: string) => {
      const runDir = join(dir, name);
      mkdirSync(runDir, { recursive: true });
      writeFileSync(join(runDir, RUN_LOCK_FILE), JSON.stringify({ pid: deadPid, host: hostname(), startedAt: new Date(0).toISOString(), nonce: 'dead' }) + '\n');
      return runDir;
    };

    it('left by a process that died inside its takeover is moved aside and removed; the stale run lock is then taken over, with nothing left beside it', () => {
      const runDir = staleRunDir('dead-mutex');
      writeFileSync(join(runDir, `${RUN_LOCK_FILE}.takeover`), `${deadPid} abcdef12`);
      const notes: string[] = [];
      const lock = acquireDirLock(runDir, { notify: (m) => notes.push(m) });
      expect(JSON.parse(readFileSync(join(runDir, RUN_LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
      expect(notes).toEqual([expect.stringContaining(`was locked by PID ${deadPid}`)]);
      expect(readdirSync(runDir).sort()).toEqual([RUN_LOCK_FILE]);
      lock.release();
    });

    it('held by a live process is waited for, not removed: the run lock is taken over only once that process has let go', async () => {
      const runDir = staleRunDir('live-mutex');
      const mutex = join(runDir, `${RUN_LOCK_FILE}.takeover`);
      // A live process owning the takeover lock for 400 ms, then removing it as its owner would.
      const owner = spawn('sh', ['-c', `sleep 0.4; rm -f '${mutex}'; sleep 1`]);
      writeFileSync(mutex, `${owner.pid} 1234abcd`);
      const started = Date.now();
      const notes: string[] = [];
      const lock = acquireDirLock(runDir, { notify: (m) => notes.push(m) });
      const waited = Date.now() - started;
      owner.kill();
      expect(waited).toBeGreaterThanOrEqual(300);
      expect(notes).toHaveLength(1);
      expect(JSON.parse(readFileSync(join(runDir, RUN_LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
      lock.release();
    });
  });
});
