import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { ensureSystemPackages, systemDepsScript } from '../../src/setup/system';
import { memoryReporter } from './fakes';

/**
 * scripts/system-deps.sh and the setup step around it. Nothing is installed here: "missing" is
 * produced by pointing AMBIQA_PYTHON at a Python that does not exist, and "not root" by running
 * the script as nobody.
 */
const run = promisify(execFile);
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-system-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function script(args: string[], env: NodeJS.ProcessEnv = {}, asNobody = false) {
  const command = asNobody ? 'setpriv' : 'bash';
  // nobody may not be able to traverse the checkout (CI clones into a private temp folder), so
  // it runs a copy of the script from a folder it can read.
  let path = systemDepsScript();
  if (asNobody) {
    chmodSync(dir, 0o755);
    path = join(dir, 'system-deps.sh');
    copyFileSync(systemDepsScript(), path);
    chmodSync(path, 0o755);
  }
  const argv = asNobody ? ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', path, ...args] : [path, ...args];
  try {
    const { stdout, stderr } = await run(command, argv, { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const canDropRoot = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv');

describe('scripts/system-deps.sh', () => {
  it('--check lists exactly the packages whose markers are missing', async () => {
    const r = await script(['--check'], { AMBIQA_PYTHON: join(dir, 'no-such-python') });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^system packages missing: (.* )?python3 python3-venv python3-pip$/m);
  });

  it.skipIf(!canDropRoot)('without root it installs nothing and prints the exact command to run', async () => {
    const r = await script([], { AMBIQA_PYTHON: join(dir, 'no-such-python') }, true);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/run as root: {2}sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends (.* )?python3 python3-venv python3-pip'/);
  });
});

describe('the setup step', () => {
  function fakeScript(body: string): string {
    const path = join(dir, `fake-${Math.random().toString(36).slice(2)}.sh`);
    writeFileSync(path, `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  it('says nothing was to do when --check passes', async () => {
    const report = memoryReporter();
    await ensureSystemPackages(report, fakeScript('exit 0'));
    expect(report.lines.map((l) => l.kind)).toEqual(['ok']);
  });

  it('turns "not root" into an error naming the packages and the command', async () => {
    const report = memoryReporter();
    const path = fakeScript(`[[ $1 == --check ]] && { echo "system packages missing: chromium"; exit 1; }
echo "system packages missing: chromium" >&2
echo "run as root:  sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends chromium'" >&2
exit 2`);
    const error = await ensureSystemPackages(report, path).then(
      () => undefined,
      (e: unknown) => e,
    );
    const message = describeError(error);
    expect(message).toContain('system packages missing: chromium');
    expect(message).toContain("fix: run as root:  sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends chromium'");
    expect(message).toContain('--skip-system');
  });

  it('reports an install it did', async () => {
    const report = memoryReporter();
    const path = fakeScript(`[[ $1 == --check ]] && { echo "system packages missing: chromium"; exit 1; }
echo "installing system packages: chromium"
echo "system packages installed: chromium"`);
    await ensureSystemPackages(report, path);
    expect(report.lines.filter((l) => l.kind === 'did').map((l) => l.message)).toEqual(['system packages installed: chromium']);
  });
});
