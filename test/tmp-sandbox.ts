import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One temporary folder per test run, removed when the run ends. Tests make their scratch folders
 * with `mkdtempSync(join(tmpdir(), …))`, and many are never removed (a failing test skips its
 * cleanup; module-level folders have no hook): a full `npm test` left ~230 MB in /tmp each time,
 * 6.9 GB on one developer machine. Pointing TMPDIR here before any worker starts puts all of
 * them, and those of the processes the tests spawn, under one folder that goes at the end.
 *
 * Listed first in `globalSetup`, so its teardown runs after the others (the MLflow server's store
 * lives inside it). Each project runs the global setup with a module of its own, so the folder and
 * the count of projects using it live in the process (the environment and `globalThis`): both
 * projects share one folder, removed when the last of them is done. Mode 0755, as munged (the
 * Slurm test's) refuses a socket under a folder others cannot traverse.
 */
const MARK = 'AMBIQA_TEST_SANDBOX';
const USERS = Symbol.for('ambiqa.testSandbox.users');
type Shared = typeof globalThis & { [USERS]?: { count: number; previous: string | undefined } };

export default function setup(): () => void {
  const shared = globalThis as Shared;
  if (!process.env[MARK] || !shared[USERS]) {
    const previous = process.env.TMPDIR;
    const sandbox = mkdtempSync(join(tmpdir(), 'ambiqa-test-run-'));
    chmodSync(sandbox, 0o755);
    process.env[MARK] = sandbox;
    process.env.TMPDIR = sandbox;
    shared[USERS] = { count: 0, previous };
  }
  const users = shared[USERS]!;
  users.count++;
  return () => {
    if (--users.count > 0) return;
    const sandbox = process.env[MARK];
    if (sandbox) rmSync(sandbox, { recursive: true, force: true });
    delete process.env[MARK];
    if (users.previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = users.previous;
    delete shared[USERS];
  };
}
