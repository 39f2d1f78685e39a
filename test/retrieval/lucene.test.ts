/**
 * The Lucene engine's pieces that need no Java: streaming DPR TSV / JSONL, the stored-document
 * → passage mapping, the config's engine fields, the index folder checks (commit point, Lucene
 * version) and the size refusal of readUtf8File. The real searcher is in lucene.int.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeUtf8 } from '../../src/common/text-file';
import { needsCorpus, parseRetrieverConfig } from '../../src/retrieval/factory';
import { checkEngineFields, createLuceneRetriever, hasLocalLuceneIndex } from '../../src/retrieval/lucene/config';
import { inspectIndex, readAnnotations, readSegmentsVersion } from '../../src/retrieval/lucene/index-dir';
import { streamPassages } from '../../src/retrieval/lucene/passage-stream';
import { LuceneRetriever, passageFromDoc } from '../../src/retrieval/lucene/retriever';
import { indexerHeap } from '../../src/retrieval/lucene/build';
import { luceneRuntime } from '../../src/retrieval/lucene/searcher';
import type { Passage } from '../../src/retrieval/types';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-lucene-unit-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, content: string | Buffer) => {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
};
const collect = async (path: string, format: 'dpr-tsv' | 'jsonl') => {
  const out: Passage[] = [];
  for await (const p of streamPassages(path, format, { progressEvery: 1 })) out.push(p);
  return out;
};
const failure = async (run: () => Promise<unknown>): Promise<Error> => {
  try {
    await run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
};

describe('streamPassages', () => {
  it("reads DPR's TSV: header, ids as given, Python-csv quoting undone, CRLF and a last line without newline", async () => {
    const path = file('dpr.tsv', 'id\ttext\ttitle\r\n1\t"Aaron ( or ; ""Ahärôn"") is a prophet"\tAaron\r\n\n20\tplain text here\t"Quoted ""Title"""');
    expect(await collect(path, 'dpr-tsv')).toEqual([
      { id: '1', title: 'Aaron', text: 'Aaron ( or ; "Ahärôn") is a prophet' },
      { id: '20', title: 'Quoted "Title"', text: 'plain text here' },
    ]);
  });

  it('refuses a wrong header, naming the file and line 1', async () => {
    const path = file('bad-header.tsv', 'id\ttitle\ttext\n1\tx\ty\n');
    expect((await failure(() => collect(path, 'dpr-tsv'))).message).toBe(`${path}:1: the header is "id\\ttitle\\ttext", not DPR's "id<TAB>text<TAB>title"`);
  });

  it('refuses a broken row with its line and what is wrong', async () => {
    const twoFields = file('two.tsv', 'id\ttext\ttitle\n1\tfine\tT\n2\tno title field\n');
    expect((await failure(() => collect(twoFields, 'dpr-tsv'))).message).toBe(`${twoFields}:3: expected 3 tab-separated fields (id, text, title), found 2`);
    const emptyId = file('empty-id.tsv', 'id\ttext\ttitle\n\tsome text\tT\n');
    expect((await failure(() => collect(emptyId, 'dpr-tsv'))).message).toBe(`${emptyId}:2: the id is empty`);
  });

  it('refuses bytes that are not UTF-8, naming the line', async () => {
    const path = file('latin1.tsv', Buffer.concat([Buffer.from('id\ttext\ttitle\n1\tcaf'), Buffer.from([0xe9]), Buffer.from(' au lait\tT\n')]));
    expect((await failure(() => collect(path, 'dpr-tsv'))).message).toMatch(new RegExp(`^corpus file ${path}: line 2 is not UTF-8`));
  });

  it("reads ambiqa JSONL with its annotations, and refuses a bad line with the corpus loader's message", async () => {
    const path = file('c.jsonl', `${JSON.stringify({ id: 'a', title: 'T', section: 'S', text: 'x y', annotated_for: ['asqa:1'] })}\n\n${JSON.stringify({ title: 'U', text: 'z' })}\n`);
    const got = await collect(path, 'jsonl');
    expect(got[0]).toEqual({ id: 'a', title: 'T', section: 'S', text: 'x y', annotatedFor: ['asqa:1'] });
    expect(got[1]!.id).toMatch(/^user:[0-9a-f]{16}$/);
    const bad = file('bad.jsonl', `${JSON.stringify({ title: 'T' })}\n`);
    expect((await failure(() => collect(bad, 'jsonl'))).message).toBe(`${bad}:1: passage has no "text"`);
  });
});

describe('passageFromDoc', () => {
  it('reads back what ambiqa index stores: contents = formatPassage, title and section beside it', () => {
    expect(passageFromDoc('7', { contents: 'Paris | History; Paris was founded', title: 'Paris', section: 'History', source: 'asqa:context' })).toEqual({
      id: '7',
      title: 'Paris',
      section: 'History',
      text: 'Paris was founded',
      source: 'asqa:context',
    });
    expect(passageFromDoc('8', { contents: 'Berlin; capital of Germany', title: 'Berlin' })).toEqual({ id: '8', title: 'Berlin', text: 'capital of Germany' });
  });

  it("reads Pyserini's DPR layout (a quoted title on the first line of contents) and a bare string", () => {
    expect(passageFromDoc('1', { contents: '"Aaron"\nAaron is a prophet' })).toEqual({ id: '1', title: 'Aaron', text: 'Aaron is a prophet' });
    expect(passageFromDoc('2', 'just text')).toEqual({ id: '2', title: '', text: 'just text' });
  });
});

describe('retriever config: engine fields', () => {
  it('parses engine lucene with an index, and keeps the in-memory engine the default', () => {
    expect(parseRetrieverConfig({ type: 'bm25', engine: 'lucene', index: '/x' })).toMatchObject({ type: 'bm25', engine: 'lucene', index: '/x' });
    expect(parseRetrieverConfig('bm25')).not.toHaveProperty('engine');
    expect(() => checkEngineFields({ index: '/x' })).toThrow('retriever.index is for engine: lucene, but retriever.engine is memory');
  });

  it('refuses fields that do not fit together, naming them', () => {
    expect(() => checkEngineFields({ engine: 'memory', index: '/x' })).toThrow('retriever.index is for engine: lucene, but retriever.engine is memory');
    expect(() => checkEngineFields({ engine: 'lucene' })).toThrow(/^retriever.engine lucene needs retriever.index .* or retriever.url/);
    expect(() => checkEngineFields({ engine: 'lucene', index: '/x', url: 'http://h' })).toThrow('retriever.index and retriever.url are exclusive');
    expect(() => checkEngineFields({ engine: 'lucene', index: '/x', indexName: 'n' })).toThrow(/indexName .* goes with retriever.url/);
  });

  it('refuses an in-memory BM25 setting the Lucene searcher would ignore', () => {
    expect(() => createLuceneRetriever(parseRetrieverConfig({ type: 'bm25', engine: 'lucene', index: '/x', k1: 1.2 }) as Parameters<typeof createLuceneRetriever>[0])).toThrow(
      /^retriever.k1: 1.2 cannot apply to engine: lucene/,
    );
  });

  it('knows which configs need the corpus in memory', () => {
    expect(needsCorpus({ type: 'bm25', engine: 'lucene', index: '/x' })).toBe(false);
    expect(needsCorpus({ type: 'bm25', engine: 'memory' })).toBe(true);
    expect(needsCorpus({ type: 'hybrid', retrievers: [{ type: 'bm25', engine: 'lucene', index: '/x' }, { type: 'dense' }] })).toBe(true);
    expect(needsCorpus({ type: 'multi-query', base: { type: 'bm25', engine: 'lucene', url: 'http://h' } })).toBe(false);
    // Only a local index has the annotations sidecar that exclude own reads without the corpus.
    expect(hasLocalLuceneIndex({ type: 'hybrid', retrievers: [{ type: 'bm25', engine: 'lucene', index: '/x' }, { type: 'dense' }] })).toBe(true);
    expect(hasLocalLuceneIndex({ type: 'bm25', engine: 'lucene', url: 'http://h' })).toBe(false);
    expect(hasLocalLuceneIndex({ type: 'bm25' })).toBe(false);
  });
});

/** A `segments_N` header as Lucene writes it: codec header, then the version vInts. */
function segmentsHeader(major: number, minor: number, created: number): Buffer {
  return Buffer.concat([
    Buffer.from([0x3f, 0xd7, 0x6c, 0x17, 8]),
    Buffer.from('segments'),
    Buffer.from([0, 0, 0, 10]),
    Buffer.alloc(16, 7),
    Buffer.from([1, 0x31, major, minor, 0, created]),
    Buffer.alloc(16),
  ]);
}

describe('inspectIndex', () => {
  it('reads the Lucene version of the commit point', () => {
    expect(readSegmentsVersion(segmentsHeader(10, 5, 10))).toEqual({ version: '10.5.0', createdMajor: 10 });
  });

  it('refuses a missing folder, a folder without a commit point, and an index of another Lucene version', () => {
    expect(() => inspectIndex(join(tmp, 'nope'))).toThrow(`retriever.index ${join(tmp, 'nope')}: no such folder`);
    const partial = join(tmp, 'partial');
    mkdirSync(partial);
    writeFileSync(join(partial, '_0.fdt'), 'x');
    expect(() => inspectIndex(partial)).toThrow(/not a Lucene index \(no segments_N commit point; segment files without a commit: an interrupted build\)/);
    const old = join(tmp, 'old');
    mkdirSync(old);
    writeFileSync(join(old, 'segments_3'), segmentsHeader(8, 11, 8));
    expect(() => inspectIndex(old)).toThrow(`retriever.index ${old}: written by Lucene 8.11.0 (created with Lucene 8); the engine (Anserini 2.3) reads Lucene 9–10 indexes`);
    const foreign = join(tmp, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'segments_1'), 'not lucene at all, just some text here ok');
    expect(() => inspectIndex(foreign)).toThrow(/segments_1: not a readable Lucene commit point \(no Lucene codec header\)/);
  });

  it('refuses an index whose field infos hold no `raw` field (built without its documents), naming the folder and files', () => {
    const dir = join(tmp, 'no-raw');
    mkdirSync(dir);
    writeFileSync(join(dir, 'segments_1'), segmentsHeader(10, 5, 10));
    // Field names as Lucene writes them: a length byte, then the name.
    writeFileSync(join(dir, '_0.fnm'), Buffer.concat([Buffer.from([2]), Buffer.from('id'), Buffer.from([8]), Buffer.from('contents')]));
    expect(() => inspectIndex(dir)).toThrow(`retriever.index ${dir}: the index stores no documents (no \`raw\` field in _0.fnm), so its hits would come back without passage text`);
    // One segment that stores them is enough (a field is recorded by the segments that have it).
    writeFileSync(join(dir, '_1.fnm'), Buffer.concat([Buffer.from([3]), Buffer.from('raw')]));
    expect(inspectIndex(dir).segmentsFile).toBe('segments_1');
  });

  it('refuses a hit that comes back without its document (a server over such an index), naming the URL', async () => {
    const server = createServer((req, res) => {
      const body = req.url!.includes('/doc/') ? { docid: '7', doc: null } : { candidates: [{ docid: '7', score: 1.5, doc: null }] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const retriever = new LuceneRetriever({ url });
      const message = /^retriever.url http:\/\/127.0.0.1:\d+\/: a hit came back without its document \(the index stores no `raw` field\), so passages would be empty$/;
      await expect(retriever.search('lighthouse', 1)).rejects.toThrow(message);
      await expect(retriever.passage('7')).rejects.toThrow(message);
    } finally {
      server.close();
    }
  });

  it('takes the newest commit point and reads the annotations sidecar', () => {
    const dir = join(tmp, 'ok');
    mkdirSync(dir);
    writeFileSync(join(dir, 'segments_2'), segmentsHeader(9, 9, 9));
    writeFileSync(join(dir, 'segments_a'), segmentsHeader(10, 5, 10));
    writeFileSync(join(dir, 'ambiqa-annotations.jsonl'), `${JSON.stringify({ q: 'asqa:1', ids: ['p1', 'p2'] })}\n`);
    const info = inspectIndex(dir);
    expect(info.segmentsFile).toBe('segments_a');
    expect(info.luceneVersion).toBe('10.5.0');
    expect(readAnnotations(dir)).toEqual(new Map([['asqa:1', new Set(['p1', 'p2'])]]));
  });
});

describe('readUtf8File / decodeUtf8', () => {
  it('says "too large" (not "not UTF-8") when valid UTF-8 cannot be decoded into one string', () => {
    // A view whose decode throws as V8 does past its string limit, over bytes that are valid UTF-8.
    const bytes = new Uint8Array(Buffer.from('{"id": 1}\n'));
    const original = TextDecoder.prototype.decode;
    TextDecoder.prototype.decode = () => {
      throw new RangeError('Invalid string length');
    };
    try {
      expect(() => decodeUtf8(bytes, 'corpus file big.jsonl')).toThrow('corpus file big.jsonl: 10 bytes cannot be decoded into one text (Invalid string length)');
    } finally {
      TextDecoder.prototype.decode = original;
    }
  });
});

describe('the Lucene runtime', () => {
  const java17 = '/usr/lib/jvm/java-17-openjdk-amd64/bin/java';
  it.skipIf(!existsSync(java17))('refuses a Java older than 21, naming it and its version', () => {
    const saved = { java: process.env.AMBIQA_JAVA, jar: process.env.AMBIQA_ANSERINI_JAR };
    const jar = file('anserini.jar', 'not checked before Java');
    process.env.AMBIQA_JAVA = java17;
    process.env.AMBIQA_ANSERINI_JAR = jar;
    try {
      expect(() => luceneRuntime()).toThrow(`the Lucene engine needs Java >= 21; found AMBIQA_JAVA ${java17}: Java 17`);
      process.env.AMBIQA_ANSERINI_JAR = join(tmp, 'missing.jar');
      expect(() => luceneRuntime()).toThrow(`the Lucene engine is not set up: ${join(tmp, 'missing.jar')} is missing`);
    } finally {
      for (const [key, value] of [['AMBIQA_JAVA', saved.java], ['AMBIQA_ANSERINI_JAR', saved.jar]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});

describe('the indexer heap (AMBIQA_LUCENE_INDEX_HEAP)', () => {
  it('reads g and m sizes, defaults to 3g, and refuses what is not a size, naming the variable', () => {
    expect(indexerHeap(undefined)).toEqual({ spec: '3g', mb: 3072 });
    expect(indexerHeap('6g')).toEqual({ spec: '6g', mb: 6144 });
    expect(indexerHeap('1536m')).toEqual({ spec: '1536m', mb: 1536 });
    expect(() => indexerHeap('lots')).toThrow('AMBIQA_LUCENE_INDEX_HEAP=lots: give a heap size such as 3g or 4096m');
    expect(() => indexerHeap('100m')).toThrow('AMBIQA_LUCENE_INDEX_HEAP=100m: at least 256m');
  });
});
