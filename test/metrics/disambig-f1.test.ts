import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { QaPair } from '../../src/datasets/types';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { DisambigF1, LlmSpanReader, disambigF1, parseReaderReply, type DisambigReader } from '../../src/metrics/disambig-f1';
import { OnnxQaReader } from '../../src/metrics/qa-onnx-reader';
import { writeTinyBert } from '../helpers/tiny-onnx';

const pairs: QaPair[] = [
  { question: "Who has the most goals in men's international football?", shortAnswers: ['Ali Daei', 'Daei'] },
  { question: 'Who has the most goals in all matches?', shortAnswers: ['Josef Bican'] },
  { question: "Who has the most goals in women's international football?", shortAnswers: ['Christine Sinclair'] },
];
const longAnswer = 'Ali Daei scored 109 international goals, while Josef Bican scored over 800 goals in all matches.';

describe('Disambig-F1', () => {
  it('is the mean over DQs of the best token F1 of the reader span, on 0–100, with the reader named', async () => {
    const spans = ['Ali Daei', 'Bican', ''];
    let i = 0;
    const reader: DisambigReader = { name: 'fixed', read: async () => spans[i++] };
    const r = await disambigF1(pairs, longAnswer, reader);
    // DQ1: exact → 1; DQ2: "bican" vs "josef bican" → P=1, R=1/2, F=2/3; DQ3: no answer → 0.
    expect(r.f1s.map((x) => x / 100)).toEqual([1, expect.closeTo(2 / 3, 12), 0]);
    expect(r.score).toBeCloseTo((100 * (1 + 2 / 3)) / 3, 10);
    expect(r.reader).toBe('fixed');
  });
  it('does not ask the reader about an empty long answer, and is null without DQs', async () => {
    const reader: DisambigReader = { name: 'never', read: async () => { throw new Error('called'); } };
    expect((await disambigF1(pairs, '  ', reader)).score).toBe(0);
    expect((await DisambigF1({ output: 'x', expected: [], reader })).score).toBeNull();
  });
});

describe('LLM span reader', () => {
  it('parses replies: strips prefixes, quotes and periods; "none" and non-spans are no answer', () => {
    expect(parseReaderReply('Answer: "Josef Bican".', longAnswer)).toEqual({ span: 'Josef Bican', notInContext: false });
    expect(parseReaderReply('None', longAnswer)).toEqual({ span: '', notInContext: false });
    expect(parseReaderReply('The text does not say.', longAnswer)).toEqual({ span: '', notInContext: false });
    // Christine Sinclair is not in the long answer: an LLM that knows it must not get credit.
    expect(parseReaderReply('Christine Sinclair', longAnswer)).toEqual({ span: '', notInContext: true });
    expect(parseReaderReply('Christine Sinclair', longAnswer, false)).toEqual({ span: 'Christine Sinclair', notInContext: false });
    // Only whole words of the context count: "Dae" is not a span of "Daei".
    expect(parseReaderReply('Dae', longAnswer).span).toBe('');
  });
  it('asks the model per DQ with the long answer in the prompt, greedy and short, and scores its spans', async () => {
    const provider = new ScriptedProvider(['Ali Daei', 'Josef Bican scored over 800 goals', 'Christine Sinclair']);
    const reader = new LlmSpanReader(new LlmClient(provider, { cache: null }));
    expect(reader.name).toBe('llm:scripted/scripted-model');
    const r = await disambigF1(pairs, longAnswer, reader);
    expect(provider.received).toHaveLength(3);
    const req = provider.received[0].request;
    expect(req.purpose).toBe('metrics.d_f1.reader');
    expect(req.temperature).toBe(0);
    expect(req.maxTokens).toBeLessThanOrEqual(32);
    const last = req.messages[req.messages.length - 1];
    expect(last.role).toBe('user');
    expect(last.content).toContain(longAnswer);
    expect(last.content).toContain(pairs[0].question);
    expect(req.messages[0].role).toBe('system');
    // DQ2: "josef bican scored over 800 goals" vs "josef bican": P = 2/6, R = 1 → F = 0.5.
    expect(r.f1s[0]).toBe(100);
    expect(r.f1s[1]).toBeCloseTo(50, 10);
    expect(r.f1s[2]).toBe(0);
    expect(reader.stats).toEqual({ calls: 3, noAnswer: 1, notInContext: 1 });
  });
});

describe('ONNX extractive QA reader (transformers.js, tiny generated BERT)', () => {
  // Hidden size 2, head = identity: start logit = first embedding value, end = second. The
  // question's own tokens are outside the context and never chosen.
  const words = ['who', 'scored', 'most', 'goals', 'josef', 'bican', 'ali', 'daei', 'in', 'football', 'nothing', 'here'];
  const embeddings: Record<string, number[]> = Object.fromEntries(words.map((w) => [w, [0, 0]]));
  Object.assign(embeddings, { '[CLS]': [1, 1], '[SEP]': [0, 0], josef: [6, 0], bican: [0, 6] });

  it('loads the model folder and returns the best span', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'ambiqa-qa-')), 'tiny-squad');
    writeTinyBert({ dir, head: 'question-answering', words, hidden: 2, embeddings, weight: [[1, 0], [0, 1]] });
    const reader = new OnnxQaReader(dir);
    expect(reader.name).toBe('qa-onnx:tiny-squad');
    try {
      // josef (start 6) .. bican (end 6): 12 > null score 1 + 1.
      expect(await reader.read('who scored most goals', 'josef bican scored most goals in football')).toBe('josef bican');
      // No token scores above [CLS] (all 0 < 1 + 1): no answer.
      expect(await reader.read('who scored', 'nothing here')).toBe('');
    } finally {
      await reader.dispose();
    }
  });
  it('names the missing file when the folder is incomplete', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-qa-empty-'));
    expect(() => new OnnxQaReader(dir)).toThrow(/QA reader file missing: .*model\.onnx/);
  });
});
