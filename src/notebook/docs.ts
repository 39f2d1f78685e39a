/**
 * The executed copies of the notebooks in docs/notebooks/: what a reader sees on a code host
 * without running anything (figures as PNG, tables as HTML, printed lines as text).
 *
 * Each copy carries, in its metadata, a hash of its source notebook's cells (`ambiqa.source_sha256`).
 * A test compares it with the source as it is now, so a notebook changed without regenerating
 * its copy fails CI. File times cannot tell: a clone gives every file the same time.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../config/paths';

export const notebookCellSchema = z.looseObject({
  cell_type: z.string(),
  source: z.union([z.string(), z.array(z.string())]),
  outputs: z.array(z.looseObject({ output_type: z.string(), text: z.union([z.string(), z.array(z.string())]).optional() })).optional(),
});

export const notebookSchema = z.looseObject({
  cells: z.array(notebookCellSchema),
  metadata: z.looseObject({}),
});

export type NotebookFile = z.infer<typeof notebookSchema>;

export const docsStampSchema = z.object({
  source: z.string(),
  source_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  executed_at: z.string(),
  seconds: z.number(),
});

export type DocsStamp = z.infer<typeof docsStampSchema>;

/** Where the executed copies live. */
export function docsNotebooksDir(root: string = projectRoot): string {
  return join(root, 'docs', 'notebooks');
}

/** Every numbered notebook (`NN-name.ipynb`) in notebooks/, sorted: a new one is picked up by its name alone. */
export function projectNotebooks(root: string = projectRoot): string[] {
  const dir = join(root, 'notebooks');
  return readdirSync(dir)
    .filter((f) => /^\d\d-.*\.ipynb$/.test(f))
    .sort()
    .map((f) => join(dir, f));
}

export function readNotebookFile(path: string): NotebookFile {
  return notebookSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

/**
 * SHA-256 of what the notebook says: each cell's type and source, in order. Outputs, ids,
 * execution counts and metadata are left out, so executing or re-saving a notebook keeps its hash.
 */
export function notebookSourceHash(nb: NotebookFile): string {
  const cells = nb.cells.map((c) => [c.cell_type, [c.source].flat().join('')]);
  return createHash('sha256').update(JSON.stringify(cells)).digest('hex');
}

/** The stamp of an executed copy, or undefined when it has none. */
export function docsStamp(nb: NotebookFile): DocsStamp | undefined {
  const parsed = docsStampSchema.safeParse((nb.metadata as { ambiqa?: unknown }).ambiqa);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Turn nbconvert's executed copy into the docs copy: stamp the source's hash and write the
 * repository's absolute path in printed output as `<repo>` (the copy then reads the same
 * whoever regenerates it).
 */
export function finishDocsCopy(executedPath: string, sourcePath: string, seconds: number, root: string = projectRoot): void {
  const nb = readNotebookFile(executedPath);
  const source = readNotebookFile(sourcePath);
  for (const cell of nb.cells) {
    for (const output of cell.outputs ?? []) {
      if (output.output_type === 'stream' && output.text !== undefined) {
        output.text = [output.text].flat().map((t) => t.split(root).join('<repo>'));
      }
    }
  }
  const stamp: DocsStamp = {
    source: `notebooks/${basename(sourcePath)}`,
    source_sha256: notebookSourceHash(source),
    executed_at: new Date().toISOString(),
    seconds: Math.round(seconds),
  };
  nb.metadata = { ...nb.metadata, ambiqa: stamp };
  writeFileSync(executedPath, JSON.stringify(nb, null, 1) + '\n');
}

export interface DocsCopyState {
  notebook: string;
  copy: string;
  state: 'fresh' | 'missing' | 'unstamped' | 'stale';
  bytes?: number;
}

/** For every project notebook: is its executed copy in docs/notebooks/ there and made from the source as it is? */
export function docsCopyStates(root: string = projectRoot): DocsCopyState[] {
  return projectNotebooks(root).map((notebook) => {
    const copy = join(docsNotebooksDir(root), basename(notebook));
    if (!existsSync(copy)) return { notebook, copy, state: 'missing' };
    const bytes = statSync(copy).size;
    const stamp = docsStamp(readNotebookFile(copy));
    if (!stamp) return { notebook, copy, state: 'unstamped', bytes };
    const fresh = stamp.source_sha256 === notebookSourceHash(readNotebookFile(notebook));
    return { notebook, copy, state: fresh ? 'fresh' : 'stale', bytes };
  });
}
