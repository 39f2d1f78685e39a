import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
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
});
