import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_DOCS_NOTEBOOK_BYTES } from '../../src/cli/commands/notebook';
import { docsCopyStates, finishDocsCopy, notebookSourceHash, readNotebookFile, type NotebookFile } from '../../src/notebook/docs';

const root = resolve(__dirname, '../..');

const nb = (sources: string[], extra: Partial<NotebookFile> = {}): NotebookFile => ({
  cells: sources.map((source, i) => ({ cell_type: 'code', id: `c${i}`, source, outputs: [], execution_count: null, metadata: {} })),
  metadata: { kernelspec: { name: 'ambiqa-tslab' } },
  ...extra,
});

describe('docs/notebooks: executed copies stamped with their source', () => {
  it('hashes what the cells say, not their outputs, ids or metadata', () => {
    const a = nb(['const x = 1;', 'show(x);']);
    const executed = nb(['const x = 1;', 'show(x);']);
    executed.cells[0]!.outputs = [{ output_type: 'stream', text: 'hello' }];
    executed.cells[1]!.id = 'other';
    executed.metadata = { ambiqa: { anything: true } };
    expect(notebookSourceHash(executed)).toBe(notebookSourceHash(a));
    // A source split into lines hashes as the same text.
    expect(notebookSourceHash(nb([['const x = 1;'].join(''), 'show(x);']))).toBe(notebookSourceHash({ ...a, cells: [{ ...a.cells[0]!, source: ['const x ', '= 1;'] }, a.cells[1]!] }));
    expect(notebookSourceHash(nb(['const x = 2;', 'show(x);']))).not.toBe(notebookSourceHash(a));
    // A markdown cell that becomes code is a different notebook.
    expect(notebookSourceHash({ ...a, cells: [{ ...a.cells[0]!, cell_type: 'markdown' }, a.cells[1]!] })).not.toBe(notebookSourceHash(a));
    expect(notebookSourceHash(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('tells fresh, stale, unstamped and missing copies apart, and writes the repository path as <repo>', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-docs-'));
    mkdirSync(join(dir, 'notebooks'));
    mkdirSync(join(dir, 'docs', 'notebooks'), { recursive: true });
    const write = (path: string, value: NotebookFile) => writeFileSync(join(dir, path), JSON.stringify(value));
    for (const name of ['01-a', '02-b', '03-c', '04-d']) write(`notebooks/${name}.ipynb`, nb([`// ${name}`]));
    write('notebooks/scratch.ipynb', nb(['// not numbered: not a project notebook']));
    // 01: executed from its source as it is; 02: from an older source; 03: no stamp; 04: none.
    const executed = nb(['// 01-a']);
    executed.cells[0]!.outputs = [{ output_type: 'stream', name: 'stdout', text: [`corpus at ${dir}/artifacts/x.jsonl\n`] }];
    write('docs/notebooks/01-a.ipynb', executed);
    finishDocsCopy(join(dir, 'docs/notebooks/01-a.ipynb'), join(dir, 'notebooks/01-a.ipynb'), 12.4, dir);
    write('docs/notebooks/02-b.ipynb', nb(['// 02-b, before an edit']));
    finishDocsCopy(join(dir, 'docs/notebooks/02-b.ipynb'), join(dir, 'notebooks/02-b.ipynb'), 3, dir);
    write('notebooks/02-b.ipynb', nb(['// 02-b, edited after the copy was made']));
    write('docs/notebooks/03-c.ipynb', nb(['// 03-c']));
    expect(docsCopyStates(dir).map((s) => [s.notebook.slice(dir.length), s.state])).toEqual([
      ['/notebooks/01-a.ipynb', 'fresh'],
      ['/notebooks/02-b.ipynb', 'stale'],
      ['/notebooks/03-c.ipynb', 'unstamped'],
      ['/notebooks/04-d.ipynb', 'missing'],
    ]);
    const copy = readNotebookFile(join(dir, 'docs/notebooks/01-a.ipynb'));
    expect(copy.cells[0]!.outputs![0]!.text).toEqual(['corpus at <repo>/artifacts/x.jsonl\n']);
    expect((copy.metadata as { ambiqa: unknown }).ambiqa).toMatchObject({ source: 'notebooks/01-a.ipynb', seconds: 12 });
    expect(readFileSync(join(dir, 'docs/notebooks/01-a.ipynb'), 'utf8')).not.toContain(dir);
  });

  // The CI check: regenerate with `npx ambiqa notebook --execute-docs` (or `npm run notebooks:docs`)
  // after changing a notebook.
  it('every notebook in notebooks/ has an executed copy in docs/notebooks/ made from its current source, under 1 MB', () => {
    const states = docsCopyStates(root);
    expect(states.length).toBeGreaterThanOrEqual(5);
    for (const s of states) {
      expect(s.state, `${s.copy}: run \`npx ambiqa notebook --execute-docs ${s.notebook.slice(root.length + 1)}\``).toBe('fresh');
      expect(s.bytes!, s.copy).toBeLessThan(MAX_DOCS_NOTEBOOK_BYTES);
    }
  });
});
