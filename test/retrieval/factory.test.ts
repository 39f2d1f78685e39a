import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Bm25Retriever } from '../../src/retrieval/bm25';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { createReranker, createRetriever, parseRerankerConfig, parseRetrieverConfig, retrieverConfigSchema } from '../../src/retrieval/factory';
import { HybridRetriever } from '../../src/retrieval/hybrid';
import type { Embedder } from '../../src/retrieval/types';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-factory-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A bag-of-letters embedder: enough to exercise wiring without a model. */
const letters: Embedder = {
  name: 'letters',
  dimension: 26,
  async embed(texts) {
    return texts.map((t) => {
      const v = new Float32Array(26);
      for (const ch of t.toLowerCase()) if (ch >= 'a' && ch <= 'z') v[ch.charCodeAt(0) - 97]++;
      const n = Math.hypot(...v) || 1;
      return v.map((x) => x / n);
    });
  },
};

const corpus = corpusFromPassages([
  { id: 'a', title: 'Eiffel Tower', text: 'A wrought-iron lattice tower in Paris.' },
  { id: 'b', title: 'Big Ben', text: 'A clock tower in London.' },
  { id: 'c', title: 'Zebra', text: 'Zebras are African equines.' },
]);

describe('retriever config', () => {
  it('fills defaults and accepts a bare string', () => {
    expect(parseRetrieverConfig('bm25')).toEqual({ type: 'bm25', k1: 0.9, b: 0.4, stopWords: true, stemmer: 'porter' });
    expect(parseRetrieverConfig({ type: 'dense' })).toMatchObject({ type: 'dense', index: 'auto', approximateAbove: 200_000 });
    const hybrid = parseRetrieverConfig('hybrid');
    expect(hybrid).toMatchObject({ type: 'hybrid', rrfK: 60, depth: 100 });
    expect(hybrid.type === 'hybrid' && hybrid.retrievers.map((r) => r.type)).toEqual(['bm25', 'dense']);
    expect(retrieverConfigSchema.safeParse({ type: 'multi-query', base: 'bm25' }).success).toBe(true);
  });
  it('refuses a field no retriever kind has, at any depth, naming the allowed ones', () => {
    expect(() => parseRetrieverConfig({ type: 'bm25', exlcude: 'own' })).toThrow(
      "invalid retriever: unknown field 'exlcude' (allowed: type, k1, b, stopWords, stemmer, engine, index, url, indexName, timeoutMs)",
    );
    expect(() => parseRetrieverConfig({ type: 'dense', nlsit: 4 })).toThrow(/unknown field 'nlsit'/);
    expect(() => parseRetrieverConfig({ type: 'hybrid', retrievers: [{ type: 'bm25' }, { type: 'dense', k: 3 }] })).toThrow(/^invalid retriever\.retrievers\[1\]: unknown field 'k'/);
    expect(() => parseRetrieverConfig({ type: 'multi-query', base: { type: 'bm25', stemer: 's' } })).toThrow(/^invalid retriever\.base: unknown field 'stemer'/);
    expect(() => parseRetrieverConfig({ type: 'colbertv2', url: 'http://h/s', kk: 3 })).toThrow(/unknown field 'kk' \(allowed: type, url, post, maxK, timeout, cache\)/);
    // A hybrid's parts are engines: the section's corpus/exclude are not theirs.
    expect(() => parseRetrieverConfig({ type: 'hybrid', retrievers: [{ type: 'bm25', exclude: 'own' }] })).toThrow(/unknown field 'exclude'/);
  });
  it('names the offending field', () => {
    expect(() => parseRetrieverConfig({ type: 'bm25', b: 2 })).toThrow(/invalid retriever\.b/);
    expect(() => parseRetrieverConfig({ type: 'hybrid', retrievers: [{ type: 'bm25', k1: -1 }] }, 'experiment.retriever')).toThrow(
      /invalid experiment\.retriever/,
    );
    expect(() => parseRetrieverConfig('splade')).toThrow(/invalid retriever/);
    expect(() => parseRerankerConfig({ type: 'cross-encoder' })).toThrow(/invalid reranker\.dir/);
  });
});

describe('createRetriever / createReranker', () => {
  it('builds each kind over the corpus', async () => {
    const options = { embedder: letters, cacheDir: tmp };
    const bm25 = await createRetriever({ type: 'bm25', k1: 1.2, b: 0.75, stopWords: true, stemmer: 'none' }, corpus, options);
    expect(bm25).toBeInstanceOf(Bm25Retriever);
    expect((await bm25.search('eiffel tower', 1))[0].passage.id).toBe('a');
    const dense = await createRetriever('dense', corpus, options);
    expect(dense.name).toBe('dense:letters');
    expect((await dense.search('Zebras are African equines', 1))[0].passage.id).toBe('c');
    const hybrid = await createRetriever('hybrid', corpus, options);
    expect(hybrid).toBeInstanceOf(HybridRetriever);
    expect(hybrid.name).toBe('hybrid(bm25(k1=0.9,b=0.4,stem=porter)+dense:letters)');
    expect((await hybrid.search('zebra', 3)).map((h) => h.passage.id)[0]).toBe('c');
    const mq = await createRetriever({ type: 'multi-query', base: 'bm25', perQueryK: 2 }, corpus, options);
    expect(mq.name).toBe('multi-query(bm25(k1=0.9,b=0.4,stem=porter))');
  });

  it('makes the none and embedding rerankers', async () => {
    const hits = await (await createRetriever('bm25', corpus, { cacheDir: tmp })).search('tower', 3);
    const none = createReranker('none');
    expect((await none.rerank('q', hits, 1)).map((h) => h.passage.id)).toEqual([hits[0].passage.id]);
    const emb = createReranker('embedding', { embedder: letters });
    expect(emb.name).toBe('embedding:letters');
    expect(createReranker(undefined, { embedder: letters }).name).toBe('embedding:letters');
    expect(await emb.rerank('q', hits, 5)).toHaveLength(hits.length);
    await expect(emb.rerank('q', hits, 0)).rejects.toThrow(/k must be a positive integer/);
  });
});
