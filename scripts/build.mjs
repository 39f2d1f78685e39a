#!/usr/bin/env node
// `npm run build`: compile src/ into dist/, the code the `ambiqa` command and `import`/`require`
// of 'ambiqa' run. npm runs it on `npm ci`/`npm install` in a clone and on `npm pack` (`prepare`),
// and `npm test` runs it first.
//
//   dist/cjs/     tsc's CommonJS output, one file per source file, with .d.ts, .js.map and
//                 .d.ts.map; its package.json says "commonjs", so its declarations stay CommonJS
//                 (extensionless relative imports are valid there) under `moduleResolution:
//                 nodenext` in a user's project
//   dist/esm/     index.mjs, the ES-module entry, and index.d.mts, both generated from the
//                 compiled entry's exports: they re-export the one CommonJS instance, so a process
//                 that both imports and requires ambiqa has one pipeline registry and one loaded
//                 model (Node's documented wrapper for a dual package)
//   dist/build.json   when the build started; written last, so a build that failed is stale
//
// `--if-stale` builds only when dist/ is older than src/ (what `ambiqa notebook` in a clone calls).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The newest modification time (ms) of what the build reads: src/**\/*.ts, the folders of src/
 * (a deleted file changes its folder's time) and the tsconfigs.
 */
export function newestSourceMtime(pkg = root) {
  let newest = statSync(join(pkg, 'src')).mtimeMs;
  for (const name of ['tsconfig.json', 'tsconfig.build.json']) {
    const p = join(pkg, name);
    if (existsSync(p)) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  for (const entry of readdirSync(join(pkg, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory() || (entry.isFile() && entry.name.endsWith('.ts'))) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Why dist/ cannot be run as it is (missing, failed, or older than a source file), or undefined. */
export function staleReason(pkg = root) {
  const stampFile = join(pkg, 'dist', 'build.json');
  if (!existsSync(stampFile)) return 'dist/ has not been built';
  let started;
  try {
    started = JSON.parse(readFileSync(stampFile, 'utf8')).started;
  } catch {
    return 'dist/build.json is unreadable';
  }
  // A file saved while tsc was running is newer than the build's start: stale, as it should be.
  if (!(newestSourceMtime(pkg) < started)) return 'src/ changed after the last build';
  return undefined;
}

/**
 * node-llama-cpp and transformers.js are not dependencies of a project that installs ambiqa (ambiqa
 * setup puts them in its tool folder, src/config/tools.ts), so the declarations must not import
 * their types: a user's \`tsc\` would report "Cannot find module" in ambiqa's .d.ts (with
 * skipLibCheck off) and tslab type-checks notebook cells against them. The few engine types the
 * declarations name (a token, a context sequence, ...) become \`unknown\` there, on the same line
 * so the declaration maps stay right; the sources keep the real types.
 */
const TOOL_TYPE_PACKAGES = ['node-llama-cpp', '@huggingface/transformers'];

function opaqueToolTypes(dir) {
  const quoted = (p) => `['"]${p.replace(/[/.]/g, '\\$&')}['"]`;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    let text = readFileSync(file, 'utf8');
    const before = text;
    for (const pkg of TOOL_TYPE_PACKAGES) {
      const q = quoted(pkg);
      text = text
        .replace(new RegExp(`^import type \\{([^}]*)\\} from ${q};$`, 'gm'), (_, names) =>
          names.split(',').map((n) => n.trim()).filter(Boolean).map((n) => `type ${n} = unknown;`).join(' ') + ' // from ' + pkg + ', not installed beside ambiqa')
        .replace(new RegExp(`typeof import\\(${q}\\)`, 'g'), 'unknown')
        .replace(new RegExp(`import\\(${q}\\)\\.[A-Za-z_$][\\w$]*`, 'g'), 'unknown');
      if (new RegExp(q).test(text)) throw new Error(`build: ${file} still refers to ${pkg} in a form opaqueToolTypes does not rewrite`);
    }
    if (text !== before) writeFileSync(file, text);
  }
}

function build() {
  const started = Date.now();
  const dist = join(root, 'dist');
  // Compile into fresh folders beside the old ones and move them into place, so that a file
  // removed from src/ leaves no stale .js behind and a process running from dist/ meanwhile never
  // sees half a build. Beside, not below: the source maps name src/ by a relative path.
  const next = { cjs: join(dist, `.cjs-${process.pid}`), esm: join(dist, `.esm-${process.pid}`) };
  const old = { cjs: join(dist, `.old-cjs-${process.pid}`), esm: join(dist, `.old-esm-${process.pid}`) };
  const clean = () => {
    for (const dir of [...Object.values(next), ...Object.values(old)]) rmSync(dir, { recursive: true, force: true });
  };
  clean();
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', next.cjs], { stdio: 'inherit' });
  if (compiled.status !== 0) {
    clean();
    console.error(`build: tsc failed (exit ${compiled.status ?? compiled.signal}); dist/ left as it was`);
    process.exitCode = 1;
    return;
  }
  writeFileSync(join(next.cjs, 'package.json'), '{ "type": "commonjs" }\n');
  opaqueToolTypes(next.cjs);

  // The ES-module entry names every export of the compiled entry: generated here, never kept by hand.
  const entry = createRequire(import.meta.url)(join(next.cjs, 'index.js'));
  const names = Object.keys(entry).filter((k) => k !== '__esModule' && k !== 'default').sort();
  const bad = names.filter((n) => !/^[A-Za-z_$][\w$]*$/.test(n));
  if (bad.length > 0) throw new Error(`build: export names that are not identifiers: ${bad.join(', ')}`);
  mkdirSync(next.esm);
  writeFileSync(
    join(next.esm, 'index.mjs'),
    [
      '// Generated by scripts/build.mjs from dist/cjs/index.js: the ES-module face of the one CommonJS instance.',
      "import { createRequire } from 'node:module';",
      '',
      "const ambiqa = createRequire(import.meta.url)('../cjs/index.js');",
      '',
      `export const {\n  ${names.join(',\n  ')},\n} = ambiqa;`,
      'export default ambiqa;',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(next.esm, 'index.d.mts'),
    [
      '// Generated by scripts/build.mjs: the types of dist/cjs/index.js, which index.mjs re-exports.',
      "export * from '../cjs/index.js';",
      "import * as ambiqa from '../cjs/index.js';",
      'export default ambiqa;',
      '',
    ].join('\n'),
  );

  // Swap the new build in: a rename each; the old one is removed afterwards.
  for (const part of ['cjs', 'esm']) {
    if (existsSync(join(dist, part))) renameSync(join(dist, part), old[part]);
    renameSync(next[part], join(dist, part));
  }
  clean();
  writeFileSync(join(dist, 'build.json'), JSON.stringify({ started, seconds: (Date.now() - started) / 1000, exports: names.length }, null, 2) + '\n');
  console.error(`build: dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s (${names.length} exports)`);
}

/**
 * One build at a time per checkout (`npm test` beside `npm run build`, two test files that both
 * ensure a build): the others wait, then find dist/ fresh. A lock left by a killed build is taken
 * over after 10 minutes.
 */
function withBuildLock(body) {
  const lock = join(root, 'dist', '.build-lock');
  mkdirSync(dirname(lock), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      if (age > 10 * 60_000) rmSync(lock, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    body();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes('--if-stale');
  if (ifStale && staleReason() === undefined) process.exit(0);
  withBuildLock(() => {
    if (ifStale) {
      // Another build may have finished while this one waited.
      const reason = staleReason();
      if (reason === undefined) return;
      console.error(`build: ${reason}; building dist/`);
    }
    build();
  });
}
