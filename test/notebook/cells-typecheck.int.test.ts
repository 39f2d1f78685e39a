import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readNotebookFile } from '../../src/notebook/docs';

const root = resolve(__dirname, '../..');

/** A notebook's code cells as one module, in order, as the tslab kernel sees them one after another. */
function cellsAsModule(path: string): string {
  const cells = readNotebookFile(path).cells.filter((c) => c.cell_type === 'code');
  const text = (source: string | string[]) => (Array.isArray(source) ? source.join('') : source);
  return `${cells.map((c) => text(c.source)).join('\n\n')}\nexport {};\n`;
}

/** Type errors of modules compiled against the sources, `ambiqa` resolving to src/index.ts. */
function typeErrors(files: string[]): string[] {
  // The repository's own compiler options (strict, its lib and module settings, `paths` mapping
  // 'ambiqa' to src/index.ts), so the cells are held to what the sources are held to.
  const read = ts.readConfigFile(join(root, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const { options } = ts.parseJsonConfigFileContent(read.config, ts.sys, root);
  const program = ts.createProgram(files, options);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && files.includes(d.file.fileName))
    .map((d) => {
      const where = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      return `${d.file!.fileName}:${where.line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

// The notebooks run only in the integration suite (minutes each on the embedded model); a change to
// the library's types that breaks a cell (a renamed export, a narrowed type) shows up here in
// seconds instead, before anyone opens the notebook.
describe('the shipped notebooks compile against the library as it is', () => {
  it('every code cell of notebooks/*.ipynb typechecks (strict), cells in order as one module', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-nb-types-'));
    const notebooks = readdirSync(join(root, 'notebooks')).filter((f) => /^\d\d-.*\.ipynb$/.test(f));
    expect(notebooks.length).toBeGreaterThanOrEqual(6);
    const files = notebooks.map((name) => {
      const file = join(dir, name.replace(/\.ipynb$/, '.ts'));
      writeFileSync(file, cellsAsModule(join(root, 'notebooks', name)));
      return file;
    });
    expect(typeErrors(files)).toEqual([]);
  }, 120_000);

  it('reports a cell that misuses a library type, naming the notebook and line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-nb-types-'));
    const file = join(dir, '99-broken.ts');
    // Trace.decisions is generic: reading a method's field without its accessor does not compile.
    writeFileSync(file, "import type { Trace } from 'ambiqa';\ndeclare const t: Trace;\nconsole.log(t.decisions.nodes.length);\nexport {};\n");
    const errors = typeErrors([file]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/99-broken\.ts:3: .*is of type 'unknown'/);
  }, 120_000);
});
