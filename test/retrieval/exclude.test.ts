import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Bm25Retriever } from '../../src/retrieval/bm25';
import { contentHash, corpusFromPassages, loadCorpus, saveCorpus, type Corpus } from '../../src/retrieval/corpus';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { DenseRetriever } from '../../src/retrieval/dense';
import { ExcludeOwnRetriever, withExclusion } from '../../src/retrieval/exclude';
import { HybridRetriever } from '../../src/retrieval/hybrid';
import { MultiQueryRetriever } from '../../src/retrieval/multi-query';
import { questionKey, type Embedder, type Passage, type Retriever } from '../../src/retrieval/types';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-exclude-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, content: unknown) => {
  const path = join(tmp, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};

/** A bag-of-words embedder (hashed tokens, L2-normalised): deterministic, no model. */
class HashEmbedder implements Embedder {
  readonly name = 'hash-bow';
  readonly dimension = 64;
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => {
      const v = new Float32Array(this.dimension);
      for (const w of t.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
        let h = 0;
        for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
        v[h % this.dimension] += 1;
      }
      const n = Math.hypot(...v) || 1;
      return v.map((x) => x / n);
    });
  }
}

// Two ASQA questions about the same subject; the second one's context also appears as the first
// one's knowledge (one passage, owned by both).
const shared = 'The Eiffel Tower was completed in 1889 for the World Fair in Paris.';
const asqa = {
  dev: {
    q1: {
      ambiguous_question: 'When was the Eiffel Tower built?',
      wikipages: [{ title: 'Eiffel Tower' }],
      qa_pairs: [{ question: 'begun', short_answers: ['1887'], context: 'Construction of the Eiffel Tower began in 1887 in Paris.', wikipage: 'Eiffel Tower' }],
      annotations: [{ long_answer: '', knowledge: [{ content: shared, wikipage: 'Eiffel Tower' }] }],
    },
    q2: {
      ambiguous_question: 'When was the Eiffel Tower finished?',
      wikipages: [{ title: 'Eiffel Tower' }],
      qa_pairs: [{ question: 'finished', short_answers: ['1889'], context: shared, wikipage: 'Eiffel Tower' }],
      annotations: [],
    },
  },
};
const hotpot = [
  { qas_id: 'h1', question: 'Where?', answer: 'Paris', paragraphs: [{ title: 'Paris', context: 'Paris is the capital of France and has the Eiffel Tower.', is_supp: true }], rationale: '' },
];
const fever = [{ id: 7, claim: 'c', label: 'SUPPORTS', evidence: [[[0, 0, 'Eiffel_Tower', 2]]], pars: ['The Eiffel Tower is made of wrought iron.'] }];
const noise = Array.from({ length: 12 }, (_, i) => ({ id: `n${i}`, title: `Noise ${i}`, text: `The Eiffel Tower appears in travel guide number ${i} about Paris towers.` }));

function build(): Corpus {
  const built = buildCorpus([
    { kind: 'asqa', path: file('asqa.json', asqa) },
    { kind: 'hotpotqa-adversarial', path: file('sim_dev.json', hotpot) },
    { kind: 'fever', path: file('fever.jsonl', fever.map((r) => JSON.stringify(r)).join('\n')) },
    { kind: 'jsonl', path: file('noise.jsonl', noise.map((r) => JSON.stringify(r)).join('\n')) },
  ]);
  return corpusFromPassages(built.passages);
}

const owned = (c: Corpus, key: string) => c.passages.filter((p) => p.annotatedFor?.includes(key)).map((p) => p.id);

describe('the corpus records which questions each passage was annotated for', () => {
  it('ASQA contexts and knowledge, HotpotQA paragraphs, FEVER evidence; a shared passage lists every owner', () => {
    const c = build();
    const q1 = questionKey('asqa', 'q1');
    const q2 = questionKey('asqa', 'q2');
    expect(owned(c, q1)).toHaveLength(2);
    expect(owned(c, q2)).toHaveLength(1);
    const sharedPassage = c.passages.find((p) => p.text === shared)!;
    expect(sharedPassage.annotatedFor).toEqual([q1, q2]);
    expect(c.passages.find((p) => p.source === 'hotpotqa-adversarial')!.annotatedFor).toEqual(['hotpotqa-adversarial:h1']);
    expect(c.passages.find((p) => p.source === 'fever')!.annotatedFor).toEqual(['fever:7']);
    expect(c.passages.filter((p) => p.source === 'user').every((p) => p.annotatedFor === undefined)).toBe(true);
  });

  it('keeps the annotations through a corpus file, without changing the index hash', () => {
    const c = build();
    const path = join(tmp, 'corpus.jsonl');
    saveCorpus(path, c.passages);
    expect(readFileSync(path, 'utf8')).toContain('"annotated_for":["asqa:q1","asqa:q2"]');
    const loaded = loadCorpus(path);
    expect(loaded.passages.map((p) => p.annotatedFor)).toEqual(c.passages.map((p) => p.annotatedFor));
    const bare: Passage[] = c.passages.map(({ annotatedFor: _a, ...p }) => p);
    expect(loaded.hash).toBe(contentHash(bare));
    expect(c.hash).toBe(corpusFromPassages(bare).hash);
  });

  it('refuses a malformed annotated_for, naming the line', () => {
    const path = file('bad.jsonl', '{"title": "t", "text": "x", "annotated_for": "asqa:q1"}\n');
    expect(() => loadCorpus(path)).toThrow(/bad\.jsonl:1: "annotated_for" must be a list of question keys/);
  });
});

describe('retriever.exclude: own', () => {
  const corpus = build();
  const embedder = new HashEmbedder();
  const retrievers = async (): Promise<Record<string, Retriever>> => {
    const bm25 = Bm25Retriever.create(corpus, {}, { cache: false });
    const dense = await DenseRetriever.create(corpus, embedder, { cache: false });
    return {
      bm25,
      dense,
      hybrid: new HybridRetriever([bm25, dense]),
      'multi-query': new MultiQueryRetriever(bm25, embedder, { perQueryK: 10 }),
    };
  };

  it('never returns a question its own passages, and still returns k, over bm25, dense, hybrid and multi-query', async () => {
    for (const [kind, base] of Object.entries(await retrievers())) {
      const wrapped = new ExcludeOwnRetriever(base, corpus);
      for (const [id, question] of [['q1', asqa.dev.q1.ambiguous_question], ['q2', asqa.dev.q2.ambiguous_question]] as const) {
        const key = questionKey('asqa', id);
        const own = new Set(owned(corpus, key));
        // Without exclusion the question's own passages come first: the leak.
        const plain = (await base.search(question, 5)).map((h) => h.passage.id);
        expect(plain.some((p) => own.has(p)), `${kind} ${id} retrieves its own passages`).toBe(true);
        const view = wrapped.forQuestion(key);
        const hits = await view.search(question, 5);
        expect(hits, kind).toHaveLength(5);
        expect(hits.filter((h) => own.has(h.passage.id)), `${kind} ${id}`).toEqual([]);
        expect(hits.map((h) => h.rank)).toEqual([0, 1, 2, 3, 4]);
        expect(view.name).toBe(`${base.name} -own`);
      }
      // Another question's own passages stay visible: q2's view keeps q1's context.
      const q1Context = corpus.passages.find((p) => p.text.startsWith('Construction'))!.id;
      const q2Hits = (await wrapped.forQuestion(questionKey('asqa', 'q2')).search('Construction of the Eiffel Tower began', 3)).map((h) => h.passage.id);
      expect(q2Hits, kind).toContain(q1Context);
      // Without a question (search outside a run), nothing is excluded.
      expect((await wrapped.search('When was the Eiffel Tower built?', 5)).map((h) => h.passage.id)).toEqual((await base.search('When was the Eiffel Tower built?', 5)).map((h) => h.passage.id));
    }
  });

  it('works through the multi-query helper built over a question view (as Diva does)', async () => {
    const view = new ExcludeOwnRetriever(Bm25Retriever.create(corpus, {}, { cache: false }), corpus).forQuestion(questionKey('asqa', 'q1'));
    const multi = new MultiQueryRetriever(view, embedder, { perQueryK: 6 });
    const hits = await multi.searchMany(['When did construction of the Eiffel Tower begin?', 'When was the Eiffel Tower completed?'], 4);
    const own = new Set(owned(corpus, questionKey('asqa', 'q1')));
    expect(hits).toHaveLength(4);
    expect(hits.filter((h) => own.has(h.passage.id))).toEqual([]);
  });

  it('refuses a corpus without annotations, and `none` leaves the retriever as it is', () => {
    const plain = corpusFromPassages(noise);
    const bm25 = Bm25Retriever.create(plain, {}, { cache: false });
    expect(() => withExclusion(bm25, plain, 'own')).toThrow(/retriever\.exclude: own, but the corpus records no question annotations/);
    expect(withExclusion(bm25, plain, 'none')).toBe(bm25);
  });
});
