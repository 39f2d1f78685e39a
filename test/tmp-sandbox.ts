import { mkdtempSync, rmSync } from 'node:fs';
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
 * lives inside it). Both projects share one folder: it is removed when the last of them is done.
 */
let sandbox: string | undefined;
let previous: string | undefined;
let users = 0;

export default function setup(): () => void {
  if (sandbox === undefined) {
    previous = process.env.TMPDIR;
    sandbox = mkdtempSync(join(tmpdir(), 'ambiqa-test-run-'));
    process.env.TMPDIR = sandbox;
  }
  users++;
  return () => {
    if (--users > 0 || sandbox === undefined) return;
    rmSync(sandbox, { recursive: true, force: true });
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    sandbox = undefined;
  };
}
