/**
 * Dense retrieval with the real MiniLM embedder that `ambiqa setup` installs (found through the
 * model manifest, as in production).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { DenseRetriever } from '../../src/retrieval/dense';
import { CachedEmbedder, MiniLmEmbedder } from '../../src/retrieval/embedder';
import { MultiQueryRetriever } from '../../src/retrieval/multi-query';
import { EmbeddingReranker } from '../../src/retrieval/rerank';
import { buildCorpus, defaultSources } from '../../src/retrieval/corpus-builder';
import { readAsqaCoverageItems } from '../../src/retrieval/coverage';
import type { Embedder, Passage } from '../../src/retrieval/types';
import { formatPassage } from '../../src/retrieval/types';
import { ExactIndex, IvfIndex, recallAt } from '../../src/retrieval/vector-index';
import { readModelManifest } from '../../src/config/models';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-dense-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let minilm: MiniLmEmbedder;
beforeAll(() => {
  minilm = new MiniLmEmbedder();
});

/** Counts the texts that reach the real embedder. */
class Counting implements Embedder {
  texts = 0;
  constructor(readonly inner: Embedder) {}
  get name() {
    return this.inner.name;
  }
  get dimension() {
    return this.inner.dimension;
  }
  get fingerprint() {
    return (this.inner as MiniLmEmbedder).fingerprint;
  }
  async embed(texts: string[]) {
    this.texts += texts.length;
    return this.inner.embed(texts);
  }
}

const passages: Passage[] = [
  { id: 'meal', title: 'Dining', text: 'Someone is having a meal at the table.' },
  { id: 'stocks', title: 'Markets', text: 'The stock market fell sharply on Tuesday after the announcement.' },
  { id: 'guitar', title: 'Music', text: 'A man is playing a guitar on stage.' },
  { id: 'rain', title: 'Weather', text: 'Heavy rain is expected across the north this weekend.' },
];

describe('MiniLmEmbedder', () => {
  it('gives unit vectors of the manifest model dimension, the same for a text alone or in a batch', async () => {
    expect(minilm.dimension).toBe(384);
    expect(minilm.name).toBe(readModelManifest().embedder.name);
    const [a, b] = await minilm.embed(['A man is eating food.', 'A much longer sentence that pads the batch with many more tokens than the first one.']);
    const [alone] = await minilm.embed(['A man is eating food.']);
    expect(a).toHaveLength(384);
    expect(a.reduce((s, x) => s + x * x, 0)).toBeCloseTo(1, 5);
    expect(b.reduce((s, x) => s + x * x, 0)).toBeCloseTo(1, 5);
    // One text per forward pass: a vector depends on its text only, not on its neighbours.
    expect(Array.from(a)).toEqual(Array.from(alone));
  });

  it('names the missing file when the model folder is incomplete', () => {
    const dir = join(tmp, 'broken-model');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeFileSync(join(dir, 'onnx', 'model.onnx'), '');
    writeFileSync(join(dir, 'config.json'), '{}');
    expect(() => new MiniLmEmbedder({ dir })).toThrow(`embedder file missing: ${join(dir, 'tokenizer.json')}`);
    expect(() => new MiniLmEmbedder({ dir: join(tmp, 'nowhere') })).toThrow(/embedder folder .*nowhere does not exist/);
    const noOnnx = join(tmp, 'no-onnx');
    mkdirSync(noOnnx, { recursive: true });
    expect(() => new MiniLmEmbedder({ dir: noOnnx })).toThrow(/embedder file missing: .*onnx\/model\.onnx/);
  });
});

describe('DenseRetriever', () => {
  it('ranks a paraphrase above unrelated sentences', async () => {
    const r = await DenseRetriever.create(corpusFromPassages(passages), minilm, { cache: false });
    const hits = await r.search('A man is eating food.', 4);
    expect(hits[0].passage.id).toBe('meal');
    expect(hits[0].score).toBeGreaterThan(hits[1].score + 0.1);
    expect((await r.search('Shares dropped on Wall Street', 1))[0].passage.id).toBe('stocks');
    expect(r.index.kind).toBe('exact');
    await expect(r.search('x', 0)).rejects.toThrow(/k must be a positive integer/);
  });

  it('stores vectors on disk, reloads them for the same corpus and re-embeds a changed one', async () => {
    const cacheDir = join(tmp, 'cache');
    const counting = new Counting(minilm);
    const first = await DenseRetriever.create(corpusFromPassages(passages), counting, { cacheDir });
    expect(first.origin.fromCache).toBe(false);
    expect(counting.texts).toBe(4);
    const again = await DenseRetriever.create(corpusFromPassages(passages), counting, { cacheDir });
    expect(again.origin.fromCache).toBe(true);
    expect(counting.texts).toBe(4); // nothing embedded
    expect(Array.from(again.vectors)).toEqual(Array.from(first.vectors));
    const edited = passages.map((p) => (p.id === 'rain' ? { ...p, text: 'Sunny skies all week.' } : p));
    const changed = await DenseRetriever.create(corpusFromPassages(edited), counting, { cacheDir });
    expect(changed.origin.fromCache).toBe(false);
    expect(counting.texts).toBe(8);
  });

  it('can use the approximate index and then finds the same nearest passage', async () => {
    const r = await DenseRetriever.create(corpusFromPassages(passages), minilm, { cacheDir: join(tmp, 'cache'), index: 'ivf', ivf: { nlist: 2, nprobe: 2 } });
    expect(r.index.kind).toBe('ivf');
    expect(r.name).toContain('ivf');
    expect((await r.search('A man is eating food.', 1))[0].passage.id).toBe('meal');
  });
});

describe('EmbeddingReranker and multi-query retrieval', () => {
  it('reranks candidates by similarity to the query', async () => {
    const reranker = new EmbeddingReranker(new CachedEmbedder(minilm));
    const candidates = passages.map((passage, rank) => ({ passage, score: 0, rank }));
    const out = await reranker.rerank('Who played the guitar at the concert?', candidates, 2);
    expect(out[0].passage.id).toBe('guitar');
    expect(out).toHaveLength(2);
    expect(out.map((o) => o.rank)).toEqual([0, 1]);
  });

  it('keeps the passages closest on average to all interpretations', async () => {
    const r = await DenseRetriever.create(corpusFromPassages(passages), minilm, { cache: false });
    const mq = new MultiQueryRetriever(r, minilm, { perQueryK: 2, vectorOf: (p) => r.vectorOf(p) });
    const out = await mq.searchMany(['a person eating dinner', 'a musician performing live'], 2);
    expect(new Set(out.map((o) => o.passage.id))).toEqual(new Set(['meal', 'guitar']));
    // The score is the mean similarity to both queries.
    const [q1, q2] = await minilm.embed(['a person eating dinner', 'a musician performing live']);
    const v = r.vectorOf(out[0].passage)!;
    const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);
    expect(out[0].score).toBeCloseTo((dot(q1, v) + dot(q2, v)) / 2, 4);
    await expect(mq.searchMany(['  '], 2)).rejects.toThrow(/no queries/);
  });
});

describe('IvfIndex on real MiniLM vectors', () => {
  it('gains recall as it probes more lists, reaching exact results when it probes all', async () => {
    if (!hasSharedData('asqa', 'ASQA_dev.json')) return;
    const asqa = defaultSources().filter((s) => s.kind === 'asqa');
    // Every 20th passage: 160 passages from many topics (embedding is the slow part).
    const texts = buildCorpus(asqa)
      .passages.filter((_, i) => i % 20 === 0)
      .map(formatPassage);
    const d = minilm.dimension;
    const vectors = new Float32Array(texts.length * d);
    (await minilm.embed(texts)).forEach((v, i) => vectors.set(v, i * d));
    const queries = await minilm.embed(
      readAsqaCoverageItems(sharedDataPath('asqa', 'ASQA_dev.json'))
        .filter((_, i) => i % 40 === 0)
        .map((q) => q.question),
    );
    const exact = new ExactIndex(vectors, d);
    const ivf = IvfIndex.build(vectors, d, {});
    expect(ivf.nlist).toBe(13); // ≈ √n
    const recall = (nprobe: number) => {
      ivf.nprobe = nprobe;
      return recallAt(ivf, exact, queries, 10);
    };
    const [r2, r6, rAll] = [recall(2), recall(6), recall(ivf.nlist)];
    // At this toy size the lists are coarse; the benchmark measures the default settings on the
    // whole pooled corpus (recall@10 0.935 scanning 16 of 92 lists).
    console.log(`IVF recall@10, ${texts.length} MiniLM passage vectors, ${queries.length} questions: nprobe 2 ${r2.toFixed(3)}, 6 ${r6.toFixed(3)}, all ${rAll}`);
    expect(r2).toBeLessThanOrEqual(r6);
    expect(r6).toBeGreaterThanOrEqual(0.8);
    expect(rAll).toBe(1);
  });
});
