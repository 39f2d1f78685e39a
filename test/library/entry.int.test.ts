import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build';

/**
 * `import { … } from 'ambiqa'` from another project: a temp project outside the repository that
 * depends on it as npm links a `file:` dependency (node_modules/ambiqa → the repository), type-
 * checks its own TypeScript against ambiqa's types (the build's declarations) and runs ES-module
 * and CommonJS imports of the build. test/library/package.int.test.ts does the same from a packed
 * tarball installed by npm.
 */
const root = resolve(__dirname, '../..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
let project: string;

function sh(cmd: string, args: string[], cwd: string) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: process.env });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

beforeAll(() => {
  ensureBuilt();
  project = mkdtempSync(join(tmpdir(), 'ambiqa-consumer-'));
  mkdirSync(join(project, 'node_modules'));
  symlinkSync(root, join(project, 'node_modules', 'ambiqa'), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true, dependencies: { ambiqa: `file:${root}` } }));
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        esModuleInterop: true,
        lib: ['ES2023', 'DOM'],
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
      },
      include: ['*.ts'],
    }),
  );
  writeFileSync(
    join(project, 'main.ts'),
    [
      "import { checkConfig, createPipeline, exactMatch, type ExperimentInput, type PipelineOptionsInput } from 'ambiqa';",
      '',
      "const toc: PipelineOptionsInput<'toc'> = { maxNodes: 4, pruneThreshold: 0.5 };",
      'const config: ExperimentInput = {',
      "  dataset: { name: 'asqa', path: 'x.json' },",
      "  pipeline: { name: 'toc', options: toc },",
      "  llm: { provider: 'scripted' },",
      "  retriever: 'bm25',",
      '};',
      'createPipeline(config.pipeline.name, toc);',
      "console.log('em', exactMatch('The Eiffel Tower', 'eiffel tower'));",
      "try { checkConfig(config); } catch (e) { console.log('checked:', (e as Error).message.split('\\n')[0]); }",
    ].join('\n'),
  );
});

describe("a project that depends on 'ambiqa'", () => {
  it('type-checks against the package types', () => {
    const r = sh(tsc, ['-p', 'tsconfig.json'], project);
    expect(r.out).toBe('');
    expect(r.status).toBe(0);
  });

  it('gets type errors for a wrong config (options typed from the zod schemas)', () => {
    writeFileSync(
      join(project, 'bad.ts'),
      "import type { ExperimentInput } from 'ambiqa';\nexport const c: ExperimentInput = { dataset: { name: 'asqa' }, pipeline: { name: 'toc', options: { maxNodes: 'four' } } };\n",
    );
    try {
      const r = sh(tsc, ['-p', 'tsconfig.json'], project);
      expect(r.status).not.toBe(0);
      expect(r.out).toMatch(/bad\.ts.*maxNodes|Type 'string' is not assignable to type 'number'/s);
    } finally {
      writeFileSync(join(project, 'bad.ts'), 'export {};\n');
    }
  });

  it('imports it as an ES module and as CommonJS', () => {
    writeFileSync(join(project, 'esm.mjs'), "import { exactMatch, run } from 'ambiqa';\nconsole.log(typeof run, exactMatch('The cat', 'cat'));\n");
    writeFileSync(join(project, 'cjs.cjs'), "const { exactMatch, loadRun } = require('ambiqa');\nconsole.log(typeof loadRun, exactMatch('a cat', 'dog'));\n");
    const esm = sh(process.execPath, ['esm.mjs'], project);
    expect(esm.out.trim()).toBe('function 1');
    const cjs = sh(process.execPath, ['cjs.cjs'], project);
    expect(cjs.out.trim()).toBe('function 0');
  });

  it('the generated ES-module entry names exactly what the CommonJS build exports, from one instance', () => {
    writeFileSync(
      join(project, 'both.mjs'),
      [
        "import * as esm from 'ambiqa';",
        "import { createRequire } from 'node:module';",
        "const cjs = createRequire(import.meta.url)('ambiqa');",
        "const names = (o) => Object.keys(o).filter((k) => k !== 'default' && k !== '__esModule').sort();",
        'console.log(JSON.stringify({ esm: names(esm), cjs: names(cjs), same: esm.run === cjs.run && esm.default === cjs }));',
      ].join('\n'),
    );
    const r = sh(process.execPath, ['both.mjs'], project);
    const { esm, cjs, same } = JSON.parse(r.out.trim().split('\n').at(-1)!) as { esm: string[]; cjs: string[]; same: boolean };
    expect(esm).toEqual(cjs);
    expect(esm).toContain('run');
    expect(same).toBe(true);
  });
});
