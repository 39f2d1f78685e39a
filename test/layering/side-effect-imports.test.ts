import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script (npm run lint:deps runs it), without type declarations
import { describeFinding, sideEffectImports, sideEffectImportsIn } from '../../scripts/check-side-effect-imports.mjs';

interface Finding {
  file?: string;
  line: number;
  module: string;
  what: string;
}
const findingsIn = (text: string): Finding[] => sideEffectImportsIn('x.ts', text) as Finding[];

const root = resolve(__dirname, '../..');

describe('no side-effect imports (scripts/check-side-effect-imports.mjs, npm run lint:deps)', () => {
  it('finds none in src/', () => {
    expect((sideEffectImports(['src'], root) as Finding[]).map(describeFinding)).toEqual([]);
  });

  it('flags the registry import the entry points used to carry, with its file and line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-side-effects-'));
    mkdirSync(join(dir, 'src', 'cli'), { recursive: true });
    writeFileSync(join(dir, 'src', 'cli', 'report.ts'), "import { join } from 'node:path';\nimport '../pipelines/registry';\nexport const x = join('a');\n");
    const found = sideEffectImports(['src'], dir) as Finding[];
    expect(found).toEqual([{ file: join('src', 'cli', 'report.ts'), line: 2, module: '../pipelines/registry', what: 'an import without bindings' }]);
    expect(describeFinding(found[0])).toMatch(/^src\/cli\/report\.ts:2: an import without bindings: '\.\.\/pipelines\/registry'/);
  });

  it('flags empty clauses and modules loaded as statements', () => {
    const text = [
      "import {} from './a';",
      "export {} from './b';",
      'async function f() {',
      "  await import('./c');",
      "  void import('./d');",
      '}',
      "require('./e');",
    ].join('\n');
    expect(findingsIn(text).map((f) => [f.line, f.module])).toEqual([
      [1, './a'],
      [2, './b'],
      [4, './c'],
      [5, './d'],
      [7, './e'],
    ]);
  });

  it('lets imports with bindings, type imports and re-exports through', () => {
    const text = [
      "import { a } from './a';",
      "import b from './b';",
      "import * as c from './c';",
      "import type { D } from './d';",
      "export * from './e';",
      "export { f } from './f';",
      "export type {} from './g';",
      "const h = await import('./h');",
      "const { i } = require('./i');",
      'export const all = [a, b, c, h, i] as unknown as D;',
    ].join('\n');
    expect(findingsIn(text)).toEqual([]);
  });
});
