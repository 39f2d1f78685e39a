import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build';

/**
 * When the `ambiqa` command of a development checkout runs the build and when the sources
 * (bin/ambiqa.mjs → scripts/build.mjs `staleReason`); that the build's stack traces point at the
 * TypeScript line; that the PNG worker, which loads a module by path, finds it in the build.
 */
const root = resolve(__dirname, '../..');
type BuildScript = { staleReason(pkg: string): string | undefined };
let build: BuildScript;

beforeAll(async () => {
  build = (await import(join(root, 'scripts', 'build.mjs') as string)) as BuildScript;
});

describe('a checkout whose dist/ is older than src/', () => {
  it('is stale until built, fresh after, stale again when a source file changes', () => {
    const pkg = mkdtempSync(join(tmpdir(), 'ambiqa-build-state-'));
    mkdirSync(join(pkg, 'src', 'deep'), { recursive: true });
    writeFileSync(join(pkg, 'src', 'deep', 'a.ts'), 'export const a = 1;\n');
    const past = (Date.now() - 60_000) / 1000;
    for (const p of [join(pkg, 'src', 'deep', 'a.ts'), join(pkg, 'src', 'deep'), join(pkg, 'src')]) utimesSync(p, past, past);
    expect(build.staleReason(pkg)).toBe('dist/ has not been built');

    mkdirSync(join(pkg, 'dist'));
    writeFileSync(join(pkg, 'dist', 'build.json'), JSON.stringify({ started: Date.now() - 30_000 }));
    expect(build.staleReason(pkg)).toBeUndefined();

    // Saved after the build started (even while tsc ran): stale.
    writeFileSync(join(pkg, 'src', 'deep', 'a.ts'), 'export const a = 2;\n');
    expect(build.staleReason(pkg)).toBe('src/ changed after the last build');

    // A source file deleted after the build: its folder changed, stale too.
    writeFileSync(join(pkg, 'dist', 'build.json'), JSON.stringify({ started: Date.now() + 1000 }));
    expect(build.staleReason(pkg)).toBeUndefined();
    writeFileSync(join(pkg, 'src', 'deep', 'b.ts'), 'export const b = 1;\n');
    for (const p of [join(pkg, 'src', 'deep', 'a.ts'), join(pkg, 'src', 'deep', 'b.ts'), join(pkg, 'src', 'deep'), join(pkg, 'src')]) utimesSync(p, past, past);
    writeFileSync(join(pkg, 'dist', 'build.json'), JSON.stringify({ started: Date.now() - 1000 }));
    expect(build.staleReason(pkg)).toBeUndefined();
    rmSync(join(pkg, 'src', 'deep', 'b.ts'));
    expect(build.staleReason(pkg)).toBe('src/ changed after the last build');
  });
});

describe('the build', () => {
  it("renders a figure's PNG in the worker, which loads the compiled export module beside it", () => {
    ensureBuilt();
    const script = [
      `const p = require(${JSON.stringify(join(root, 'dist', 'cjs', 'notebook', 'figure-png.js'))});`,
      "const png = p.chromiumPngSync({ data: [{ x: [1, 2], y: [3, 1], type: 'scatter' }], layout: {} }, { width: 320, height: 240 });",
      'p.closeChromiumPngSync();',
      "console.log(png.subarray(1, 4).toString(), png.length > 1000);",
    ].join('\n');
    const r = spawnSync(process.execPath, ['-e', script], { cwd: tmpdir(), encoding: 'utf8', timeout: 120_000 });
    expect(r.stdout.trim(), r.stderr).toBe('PNG true');
  });


  it('prints a stack trace that points at the TypeScript line', () => {
    ensureBuilt();
    const r = spawnSync(process.execPath, [join(root, 'bin', 'ambiqa.mjs'), 'score', '--dataset', 'asqa', '--data', '/nonexistent/asqa.json', '--predictions', '/nonexistent/p.jsonl'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, AMBIQA_DEBUG: '1' },
    });
    expect(r.status).toBe(1);
    const frame = /\((\/[^():]+\.ts):(\d+):\d+\)/.exec(r.stderr);
    expect(frame, r.stderr).not.toBeNull();
    const [, file, line] = frame!;
    expect(file!.startsWith(join(root, 'src') + '/')).toBe(true);
    // The line it names is the one that threw.
    expect(readFileSync(file!, 'utf8').split('\n')[Number(line) - 1]).toMatch(/throw|AmbiqaError/);
  });
});
