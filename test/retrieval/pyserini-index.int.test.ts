/**
 * An index Pyserini built opens as is. The fixture (fixtures/pyserini-2.4.0, README there) was
 * written by Pyserini 2.4.0's own `python -m pyserini.index.lucene` with the flags its prebuilt
 * indexes use, over five documents in the layout of Pyserini's `wikipedia-dpr-100w`
 * (`{"id", "contents": "\"Title\"\ntext"}`, no title field), and `pyserini-hits.json` holds what
 * Pyserini's own LuceneSearcher answered over it. ambiqa must rank and score as Pyserini did,
 * give each hit its title and text, serve passages by id, and refuse an index built without its
 * documents (`--storeContents` alone), naming the folder, before any searcher starts.
 *
 * Needs `npx ambiqa setup --only lucene` (CI runs it); elsewhere it skips, saying why.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createRetriever } from '../../src/retrieval/factory';
import { inspectIndex } from '../../src/retrieval/lucene/index-dir';
import { LuceneRetriever } from '../../src/retrieval/lucene/retriever';
import { retrieverParams } from '../../src/retrieval/remote/inspect';
import { luceneSkipReason } from '../helpers/lucene';

const skipReason = luceneSkipReason('Pyserini index tests');

const FIXTURE = fileURLToPath(new URL('./fixtures/pyserini-2.4.0/', import.meta.url));
// Copied out of the repository: the searcher opens it read-only, but nothing may touch the fixture.
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-pyserini-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface PyseriniAnswer {
  query: string;
  hits: { docid: string; score: number }[];
}

/** The collection Pyserini indexed, read back into titles and texts (the quoted first line is the title). */
function collection(): Map<string, { title: string; text: string }> {
  const docs = new Map<string, { title: string; text: string }>();
  for (const line of readFileSync(join(FIXTURE, 'collection', 'docs.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const { id, contents } = JSON.parse(line) as { id: string; contents: string };
    const [first, ...rest] = contents.split('\n');
    docs.set(id, { title: first!.replace(/^"|"$/g, ''), text: rest.join('\n') });
  }
  return docs;
}

describe.skipIf(skipReason !== undefined)('a Pyserini-built index (real Anserini searcher)', { timeout: 120_000 }, () => {
  it('opens from `retriever: {type: bm25, engine: lucene, index}` and answers as Pyserini’s LuceneSearcher did', async () => {
    const index = join(tmp, 'index');
    cpSync(join(FIXTURE, 'index'), index, { recursive: true });
    const retriever = await createRetriever({ type: 'bm25', engine: 'lucene', index }, undefined, { cache: false });
    try {
      await retriever.preflight?.();
      const expected = JSON.parse(readFileSync(join(FIXTURE, 'pyserini-hits.json'), 'utf8')) as PyseriniAnswer[];
      const docs = collection();
      expect(expected.length).toBeGreaterThanOrEqual(5);
      for (const { query, hits } of expected) {
        const ours = await retriever.search(query, 5);
        expect(ours.map((h) => h.passage.id), query).toEqual(hits.map((h) => h.docid));
        // Anserini's REST server rounds scores to 4 decimals; Pyserini returns the float.
        ours.forEach((h, i) => expect(h.score, `${query} #${i}`).toBeCloseTo(hits[i]!.score, 3));
        for (const h of ours) expect(h.passage).toEqual({ id: h.passage.id, ...docs.get(h.passage.id)! });
      }
      // The corpus on disk, served by id from the stored documents.
      const lucene = retriever as LuceneRetriever;
      expect(await lucene.passage('105')).toEqual({ id: '105', ...docs.get('105')! });
      expect(await lucene.passage('999')).toBeUndefined();
      // No ambiqa sidecar: the params say what the index is, without a passage count.
      const params = retrieverParams(retriever);
      expect(params).toMatchObject({ 'retriever.engine': 'lucene', 'retriever.index': index, 'retriever.index.commit': 'segments_1', 'retriever.index.lucene': '10.5.0' });
      expect(params).not.toHaveProperty('retriever.index.passages');
    } finally {
      await retriever.close?.();
    }
  });

  it('refuses an index Pyserini built without its documents, naming the folder, before a searcher starts', async () => {
    const index = join(tmp, 'index-contents-only');
    cpSync(join(FIXTURE, 'index-contents-only'), index, { recursive: true });
    const message = `retriever.index ${index}: the index stores no documents (no \`raw\` field in _0.fnm), so its hits would come back without passage text`;
    expect(() => inspectIndex(index)).toThrow(message);
    await expect(createRetriever({ type: 'bm25', engine: 'lucene', index }, undefined, { cache: false })).rejects.toThrow(message);
  });
});
