import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir, venvDir } from '../../src/config/paths';

/**
 * ambiqa as a user gets it: `npm pack` here, then in a new folder outside the repository
 * `npm init -y` and `npm install <the tarball> typescript@5.9.3 @types/node@20`, as the README says,
 * with none of this repository's .npmrc, overrides or allowScripts (and no allowScripts line of the
 * project's own: no dependency's install script fetches anything from outside the registry). The
 * user's view: `npx tsc -v` is the project's own TypeScript (no dependency of ambiqa links a `tsc`
 * or another tool into node_modules/.bin), node_modules stays under 600 MB (the llama.cpp engine,
 * transformers.js and the notebook kernel are not in it: `ambiqa setup` puts them in its tool
 * folder, src/config/tools.ts), `npx ambiqa --help` runs. Then a script there imports and requires
 * 'ambiqa' and runs a one-question config (scripted model), `tsc --noEmit` with strict and nodenext
 * checks that script against the package's declarations only, and `npx ambiqa setup`, `npx ambiqa
 * demo` and a notebook (`npx ambiqa notebook --execute`) run there. The models and tools are reused
 * from this checkout's cache and venv (AMBIQA_CACHE_DIR, AMBIQA_VENV_DIR) so the test does not
 * fetch 1.6 GB again; everything else the commands write must land in the new folder and nothing
 * in its node_modules.
 *
 * Slow (the install compiles better-sqlite3; the demo loads the embedded model): an integration test.
 */
/** The most a CPU install of ambiqa may weigh (issue 44). */
const MAX_NODE_MODULES_MB = 600;
const root = resolve(__dirname, '../..');
let work: string;
let project: string;
let tarball: string;
let installed: ReturnType<typeof sh>;
let installSeconds: number;
let marker: number;
/** The project's own TypeScript, which the install must leave as the project's `tsc`. */
const tsc = () => join(project, 'node_modules', 'typescript', 'bin', 'tsc');

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeout = 600_000) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...userEnv(), ...env }, timeout });
  return { status: r.status, stdout: r.stdout ?? '', out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The environment a user's shell would have: none of the test run's ambiqa or npm settings. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('AMBIQA_') || k.startsWith('npm_') || k.startsWith('VITEST') || k === 'NODE_OPTIONS') continue;
    env[k] = v;
  }
  return env;
}

/** Files under `dir` changed after `since` (ms), as relative paths. */
function changedSince(dir: string, since: number): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (!entry.isSymbolicLink() && statSync(path).mtimeMs > since) out.push(relative(dir, path));
  }
  return out;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'ambiqa-package-'));
  // The build the tarball carries: made now unless dist/ is up to date (`npm test` built it).
  const built = sh(process.execPath, [join(root, 'scripts', 'build.mjs'), '--if-stale'], root);
  expect(built.status, built.out).toBe(0);
  const packed = sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], root);
  expect(packed.status, packed.out).toBe(0);
  tarball = join(work, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
  project = join(work, 'project');
  rmSync(project, { recursive: true, force: true });
  sh('mkdir', ['-p', project], work);
  expect(sh('npm', ['init', '-y'], project).status).toBe(0);
  const started = Date.now();
  installed = sh('npm', ['install', tarball, 'typescript@5.9.3', '@types/node@20', '--no-audit', '--no-fund', '--prefer-offline'], project);
  installSeconds = (Date.now() - started) / 1000;
  marker = Date.now();
}, 900_000);

afterAll(() => {
  if (work && !process.env.AMBIQA_KEEP_TEST_PROJECT) rmSync(work, { recursive: true, force: true });
});

describe('the packed package in a new project', () => {
  it('installs with plain npm from the registry', () => {
    expect(installed.status, installed.out).toBe(0);
    const pkg = join(project, 'node_modules', 'ambiqa');
    // What a user needs ships; what only the repository needs does not.
    for (const file of ['dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/index.js.map', 'dist/esm/index.mjs', 'dist/esm/index.d.mts', 'bin/ambiqa.mjs', 'src/metrics/punkt/english/abbrev_types.txt', 'examples/asqa-mini.json', 'experiments/demo.yaml', 'scripts/system-deps.sh']) {
      expect(existsSync(join(pkg, file)), file).toBe(true);
    }
    for (const dir of ['test', 'docs', 'notebooks', 'bench']) expect(existsSync(join(pkg, dir)), dir).toBe(false);
    // Development tools and the CDN-only danfojs stay out of a user's install.
    for (const dev of ['tsx', 'danfojs', 'vitest']) expect(existsSync(join(project, 'node_modules', dev)), dev).toBe(false);
  });

  it("leaves the user's tools the user's: `npx tsc` is the project's TypeScript, node_modules under 600 MB, `npx ambiqa --help` runs", () => {
    expect(installed.status, installed.out).toBe(0);
    const version = sh('npx', ['tsc', '-v'], project);
    expect(version.stdout.trim()).toBe('Version 5.9.3');
    // Every command in .bin is one the project asked for or a small helper of a runtime dependency:
    // no TypeScript of another version, no engine or browser CLI.
    const bin = join(project, 'node_modules', '.bin');
    for (const name of ['tsc', 'tsserver']) expect(realpathSync(join(bin, name)).startsWith(join(project, 'node_modules', 'typescript') + '/'), name).toBe(true);
    for (const name of ['tslab', 'node-llama-cpp', 'nlc', 'playwright-core']) expect(existsSync(join(bin, name)), name).toBe(false);
    // The heavy runtime pieces are not in a user's node_modules (ambiqa setup puts them in its tool folder).
    for (const name of ['node-llama-cpp', '@node-llama-cpp', 'onnxruntime-node', 'onnxruntime-web', '@huggingface/transformers', 'tslab', '@tslab', 'zeromq', 'playwright-core']) {
      expect(existsSync(join(project, 'node_modules', name)), name).toBe(false);
    }
    const du = sh('du', ['-sm', join(project, 'node_modules')], project);
    const mb = Number(du.stdout.split('\t')[0]);
    console.log(`[package] npm install of the tarball with typescript@5.9.3 and @types/node@20: ${installSeconds.toFixed(0)} s; node_modules ${mb} MB (du -sm)`);
    expect(mb).toBeGreaterThan(0);
    expect(mb).toBeLessThan(MAX_NODE_MODULES_MB);
    const help = sh('npx', ['ambiqa', '--help'], project);
    expect(help.status, help.out).toBe(0);
    expect(help.stdout).toMatch(/usage: ambiqa <command>/);
  });

  it('imports and requires one instance and runs a one-question config, writing under the project', () => {
    writeFileSync(
      join(project, 'one.mts'),
      [
        "import { createRequire } from 'node:module';",
        "import { join } from 'node:path';",
        "import { examplesDir, packageRoot, projectRoot, run, toDataFrame, type ExperimentInput } from 'ambiqa';",
        '',
        '// A pipeline registered from a notebook types its options by augmenting the package (docs/pipelines.md).',
        "declare module 'ambiqa' {",
        "  interface RegisteredPipelineOptions { 'my-pipeline': { prefix?: string } }",
        '}',
        "export const mine: ExperimentInput['pipeline'] = { name: 'my-pipeline', options: { prefix: '> ' } };",
        '',
        'const required = createRequire(import.meta.url)(\'ambiqa\') as typeof import(\'ambiqa\');',
        'const config: ExperimentInput = {',
        "  dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 1 },",
        "  pipeline: { name: 'closed-book', options: { nShots: 0 } },",
        "  llm: { provider: 'scripted', reply: 'Argentina and Spain' },",
        "  metrics: ['str_em', 'rougeLsum'],",
        '  tracking: { enabled: false },',
        '};',
        "const done = await run(config, { name: 'one-question', progress: false });",
        'const table = toDataFrame(done.results.map((r) => ({ id: r.id, output: r.output })));',
        'console.log(JSON.stringify({',
        '  sameInstance: required.run === run,',
        '  answered: done.results.length,',
        '  rows: table.shape[0],',
        '  dir: done.dir,',
        '  packageRoot,',
        '  projectRoot,',
        '}));',
      ].join('\n'),
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: true,
          outDir: 'out',
          types: ['node'],
          typeRoots: [join(project, 'node_modules', '@types')],
        },
        files: ['one.mts'],
      }),
    );
    // The user's check: strict, nodenext, against the declarations alone (no file of ambiqa's src/).
    const checked = sh(process.execPath, [tsc(), '--noEmit', '--listFiles', '-p', 'tsconfig.json'], project);
    expect(checked.out.split('\n').filter((l) => /error TS\d+/.test(l))).toEqual([]);
    expect(checked.status).toBe(0);
    const program = checked.out.split('\n').filter((l) => l.includes('/node_modules/ambiqa/'));
    expect(program.some((l) => l.endsWith('/dist/esm/index.d.mts'))).toBe(true);
    expect(program.filter((l) => l.includes('/node_modules/ambiqa/src/'))).toEqual([]);
    // With skipLibCheck off, nothing in ambiqa's declarations fails either: they name no type of
    // node-llama-cpp or transformers.js, which the project does not have (scripts/build.mjs).
    const libChecked = sh(process.execPath, [tsc(), '--noEmit', '--skipLibCheck', 'false', '-p', 'tsconfig.json'], project);
    expect(libChecked.out.split('\n').filter((l) => /^(node_modules\/ambiqa\/|one\.mts)/.test(l))).toEqual([]);

    expect(sh(process.execPath, [tsc(), '-p', 'tsconfig.json'], project).status).toBe(0);
    const ran = sh(process.execPath, ['out/one.mjs'], project);
    expect(ran.status, ran.out).toBe(0);
    const result = JSON.parse(ran.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({ sameInstance: true, answered: 1, rows: 1, projectRoot: project, packageRoot: join(project, 'node_modules', 'ambiqa') });
    expect(result.dir).toBe(join(project, 'artifacts', 'runs', 'one-question'));
    expect(existsSync(join(project, 'artifacts', 'runs', 'one-question', 'results.jsonl'))).toBe(true);
    // danfojs is not installed: a plain table, and a one-line hint how to get DataFrames.
    expect(ran.out).toMatch(/toDataFrame returns a plain table; for danfojs DataFrames, npm install danfojs/);

    writeFileSync(join(project, 'plain.cjs'), "const { exactMatch, projectRoot } = require('ambiqa');\nconsole.log(exactMatch('The cat', 'cat'), projectRoot);\n");
    const cjs = sh(process.execPath, ['plain.cjs'], project);
    expect(cjs.stdout.trim()).toBe(`1 ${project}`);
  }, 300_000);

  it('runs `npx ambiqa setup` and `npx ambiqa demo` there: artifacts in the project, nothing in node_modules', () => {
    // The models and venv this checkout already has (the test's one shortcut; see above).
    const shared = { AMBIQA_CACHE_DIR: cacheDir(), AMBIQA_VENV_DIR: venvDir(), ...(process.env.MLFLOW_TRACKING_URI ? { MLFLOW_TRACKING_URI: process.env.MLFLOW_TRACKING_URI } : {}) };
    const setupStarted = Date.now();
    const setup = sh('npx', ['ambiqa', 'setup', '--skip-system'], project, shared);
    expect(setup.status, setup.out).toBe(0);
    console.log(`[package] npx ambiqa setup --skip-system: ${((Date.now() - setupStarted) / 1000).toFixed(0)} s\n${setup.out.split('\n').filter((l) => /engine|embedder runtime|notebook kernel/.test(l)).join('\n')}`);
    // The engine, the embedder's runtime and the kernel came from the tool folder.
    expect(setup.out).not.toMatch(/resolved from/);

    // The notebook opens there: the tslab kernel from the tool folder, `import … from 'ambiqa'`
    // resolved through the project's node_modules, a display helper on tslab's display.
    const nb = join(project, 'check.ipynb');
    writeFileSync(
      nb,
      JSON.stringify({
        cells: [{ cell_type: 'code', id: 'a', metadata: {}, execution_count: null, outputs: [], source: "import { exactMatch, showTable } from 'ambiqa';\nconsole.log('em', exactMatch('The cat', 'cat'));\nshowTable([{ answer: 42 }]);" }],
        metadata: { kernelspec: { name: 'ambiqa-tslab', display_name: 'TypeScript', language: 'typescript' } },
        nbformat: 4,
        nbformat_minor: 5,
      }),
    );
    const notebook = sh('npx', ['ambiqa', 'notebook', '--execute', nb, '--out', join(work, 'executed')], project, shared);
    expect(notebook.status, notebook.out).toBe(0);
    const outputs = JSON.stringify((JSON.parse(readFileSync(join(work, 'executed', 'check.out.ipynb'), 'utf8')) as { cells: { outputs: unknown[] }[] }).cells[0]!.outputs);
    expect(outputs).toContain('em 1');
    expect(outputs).toContain('<td style=\\"text-align:left;vertical-align:top;max-width:420px\\">42</td>');

    const demo = sh('npx', ['ambiqa', 'demo', '--limit', '1'], project, { ...shared, AMBIQA_LLM_THREADS: '1' });
    expect(demo.status, demo.out).toBe(0);
    const runs = readdirSync(join(project, 'artifacts', 'runs')).filter((d) => d.startsWith('demo-'));
    expect(runs).toHaveLength(1);
    expect(readFileSync(join(project, 'artifacts', 'runs', runs[0]!, 'metrics.json'), 'utf8')).toContain('str_em');
    expect(changedSince(join(project, 'node_modules'), marker)).toEqual([]);
  }, 900_000);
});
