import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** test/tmp-sandbox.ts: what a test writes under tmpdir() lands in the run's own folder. */
describe('the test run’s temporary folder', () => {
  it('is where tmpdir() points in a worker, so scratch folders go with the run', () => {
    expect(basename(tmpdir())).toMatch(/^ambiqa-test-run-[A-Za-z0-9]{6}$/);
    const scratch = mkdtempSync(join(tmpdir(), 'ambiqa-sandbox-check-'));
    expect(dirname(scratch)).toBe(tmpdir());
    expect(existsSync(scratch)).toBe(true);
  });
});
