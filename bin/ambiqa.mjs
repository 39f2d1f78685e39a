#!/usr/bin/env node
// The `ambiqa` command. It runs the compiled build (dist/cjs), with source maps on so that a stack
// trace points at the TypeScript line.
//
// In a development checkout (this package not inside a node_modules folder) whose dist/ is
// missing or older than a file in src/, it runs the TypeScript sources through tsx instead, as the
// command always did before there was a build: an edit to src/ takes effect at once and a stale
// build is never run. (Rebuilding on the spot would take tsc's 15–30 s on every first run after
// an edit, and concurrent commands would race to write dist/.) `npm run build` brings dist/ up to
// date; `npm test` and `npm ci` build it. An installed package is never checked: npm wrote it whole.
import { createRequire } from 'node:module';
import { dirname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const installed = root.split(sep).includes('node_modules');

let stale;
if (!installed) {
  const { staleReason } = await import('../scripts/build.mjs');
  stale = staleReason(root);
}

let main;
if (stale === undefined) {
  process.setSourceMapsEnabled(true);
  ({ main } = createRequire(import.meta.url)('../dist/cjs/cli/main.js'));
} else {
  if (process.stderr.isTTY) process.stderr.write(`ambiqa: ${stale} (npm run build); running src/ through tsx\n`);
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    // A checkout installed without devDependencies has no tsx: the build is the only way to run.
    process.stderr.write(`ambiqa: ${stale}, and tsx (a devDependency) is not installed\n  fix: run \`npm run build\` in ${root}\n`);
    process.exit(1);
  }
  register();
  // The sources run as ES modules here, without __dirname: src/config/paths.ts reads the package
  // root from this key (a global, not an environment variable, so child processes do not inherit it).
  globalThis[Symbol.for('ambiqa.packageRoot')] = root;
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
