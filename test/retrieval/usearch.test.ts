import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AmbiqaError } from '../../src/errors';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { withExclusion } from '../../src/retrieval/exclude';
import { createRetriever } from '../../src/retrieval/factory';
import { retrieverParams } from '../../src/retrieval/remote/inspect';
import { formatPassage, type Embedder, type Passage } from '../../src/retrieval/types';
import { buildUsearchIndex, floatToHalf, halfToFloat, importUsearchIndex, UsearchRetriever, type PassageSource } from '../../src/retrieval/usearch';
import { ExactIndex } from '../../src/retrieval/vector-index';

/**
 * A real USearch index at small scale (a few hundred vectors) without the MiniLM model: a hashed
 * bag-of-words embedder stands in for it, so vectors are deterministic and queries find the
 * passages that share their words. The HNSW answers are compared with exact search over the
 * same vectors.
 */
const D = 64;
class HashEmbedder implements Embedder {
  readonly name = 'hash64';
  readonly dimension = D;
  calls = 0;
  failAfter = Infinity;
  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.calls >= this.failAfter) throw new Error('embedder stopped (simulated kill)');
    this.calls++;
    return texts.map((t) => {
      const v = new Float32Array(D);
      for (const w of t.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
        let h = 2166136261;
        for (const ch of w) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
        v[(h >>> 0) % D]! += 1;
        v[(h >>> 8) % D]! += 0.5;
      }
      const norm = Math.hypot(...v) || 1;
      return v.map((x) => x / norm);
    });
  }
}

const words = ['river', 'castle', 'violin', 'glacier', 'harbor', 'comet', 'orchard', 'canyon', 'lantern', 'falcon', 'meadow', 'tunnel', 'desert', 'temple', 'island'];
const passages: Passage[] = Array.from({ length: 300 }, (_, i) => ({
  id: String(7_000_000 + i),
  title: `Place ${i}`,
  text: `${words[i % 15]} ${words[(i * 7) % 15]} ${words[(i * 11 + 3) % 15]} number${i} near the ${words[(i * 13 + 5) % 15]}`,
}));
const corpus = corpusFromPassages(passages);
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-usearch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function vectorsOf(embedder: Embedder): Promise<Float32Array> {
  const all = await embedder.embed(passages.map(formatPassage));
  const flat = new Float32Array(passages.length * D);
  all.forEach((v, i) => flat.set(v, i * D));
  return flat;
}

/** np.save of a (rows, D) matrix, little-endian float32 ('<f4') or float16 ('<f2'). */
function writeNpy(path: string, flat: Float32Array, dtype: '<f4' | '<f2'): void {
  let header = `{'descr': '${dtype}', 'fortran_order': False, 'shape': (${flat.length / D}, ${D}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  let body: Buffer;
  if (dtype === '<f4') body = Buffer.from(flat.buffer, flat.byteOffset, flat.byteLength);
  else {
    body = Buffer.alloc(flat.length * 2);
    flat.forEach((x, i) => body.writeUInt16LE(floatToHalf(x), i * 2));
  }
  writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

/**
 * Recall@k of the HNSW index against exact search over the same vectors, over probe queries. The
 * hashed embedder gives many passages equal scores, so a hit counts when its exact score reaches
 * the exact k-th score (less the quantization's error), whichever of the tied passages it is.
 */
async function recallAgainstExact(r: UsearchRetriever, embedder: Embedder, flat: Float32Array, k: number, tolerance = 0.01): Promise<number> {
  const exact = new ExactIndex(flat, D);
  const row = new Map(passages.map((p, i) => [p.id, i]));
  let found = 0;
  const queries = ['river castle', 'comet near the orchard', 'falcon glacier', 'desert temple island', 'violin harbor canyon', 'lantern meadow', 'tunnel number17'];
  for (const q of queries) {
    const [v] = await embedder.embed([q]);
    const kth = exact.search(v!, k).at(-1)!.score;
    for (const h of r.searchVector(v!, k)) {
      const i = row.get(h.passage.id)!;
      let score = 0;
      for (let j = 0; j < D; j++) score += v![j]! * flat[i * D + j]!;
      if (score >= kth - tolerance) found++;
    }
  }
  return found / (queries.length * k);
}

describe('usearch engine', () => {
  it('builds from a streamed source: a resumed build reads from the row it stopped at, and the index is the in-memory build\'s', async () => {
    const embedder = new HashEmbedder();
    const starts: number[] = [];
    let idCalls = 0;
    // A file-like source: `from(start)` streams rows start…n−1, as `ambiqa index --engine usearch` does.
    const source: PassageSource = {
      count: passages.length,
      from: async function* (start) {
        starts.push(start);
        for (let i = start; i < passages.length; i++) yield passages[i]!;
      },
      ids: () => {
        idCalls++;
        return passages.map((p) => p.id);
      },
    };
    const out = join(dir, 'streamed');
    embedder.failAfter = 2;
    await expect(buildUsearchIndex(out, source, embedder, { chunk: 50, corpusHash: 'file:300' })).rejects.toThrow(/simulated kill/);
    embedder.failAfter = Infinity;
    embedder.calls = 0;
    const meta = await buildUsearchIndex(out, source, embedder, { chunk: 50, corpusHash: 'file:300' });
    expect(starts).toEqual([0, 100]);
    expect(embedder.calls).toBe(4);
    expect(idCalls).toBe(1);
    expect(meta.count).toBe(300);
    const r = await UsearchRetriever.open(out, { embedder, passage: (id) => corpus.byId(id) });
    const hits = await r.search(formatPassage(passages[7]!), 1);
    expect(hits[0]!.passage).toBe(passages[7]);
    // A source that ends before the rows it counted (the file changed) is refused, not indexed short.
    const short: PassageSource = { ...source, count: 320 };
    await expect(buildUsearchIndex(join(dir, 'short'), short, new HashEmbedder(), { chunk: 50 })).rejects.toThrow('usearch build: the passage source ended after 300 of the 320 rows it counted');
  });

  it('builds from the embedder in chunks, resumes an interrupted build, and answers like exact search', async () => {
    const embedder = new HashEmbedder();
    const out = join(dir, 'built');
    const progress: number[] = [];
    embedder.failAfter = 3; // killed after 3 chunks of 40
    await expect(buildUsearchIndex(out, passages, embedder, { chunk: 40, corpusHash: corpus.hash, onProgress: (d) => progress.push(d) })).rejects.toThrow(/simulated kill/);
    expect(existsSync(join(out, 'meta.json'))).toBe(false);
    // An unfinished folder never opens as an index.
    await expect(UsearchRetriever.open(out, { embedder, passage: (id) => corpus.byId(id) })).rejects.toThrow(/^usearch index .*built: an unfinished build \(no meta\.json\)$/);

    embedder.failAfter = Infinity;
    embedder.calls = 0;
    const meta = await buildUsearchIndex(out, passages, embedder, { chunk: 40, corpusHash: corpus.hash, onProgress: (d) => progress.push(d) });
    // 300 rows in chunks of 40: 8 chunks, 3 done before the kill, 5 after.
    expect(embedder.calls).toBe(5);
    expect(progress.filter((p, i) => i < 3)).toEqual([40, 80, 120]);
    expect(meta).toMatchObject({ count: 300, dimension: D, quantization: 'f16', metric: 'cos', source: 'embedder:hash64' });
    expect(existsSync(join(out, 'build'))).toBe(false);
    expect(readFileSync(join(out, 'ids.txt'), 'utf8').split('\n')[5]).toBe('7000005');

    const r = await UsearchRetriever.open(out, { embedder, passage: (id) => corpus.byId(id) });
    const hits = await r.search(formatPassage(passages[42]!), 3);
    expect(hits[0]!.passage).toBe(passages[42]);
    expect(hits.map((h) => h.rank)).toEqual([0, 1, 2]);
    expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
    expect(await recallAgainstExact(r, embedder, await vectorsOf(embedder), 10)).toBeGreaterThanOrEqual(0.9);
    expect(r.describe()).toMatchObject({ engine: 'usearch', quantization: 'f16', count: '300', buildId: meta.buildId });
  });

  it('imports .npy float32 and float16 and raw f16 with an id list; i8 too', async () => {
    const embedder = new HashEmbedder();
    const flat = await vectorsOf(embedder);
    const ids = join(dir, 'ids.txt');
    writeFileSync(ids, passages.map((p) => p.id).join('\n') + '\n');
    writeNpy(join(dir, 'v32.npy'), flat, '<f4');
    writeNpy(join(dir, 'v16.npy'), flat, '<f2');
    const raw = Buffer.alloc(flat.length * 2);
    flat.forEach((x, i) => raw.writeUInt16LE(floatToHalf(x), i * 2));
    writeFileSync(join(dir, 'v.f16'), raw);

    const cases = [
      { name: 'npy32', input: { vectors: join(dir, 'v32.npy'), ids }, quantization: 'f32' as const },
      { name: 'npy16', input: { vectors: join(dir, 'v16.npy'), ids }, quantization: 'f16' as const },
      { name: 'raw16', input: { vectors: join(dir, 'v.f16'), ids, dimension: D }, quantization: 'i8' as const },
    ];
    for (const c of cases) {
      const meta = await importUsearchIndex(join(dir, c.name), c.input, { quantization: c.quantization });
      expect(meta).toMatchObject({ count: 300, dimension: D, quantization: c.quantization });
      const r = await UsearchRetriever.open(join(dir, c.name), { embedder, passage: (id) => corpus.byId(id) });
      expect((await r.search(formatPassage(passages[123]!), 1))[0]!.passage.id, c.name).toBe('7000123');
      expect(await recallAgainstExact(r, embedder, flat, 10, c.quantization === 'i8' ? 0.03 : 0.01), c.name).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('f16 conversion round-trips within half precision', () => {
    for (const x of [0, 1, -2.5, 0.1, 1e-5, 65504, -0.333]) expect(halfToFloat(floatToHalf(x))).toBeCloseTo(x, Math.abs(x) > 100 ? -1 : 3);
  });

  it('bad input: one line naming the file', async () => {
    const embedder = new HashEmbedder();
    const ids = join(dir, 'ids-short.txt');
    writeFileSync(ids, passages.slice(0, 10).map((p) => p.id).join('\n'));
    writeNpy(join(dir, 'v.npy'), await vectorsOf(embedder), '<f4');
    await expect(importUsearchIndex(join(dir, 'bad1'), { vectors: join(dir, 'v.npy'), ids })).rejects.toThrow(`ids ${ids}: 10 ids for the 300 rows of ${join(dir, 'v.npy')}`);
    writeFileSync(join(dir, 'not.npy'), 'hello world, not numpy');
    await expect(importUsearchIndex(join(dir, 'bad2'), { vectors: join(dir, 'not.npy'), ids })).rejects.toThrow(/not\.npy: not a \.npy file/);
    const truncated = readFileSync(join(dir, 'v.npy')).subarray(0, 5000);
    writeFileSync(join(dir, 'cut.npy'), truncated);
    await expect(importUsearchIndex(join(dir, 'bad3'), { vectors: join(dir, 'cut.npy'), ids })).rejects.toThrow(/cut\.npy: 5000 bytes, the header's shape \(300, 64\) needs \d+ \(truncated\)/);
    await expect(importUsearchIndex(join(dir, 'bad4'), { vectors: join(dir, 'v.npy.f16'), ids })).rejects.toThrow(/raw f16 vectors need their dimension/);
    // An index whose vectors another embedder made.
    const other: Embedder = { name: 'other', dimension: 32, embed: async () => [] };
    await expect(UsearchRetriever.open(join(dir, 'built'), { embedder: other, passage: () => undefined })).rejects.toThrow(/its vectors have 64 dimensions, the query embedder other 32/);
    // A corpus that does not hold the index's ids.
    const stranger = await UsearchRetriever.open(join(dir, 'built'), { embedder, passage: () => undefined });
    await expect(stranger.search('river', 2)).rejects.toThrow(/row \d+ is passage "\d+", which the corpus does not hold/);
    // A folder whose index file was cut.
    rmSync(join(dir, 'cutidx'), { recursive: true, force: true });
    await importUsearchIndex(join(dir, 'cutidx'), { vectors: join(dir, 'v32.npy'), ids: join(dir, 'ids.txt') });
    writeFileSync(join(dir, 'cutidx', 'index.usearch'), readFileSync(join(dir, 'cutidx', 'index.usearch')).subarray(0, 100));
    const error = await UsearchRetriever.open(join(dir, 'cutidx'), { embedder, passage: (id) => corpus.byId(id) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AmbiqaError);
    expect((error as Error).message).toMatch(/cutidx\/index\.usearch: /);
  });

  it('through the factory: built into the cache, hybrid with BM25, exclude: own by id', async () => {
    const embedder = new HashEmbedder();
    const cacheDir = join(dir, 'cache');
    const r = await createRetriever({ type: 'dense', engine: 'usearch', quantization: 'i8' }, corpus, { embedder, cacheDir });
    expect(r.name).toBe('dense:hash64+usearch-i8');
    expect((await r.search(formatPassage(passages[77]!), 1))[0]!.passage.id).toBe('7000077');
    // Opened again: no embedding but the query's.
    embedder.calls = 0;
    const again = await createRetriever({ type: 'dense', engine: 'usearch', quantization: 'i8' }, corpus, { embedder, cacheDir });
    await again.search(formatPassage(passages[77]!), 1);
    expect(embedder.calls).toBe(1);

    const hybrid = await createRetriever({ type: 'hybrid', retrievers: ['bm25', { type: 'dense', engine: 'usearch', path: join(dir, 'built') }] }, corpus, { embedder, cache: false });
    expect(hybrid.name).toMatch(/^hybrid\(bm25.*\+dense:hash64\+usearch-f16\)$/);
    expect((await hybrid.search(formatPassage(passages[200]!), 5))[0]!.passage.id).toBe('7000200');
    expect(retrieverParams(hybrid)).toMatchObject({ 'retriever.engine': 'usearch', 'retriever.path': join(dir, 'built') });

    const annotated = corpusFromPassages(passages.map((p, i) => (i === 77 ? { ...p, annotatedFor: ['asqa:q'] } : p)));
    const own = withExclusion(again, annotated, 'own').forQuestion!('asqa:q');
    const hits = await own.search(formatPassage(passages[77]!), 5);
    expect(hits).toHaveLength(5);
    expect(hits.map((h) => h.passage.id)).not.toContain('7000077');

    // vectors + ids in the config: imported on first use.
    const imported = await createRetriever(
      { type: 'dense', engine: 'usearch', path: join(dir, 'from-config'), vectors: join(dir, 'v32.npy'), ids: join(dir, 'ids.txt') },
      corpus,
      { embedder },
    );
    expect((await imported.search(formatPassage(passages[5]!), 1))[0]!.passage.id).toBe('7000005');
    await expect(createRetriever({ type: 'dense', engine: 'usearch', vectors: join(dir, 'v32.npy') }, corpus, { embedder })).rejects.toThrow(/^retriever\.ids: needed with retriever\.vectors$/);
  });
});
