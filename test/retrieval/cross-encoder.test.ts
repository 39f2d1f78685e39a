/**
 * The cross-encoder loading path, with a tiny BERT-shaped ONNX model generated here (no real
 * cross-encoder weights are available offline).
 */
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createReranker } from '../../src/retrieval/factory';
import { CrossEncoderReranker } from '../../src/retrieval/rerank';
import type { Passage, ScoredPassage } from '../../src/retrieval/types';
import { formatPassage } from '../../src/retrieval/types';
import { writeTinyBert } from '../helpers/tiny-onnx';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-ce-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const words = ['what', 'is', 'the', 'capital', 'of', 'france', 'paris', 'berlin', 'germany', 'city', 'a', 'in'];
const passages: Passage[] = [
  { id: 'berlin', title: 'Berlin', text: 'berlin is a city in germany' },
  { id: 'paris', title: 'Paris', text: 'paris is the capital of france' },
  { id: 'city', title: 'City', text: 'a city' },
];
const candidates = (): ScoredPassage[] => passages.map((passage, rank) => ({ passage, score: 0, rank }));

describe('CrossEncoderReranker with a tiny generated model', () => {
  it('scores each (query, passage) pair with the ONNX classifier, matching a hand computation', async () => {
    const model = writeTinyBert({ dir: join(tmp, 'random'), head: 'classification', words, seed: 3 });
    const reranker = new CrossEncoderReranker({ dir: model.dir });
    const query = 'what is the capital of france';
    const scores = await reranker.score(query, passages);
    passages.forEach((p, i) => {
      // formatPassage gives "Title; text": ";" is not in the vocabulary and becomes [UNK].
      const { ids, types } = model.encode(query, formatPassage(p).replace(';', ' ;'));
      expect(scores[i]).toBeCloseTo((model.reference(ids, types) as number[])[0], 4);
    });
  });

  it('reranks by relevance: a model whose logit counts "paris" and "capital" puts that passage first', async () => {
    const hidden = 2;
    const embeddings: Record<string, number[]> = Object.fromEntries([...words, '[CLS]', '[SEP]', '[UNK]'].map((w) => [w, [0, 0]]));
    embeddings.paris = [1, 0];
    embeddings.capital = [0, 1];
    const model = writeTinyBert({
      dir: join(tmp, 'keyword'),
      head: 'classification',
      words,
      hidden,
      embeddings,
      // The passage's tokens (type 1) count; the query's (type 0) are cancelled out.
      typeEmbeddings: [
        [0, 0],
        [0, 0],
      ],
      weight: [[2], [1]],
      bias: [0.5],
      layout: 'root',
      tokenizerConfig: false,
    });
    const reranker = createReranker({ type: 'cross-encoder', dir: model.dir });
    expect(reranker.name).toBe('cross-encoder:keyword');
    const out = await reranker.rerank('berlin', candidates(), 3);
    // berlin and city both score the bias alone; the tie keeps the incoming order.
    expect(out.map((o) => o.passage.id)).toEqual(['paris', 'berlin', 'city']);
    // paris: title Paris + text "paris ... capital" → 2·2 + 1·1 + 0.5
    expect(out[0].score).toBeCloseTo(5.5, 5);
    expect(out[1].score).toBeCloseTo(0.5, 5);
  });

  it('turns a two-label classifier into the probability of the positive label', async () => {
    const model = writeTinyBert({ dir: join(tmp, 'two'), head: 'classification', words, numLabels: 2, seed: 5 });
    const reranker = new CrossEncoderReranker({ dir: model.dir, positiveLabel: 1 });
    const [score] = await reranker.score('paris', [passages[1]]);
    const { ids, types } = model.encode('paris', formatPassage(passages[1]).replace(';', ' ;'));
    const [l0, l1] = model.reference(ids, types) as number[];
    expect(score).toBeCloseTo(Math.exp(l1) / (Math.exp(l0) + Math.exp(l1)), 4);
  });

  it('names the missing file of an incomplete model folder', () => {
    const model = writeTinyBert({ dir: join(tmp, 'incomplete'), head: 'classification', words });
    unlinkSync(join(model.dir, 'config.json'));
    expect(() => new CrossEncoderReranker({ dir: model.dir })).toThrow(`cross-encoder file missing: ${join(model.dir, 'config.json')}`);
    expect(() => createReranker({ type: 'cross-encoder', dir: join(tmp, 'absent') })).toThrow(/cross-encoder folder .*absent does not exist/);
  });

  it('also writes a question-answering head (start/end logits) that transformers.js loads', async () => {
    const model = writeTinyBert({ dir: join(tmp, 'qa'), head: 'question-answering', words, seed: 9 });
    const t = await import('@huggingface/transformers');
    t.env.allowRemoteModels = false;
    const qa = await t.AutoModelForQuestionAnswering.from_pretrained(model.dir, { dtype: 'fp32', local_files_only: true });
    const tokenizer = await t.AutoTokenizer.from_pretrained(model.dir);
    const enc = tokenizer('capital of france', { text_pair: 'paris is the capital' });
    const out = (await qa(enc)) as { start_logits: { data: Float32Array; dims: number[] }; end_logits: { data: Float32Array } };
    const { ids, types } = model.encode('capital of france', 'paris is the capital');
    const expected = model.reference(ids, types) as number[][];
    expect(out.start_logits.dims).toEqual([1, ids.length]);
    expected.forEach(([start, end], s) => {
      expect(out.start_logits.data[s]).toBeCloseTo(start, 4);
      expect(out.end_logits.data[s]).toBeCloseTo(end, 4);
    });
  });
});
