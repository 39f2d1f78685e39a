import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
const config = join(root, '.dependency-cruiser.cjs');

function cruise(cwd: string): { status: number | null; output: string } {
  const r = spawnSync(depcruise, ['src', '--config', config, '--output-type', 'err'], { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** A tiny src/ tree with one import from `from` to `to`. */
function project(from: string, to: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-layers-'));
  for (const d of [from, to]) mkdirSync(join(dir, 'src', d), { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler' } }));
  writeFileSync(join(dir, 'src', to, 'b.ts'), 'export const b = 1;\n');
  writeFileSync(join(dir, 'src', from, 'a.ts'), `import { b } from '../${to}/b';\nexport const a = b;\n`);
  return dir;
}

describe('layering (.dependency-cruiser.cjs, npm run lint:deps)', () => {
  it('finds no upward import in src/', () => {
    const r = cruise(root);
    expect(r.output).toContain('no dependency violations');
    expect(r.status).toBe(0);
  });

  it.each([
    ['metrics', 'experiments'],
    ['plots', 'experiments'],
    ['retrieval', 'metrics'],
    ['llm', 'setup'],
    ['trace', 'pipelines'],
  ])('fails on an upward import %s → %s', (from, to) => {
    const r = cruise(project(from, to));
    expect(r.status).not.toBe(0);
    expect(r.output).toContain(`layer-${from}: src/${from}/a.ts → src/${to}/b.ts`);
  });

  it('allows a downward import (experiments → pipelines)', () => {
    const r = cruise(project('experiments', 'pipelines'));
    expect(r.status).toBe(0);
  });

  it('npm run lint:deps fails on a side-effect import (scripts/check-side-effect-imports.mjs), naming file and line', () => {
    const script = join(root, 'scripts', 'check-side-effect-imports.mjs');
    const clean = spawnSync(process.execPath, [script, 'src'], { cwd: root, encoding: 'utf8' });
    expect(clean.status).toBe(0);
    const dir = project('experiments', 'pipelines');
    writeFileSync(join(dir, 'src', 'experiments', 'merge.ts'), "import '../pipelines/b';\nexport const merged = 1;\n");
    const r = spawnSync(process.execPath, [script, 'src'], { cwd: dir, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("src/experiments/merge.ts:1: an import without bindings: '../pipelines/b'");
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts['lint:deps']).toContain('scripts/check-side-effect-imports.mjs src');
  });
});
