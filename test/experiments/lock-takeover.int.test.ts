import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_LOCK_FILE } from '../../src/experiments/run-lock';

/**
 * Several processes finding the same stale lock at the same moment: exactly one takes it over
 * and says so, and every other is refused in one message naming that one — none says it took a
 * lock over that it then did not hold (a fresh-clone CI once saw that through `ambiqa run`).
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-takeover-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = join(__dirname, 'fixtures', 'lock-once.ts');

interface Outcome {
  pid: number;
  stdout: string;
  stderr: string;
}

/**
 * Six processes trying for the lock of `runDir` at `startAt`. The holder keeps it until every
 * other has answered (printed "held" or exited), then all stdins close and the holder lets go.
 */
async function race(runDir: string, startAt: number): Promise<Outcome[]> {
  const children = Array.from({ length: 6 }, () => spawn(process.execPath, ['--import', 'tsx', script, runDir, String(startAt)], { stdio: ['pipe', 'pipe', 'pipe'] }));
  const outcomes = children.map((child) => ({ pid: child.pid!, stdout: '', stderr: '', answered: false, closed: false }));
  const closed = children.map(
    (child, i) =>
      new Promise<void>((done, fail) => {
        const o = outcomes[i]!;
        child.stdout.on('data', (d) => ((o.stdout += d), o.stdout.startsWith('held\n') && (o.answered = true)));
        child.stderr.on('data', (d) => (o.stderr += d));
        child.on('error', fail);
        child.on('close', () => ((o.answered = o.closed = true), done()));
      }),
  );
  const deadline = Date.now() + 120_000;
  while (!outcomes.every((o) => o.answered) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const child of children) child.stdin.end();
  await Promise.all(closed);
  return outcomes.map(({ pid, stdout, stderr }) => ({ pid, stdout, stderr }));
}

describe('taking a stale lock over', () => {
  it('of six processes that find one stale lock at once, one holds it and says so; the others are refused naming it, without a takeover note', async () => {
    // A PID that ran and is gone: the holder of the stale lock.
    const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
    for (let round = 0; round < 4; round++) {
      const runDir = join(dir, `round-${round}`);
      mkdirSync(runDir, { recursive: true });
      writeFileSync(join(runDir, RUN_LOCK_FILE), JSON.stringify({ pid: deadPid, host: hostname(), startedAt: new Date(0).toISOString(), nonce: `dead${round}` }) + '\n');
      const startAt = Date.now() + 4_000;
      const outcomes = await race(runDir, startAt);
      const report = outcomes.map((o) => `PID ${o.pid}\n${o.stdout}${o.stderr}`).join('-----\n');
      const holders = outcomes.filter((o) => o.stdout === 'held\n');
      expect(holders, report).toHaveLength(1);
      const holder = holders[0]!;
      expect(holder.stderr, report).toBe(`note: run directory ${runDir} was locked by PID ${deadPid} on host ${hostname()} (since 1970-01-01T00:00:00.000Z), which no longer runs; taking the lock over\n`);
      for (const o of outcomes) {
        if (o === holder) continue;
        expect(o.stderr, report).toBe('');
        expect(o.stdout, report).toMatch(new RegExp(`^refused: run directory ${runDir} is in use by PID ${holder.pid} on host `));
      }
    }
  }, 180_000);
});
