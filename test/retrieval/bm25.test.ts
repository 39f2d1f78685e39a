import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Bm25Index, Bm25Retriever } from '../../src/retrieval/bm25';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { makeTokenizer } from '../../src/retrieval/tokenize';
import type { Passage } from '../../src/retrieval/types';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-bm25-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('BM25 tokeniser', () => {
  it('lower-cases, folds accents, drops stop words and punctuation', () => {
    const tokenize = makeTokenizer({ stemmer: 'none' });
    expect(tokenize('Who is the MAYOR of Curaçao, today?')).toEqual(['mayor', 'curacao', 'today']);
  });
  it('stems when asked', () => {
    expect(makeTokenizer({ stemmer: 's' })('stories cats glass')).toEqual(['story', 'cat', 'glass']);
    expect(makeTokenizer({ stemmer: 'porter' })('running connections')).toEqual(['run', 'connect']);
  });
});

describe('BM25 scores', () => {
  // Tokens after stop words: d0 [cat sat mat] (3), d1 [dog sat] (2), d2 [cat cat dog] (3).
  // N = 3, avgdl = 8/3; k1 = 1.2, b = 0.75.
  const docs = ['The cat sat on the mat', 'The dog sat', 'cat cat dog'];
  const index = Bm25Index.build(docs, { k1: 1.2, b: 0.75, stopWords: true, stemmer: 'none' });
  const idf = (df: number) => Math.log(1 + (3 - df + 0.5) / (df + 0.5));
  const norm = (dl: number) => 1.2 * (1 - 0.75 + (0.75 * dl) / (8 / 3));
  const term = (tf: number, dl: number, df: number) => (idf(df) * tf * 2.2) / (tf + norm(dl));

  it('matches the hand-computed values for a one-term query', () => {
    // idf(cat) = ln(1 + 1.5/2.5) = ln 1.6 = 0.4700; norm(3) = 1.3125
    // d2: 0.4700 · 2·2.2/(2+1.3125) = 0.6243; d0: 0.4700 · 2.2/(1+1.3125) = 0.4471
    const hits = index.search('cat', 10);
    expect(hits.map((h) => h.id)).toEqual([2, 0]);
    expect(hits[0].score).toBeCloseTo(0.6243, 4);
    expect(hits[1].score).toBeCloseTo(0.4471, 4);
    expect(hits[0].score).toBeCloseTo(term(2, 3, 2), 5);
  });

  it('sums over query terms and counts a repeated query term twice', () => {
    const hits = index.search('dog sat', 10);
    const expected = [
      { id: 1, score: term(1, 2, 2) + term(1, 2, 2) },
      { id: 0, score: term(1, 3, 2) },
      { id: 2, score: term(1, 3, 2) },
    ];
    expect(hits.map((h) => h.id)).toEqual(expected.map((e) => e.id));
    hits.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i].score, 5));
    expect(index.search('dog dog', 1)[0].score).toBeCloseTo(2 * term(1, 2, 2), 5);
  });

  it('returns nothing for a query of unknown words or stop words only', () => {
    expect(index.search('zebra', 5)).toEqual([]);
    expect(index.search('the of and', 5)).toEqual([]);
  });

  it('caps the result at k, best first, ties by corpus order', () => {
    const tie = Bm25Index.build(['alpha beta', 'alpha beta', 'gamma'], { k1: 1.2, b: 0.75, stopWords: true, stemmer: 'none' });
    expect(tie.search('alpha', 1).map((h) => h.id)).toEqual([0]);
    expect(tie.search('alpha', 5).map((h) => h.id)).toEqual([0, 1]);
  });
});

const passages = (n: number, extra = ''): Passage[] =>
  Array.from({ length: n }, (_, i) => ({ id: `p${i}`, title: `Topic ${i}`, text: `passage number ${i} about subject ${i % 3} ${extra}` }));

describe('Bm25Retriever', () => {
  it('searches the title too and returns ranked passages', async () => {
    const corpus = corpusFromPassages([
      { id: 'a', title: 'Eiffel Tower', text: 'A wrought-iron lattice tower in Paris.' },
      { id: 'b', title: 'Big Ben', text: 'A clock tower in London.' },
    ]);
    const r = Bm25Retriever.create(corpus, {}, { cache: false });
    const hits = await r.search('eiffel', 5);
    expect(hits.map((h) => [h.passage.id, h.rank])).toEqual([['a', 0]]);
  });

  it('persists the index, loads it while the corpus is unchanged, and rebuilds when it changes', async () => {
    const dir = join(tmp, 'cache');
    const corpus = corpusFromPassages(passages(20));
    const first = Bm25Retriever.create(corpus, { k1: 1.1 }, { cacheDir: dir });
    expect(first.origin.fromCache).toBe(false);
    const second = Bm25Retriever.create(corpusFromPassages(passages(20)), { k1: 1.1 }, { cacheDir: dir });
    expect(second.origin.fromCache).toBe(true);
    expect(second.origin.path).toBe(first.origin.path);
    expect(await second.search('subject 2 passage', 5)).toEqual(await first.search('subject 2 passage', 5));

    const changed = Bm25Retriever.create(corpusFromPassages(passages(20, 'edited')), { k1: 1.1 }, { cacheDir: dir });
    expect(changed.origin.fromCache).toBe(false);
    expect(changed.origin.path).not.toBe(first.origin.path);
    // Different settings are a different index too.
    expect(Bm25Retriever.create(corpus, { k1: 1.5 }, { cacheDir: dir }).origin.fromCache).toBe(false);
    expect(readdirSync(dir)).toHaveLength(3);
  });

  it('rejects k <= 0 naming k', async () => {
    const r = Bm25Retriever.create(corpusFromPassages(passages(3)), {}, { cache: false });
    await expect(r.search('passage', 0)).rejects.toThrow(/k must be a positive integer, got 0/);
    await expect(r.search('passage', -3)).rejects.toThrow(/k must be a positive integer/);
    await expect(r.search('passage', 2.5)).rejects.toThrow(/k must be a positive integer/);
  });
});
