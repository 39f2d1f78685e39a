import { describe, expect, it } from 'vitest';
import type { Example } from '../../src/datasets/types';
import type { DisambigReader } from '../../src/metrics/disambig-f1';
import { aggregate, checkMetrics, defaultMetrics, metricsFor, scoreExample } from '../../src/metrics/example';
import type { SentenceSplitter } from '../../src/metrics/sentences';

const byLine: SentenceSplitter = { name: 'lines', split: (t) => t.split('\n') };
const asqa: Example = {
  id: 'q1',
  dataset: 'asqa',
  question: 'Who scored most?',
  answers: ['Daei', 'Bican'],
  qaPairs: [
    { question: 'men', shortAnswers: ['Daei'] },
    { question: 'all', shortAnswers: ['Bican'] },
  ],
  longAnswers: ['daei and bican scored most', 'nothing alike here at all'],
  passages: [],
};

describe('scoreExample', () => {
  it('scores an ASQA long answer with STR-EM hits, ROUGE and D-F1/DR from the reader', async () => {
    const reader: DisambigReader = { name: 'echo', read: async (q) => (q === 'men' ? 'daei' : '') };
    const s = await scoreExample('asqa', asqa, { output: 'daei scored most' }, ['str_em', 'str_hit', 'rougeL', 'rougeLsum', 'd_f1', 'dr'], { reader, splitter: byLine });
    expect(s.dqHits).toEqual([true, false]);
    expect(s.metrics.str_em).toBe(50);
    expect(s.metrics.str_hit).toBe(0);
    // [daei scor most] vs [daei and bican scor most]: LCS 3 → P = 1, R = 3/5 → F = 0.75.
    expect(s.metrics.rougeL).toBeCloseTo(75, 10);
    expect(s.metrics.rougeLsum).toBeCloseTo(75, 10);
    expect(s.metrics.d_f1).toBe(50);
    expect(s.metrics.dr).toBeCloseTo(Math.sqrt(50 * 75), 10);
    expect(s.readerSpans).toEqual(['daei', '']);
  });
  it('leaves out metrics a question cannot have and says why', async () => {
    const s = await scoreExample('asqa', { ...asqa, qaPairs: [] }, { output: 'x' }, ['str_em', 'rougeL'], { splitter: byLine });
    expect(s.metrics).toEqual({ rougeL: 0 });
    expect(s.notes).toEqual(['str_em: no qa_pairs']);
  });
  it('needs a reader for d_f1', async () => {
    await expect(scoreExample('asqa', asqa, { output: 'x' }, ['d_f1'])).rejects.toThrow(/need a reader/);
  });
  it('scores short answers with EM/F1 and FEVER labels with accuracy; records consistency for auc', async () => {
    const hotpot: Example = { id: 'h', dataset: 'hotpotqa-adversarial', question: '?', answers: ['Sochi, Russia'], qaPairs: [], longAnswers: [], passages: [] };
    const s = await scoreExample('hotpotqa-adversarial', hotpot, { answer: 'Sochi', consistency: 0.6 }, ['f1', 'auc']);
    expect(s.metrics).toEqual({ f1: expect.closeTo(200 / 3, 10), consistency: 60, em: 0 });
    const fever: Example = { id: 'f', dataset: 'fever', question: 'c', answers: ['REFUTES'], label: 'REFUTES', qaPairs: [], longAnswers: [], passages: [] };
    expect((await scoreExample('fever', fever, { answer: 'Refutes' }, ['accuracy'])).metrics).toEqual({ accuracy: 100 });
    const bad = await scoreExample('fever', fever, { answer: 'dunno' }, ['accuracy']);
    expect(bad.metrics.accuracy).toBe(0);
    expect(bad.predictedLabel).toBeNull();
  });
  it('checks metric names per dataset', () => {
    expect(defaultMetrics('asqa')).toEqual(['str_em', 'str_hit', 'rougeLsum', 'rougeL', 'd_f1', 'dr']);
    expect(metricsFor('fever')).toEqual(['accuracy', 'auc', 'auc_logprob']);
    expect(() => checkMetrics('fever', ['rougeL'])).toThrow(/"rougeL" is not available for fever/);
  });
});

describe('aggregate', () => {
  it('averages each metric over the examples that have it, with CIs, and sums usage', () => {
    const run = aggregate([
      { metrics: { str_em: 100, rougeLsum: 40 }, usage: { llmCalls: 2, promptTokens: 10, completionTokens: 5, cacheHits: 1, seconds: 1.5, retrievals: 0, parseFailures: 0 } },
      { metrics: { str_em: 50, rougeLsum: 20 }, usage: { llmCalls: 3, promptTokens: 20, completionTokens: 5, cacheHits: 0, seconds: 2, retrievals: 1, parseFailures: 0 } },
      { metrics: { rougeLsum: 30 } },
    ]);
    expect(run.n).toBe(3);
    expect(run.metrics.str_em).toMatchObject({ mean: 75, n: 2 });
    expect(run.metrics.rougeLsum).toMatchObject({ mean: 30, n: 3 });
    expect(run.metrics.rougeLsum.ciLow).toBeLessThanOrEqual(30);
    expect(run.metrics.rougeLsum.ciHigh).toBeGreaterThanOrEqual(30);
    expect(run.usage).toEqual({ llm_calls: 5, prompt_tokens: 30, completion_tokens: 10, cache_hits: 1, wall_seconds: 3.5 });
  });
  it('computes run-level DR from the run-level means, not as a mean of per-question DRs', () => {
    const rows = [
      { metrics: { d_f1: 100, rougeLsum: 0, dr: 0 } },
      { metrics: { d_f1: 0, rougeLsum: 100, dr: 0 } },
    ];
    // mean D-F1 = 50, mean ROUGE-Lsum = 50 → DR = 50 (the mean of per-question DRs would be 0).
    expect(aggregate(rows).metrics.dr.mean).toBeCloseTo(50, 10);
  });
  it('computes the accuracy–coverage AUC from per-example consistency and correctness', () => {
    const rows = [
      { metrics: { consistency: 100, accuracy: 100 } },
      { metrics: { consistency: 80, accuracy: 100 } },
      { metrics: { consistency: 80, accuracy: 0 } },
      { metrics: { consistency: 60, accuracy: 0 } },
      { metrics: { consistency: 40, accuracy: 100 } },
    ];
    // The hand-worked tie example of calibration.test.ts: 75.4166…
    expect(aggregate(rows).metrics.auc.mean).toBeCloseTo((100 * (1 + 0.75 + 2 / 3 + 0.6)) / 4, 10);
    expect(aggregate(rows).metrics.accuracy.mean).toBe(60);
  });
});
