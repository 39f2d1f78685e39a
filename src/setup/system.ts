import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { Reporter } from './context';
import { runCommand } from './fetch';

/** The script that knows which Debian packages ambiqa needs; .ci/run calls it too. */
export function systemDepsScript(): string {
  return join(packageRoot, 'scripts', 'system-deps.sh');
}

/** Check the Debian packages, installing the missing ones when running as root. */
export async function ensureSystemPackages(report: Reporter, script = systemDepsScript()): Promise<void> {
  if (!existsSync(script)) throw new AmbiqaError(`${script} is missing`, 'restore it from the repository, or pass --skip-system');
  const check = await runCommand('bash', [script, '--check']);
  if (check.code === 0) {
    report.ok('system packages: chromium and the rest already installed');
    return;
  }
  report.note(check.stdout.trim());
  const install = await runCommand('bash', [script], { onOutput: (text) => report.note(text.trimEnd()) });
  const output = `${install.stdout}\n${install.stderr}`;
  if (install.code === 0) {
    report.did(output.trim().split('\n').pop() ?? 'system packages installed');
    return;
  }
  const missing = /system packages missing: (.*)/.exec(output)?.[1] ?? 'see above';
  const retry = /(run as root: .*|to retry by hand: .*|install the equivalents.*)/.exec(output)?.[1];
  throw new AmbiqaError(
    install.code === 2 ? `system packages missing: ${missing}` : `installing system packages failed (${missing})`,
    `${retry ?? `run ${script} as root`}; or pass --skip-system if you do not need notebooks and PNG export`,
  );
}
