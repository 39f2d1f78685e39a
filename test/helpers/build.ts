import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '../..');

/**
 * Bring dist/ up to date (a no-op when it is: `npm test` builds first) for tests that load the
 * build the way a project depending on ambiqa does. Throws with tsc's output when the build fails.
 */
export function ensureBuilt(): void {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--if-stale'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed:\n${r.stdout}${r.stderr}`);
}
