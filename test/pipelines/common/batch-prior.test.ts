import { describe, expect, it } from 'vitest';
import { tocDecisionsSchema } from '../../../src/pipelines/toc/decisions';
import { AmbiqaError } from '../../../src/errors';
import {
  calibrationPairs,
  estimateBatchPriors,
  sampleCalibrationDemos,
  type JudgePriors,
} from '../../../src/pipelines/common/batch-prior';
import { DivaPipeline } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema } from '../../../src/pipelines/toc/options';
import type { Demo, PipelineContext } from '../../../src/pipelines/types';
import type { TocDecisions } from '../../../src/pipelines/toc/decisions';
import { asqaDemos, asqaExample, FakeEmbedder, FakeRetriever, fixedDemos, judgeField, passage, scriptedLlm } from '../fakes';

// Issue 26 point 4: a judge prior read from real inputs of the same purpose (batch calibration).
const pool: Demo[] = [
  ...asqaDemos,
  { id: 'd4', question: 'Who painted the Night Watch?', qaPairs: [{ question: 'Who painted the 1642 Night Watch?', answer: 'Rembrandt' }] },
  { id: 'd5', question: 'What is the capital of Australia?', qaPairs: [{ question: 'What is the capital city of Australia?', answer: 'Canberra' }] },
  { id: 'd6', question: 'A question with no pairs?' },
];
const corpus = [
  passage('c1', 'Leonard Cohen', 'Leonard Cohen wrote Hallelujah in 1984.'),
  passage('c2', 'Eiffel Tower', 'The Eiffel Tower opened to the public on 31 March 1889.'),
  passage('c3', 'Night Watch', 'Rembrandt painted the Night Watch in 1642.'),
  passage('c4', 'Canberra', 'Canberra is the capital city of Australia.'),
  passage('c5', 'Springfield', 'Misty Buscher is the mayor of Springfield, Illinois.'),
];

describe('the calibration sample', () => {
  it('is seeded, ignores the pool order, and takes only questions with gold pairs', () => {
    const a = sampleCalibrationDemos(pool, 3, 7).map((d) => d.id);
    expect(sampleCalibrationDemos([...pool].reverse(), 3, 7).map((d) => d.id)).toEqual(a);
    expect(a).toHaveLength(3);
    expect(a).not.toContain('d6');
    const all = sampleCalibrationDemos(pool, 100, 7).map((d) => d.id).sort();
    expect(all).toEqual(['d1', 'd2', 'd3', 'd4', 'd5']);
    // Another seed, another order (5! orders; these two seeds differ).
    const orders = new Set([1, 2, 3, 4, 5].map((seed) => sampleCalibrationDemos(pool, 5, seed).map((d) => d.id).join()));
    expect(orders.size).toBeGreaterThan(1);
  });

  it('refuses a pool with fewer than two usable questions, naming the option', () => {
    expect(() => sampleCalibrationDemos([pool[0]!, pool[5]!], 4, 0)).toThrow(AmbiqaError);
    expect(() => sampleCalibrationDemos([], 4, 0)).toThrow(/judgeCalibration batch: the demo pool has 0/);
  });

  it("pairs each gold answer with another question's answer it does not give", () => {
    const pairs = calibrationPairs(pool.slice(0, 3));
    // d1 has two pairs, d2 and d3 one each.
    expect(pairs.map((p) => [p.demo.id, p.answer, p.other.answer])).toEqual([
      ['d1', 'Leonard Cohen', '31 March 1889'],
      ['d1', 'Kobi Oshrat', '31 March 1889'],
      ['d2', '31 March 1889', 'Misty Buscher'],
      ['d3', 'Misty Buscher', 'Leonard Cohen'],
    ]);
  });
});

describe('estimateBatchPriors', () => {
  it('averages the label probabilities per purpose (hand-worked) and records every call', async () => {
    // Four judgments with P(True) 0.1, 0.3, 0.2, 0.4 → prior [0.25, 0.75].
    const ps = [0.1, 0.3, 0.2, 0.4];
    let i = 0;
    const { llm } = scriptedLlm({}, { 'toc.verify.calibration': () => ps[i++]! });
    const items = ps.map((_, k) => ({ purpose: 'toc.verify', labels: ['True', 'False'], messages: [{ role: 'user' as const, content: `item ${k}` }] }));
    const priors = await estimateBatchPriors('toc', pool.slice(0, 2), 3, items, { llm });
    expect(priors.purposes['toc.verify']!.prior[0]).toBeCloseTo(0.25, 12);
    expect(priors.purposes['toc.verify']!.prior[1]).toBeCloseTo(0.75, 12);
    expect(priors.purposes['toc.verify']!.judgments).toBe(4);
    expect(priors.calls.map((c) => c.purpose)).toEqual(Array(4).fill('toc.verify.calibration'));
    expect(priors.usage.llmCalls).toBe(4);
    expect(priors).toMatchObject({ method: 'batch', pipeline: 'toc', seed: 3, sampleIds: ['d1', 'd2'] });
  });

  it('refuses a judge without probabilities (text replies)', async () => {
    const { llm } = scriptedLlm({ 'toc.verify.calibration': 'True' });
    const items = [{ purpose: 'toc.verify', labels: ['True', 'False'], messages: [{ role: 'user' as const, content: 'x' }] }];
    await expect(estimateBatchPriors('toc', pool, 0, items, { llm })).rejects.toThrow(/none of the toc.verify calibration judgments had label probabilities/);
  });
});

const AQ = 'Who played the Weasley brothers in Harry Potter?';
const weasley = [
  passage('w1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('w2', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
];
const RAC = 'DQ 1: Who played Ron Weasley?\nDA 1: Rupert Grint\nDQ 2: Who played Percy Weasley?\nDA 2: Chris Rankin';

function tocOptions(extra: Record<string, unknown> = {}) {
  return tocOptionsSchema.parse({ nShots: 1, poolSize: 2, nPassages: 2, reranker: 'none', maxDepth: 1, judgeCalibration: 'batch', calibrationQuestions: 4, ...extra });
}

describe('ToC with judgeCalibration: batch', () => {
  it('calibrate(): supported and unsupported inputs of its own verification prompt, prior = their mean', async () => {
    // The judge says 0.4 when the evidence passage states the proposed answer, else 0.2.
    const { llm } = scriptedLlm({}, {
      'toc.verify.calibration': (r) => (r.messages.at(-1)!.content.split('\n')[0]!.includes(judgeField(r, 'Proposed answer')) ? 0.4 : 0.2),
    });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus) };
    const priors = (await new TocPipeline(tocOptions()).calibrate(pool, ctx))!;
    const calls = priors.calls;
    const answers = calls.map((c) => judgeField({ messages: c.messages } as never, 'Proposed answer'));
    const sampled = pool.filter((d) => priors.sampleIds.includes(d.id));
    const gold = new Map(sampled.map((d) => [d.id, (d.qaPairs ?? []).map((q) => q.answer)]));
    // Alternating: a gold answer of the question asked, then an answer it does not have.
    calls.forEach((c, i) => {
      const question = judgeField({ messages: c.messages } as never, 'Question');
      const own = gold.get(sampled.find((d) => d.question === question)!.id)!;
      expect(own.includes(answers[i]!), `call ${i}`).toBe(i % 2 === 0);
    });
    // Every gold answer but Kobi Oshrat (in no passage) is supported by its evidence.
    expect(calls.map((c, i) => [answers[i], c.judge!.p]).filter(([, p]) => p === 0.4).map(([a]) => a)).not.toContain('Kobi Oshrat');
    const mean = calls.reduce((s, c) => s + c.judge!.p, 0) / calls.length;
    expect(priors.purposes['toc.verify']!.prior[0]).toBeCloseTo(mean, 12);
    expect(priors.purposes['toc.verify']!.prior[0]).toBeGreaterThan(0.2);
    expect(priors.sampleIds).toHaveLength(4);
  });

  it('is null when the options do not ask for it', async () => {
    const { llm } = scriptedLlm({});
    expect(await new TocPipeline(tocOptions({ judgeCalibration: 'none' })).calibrate(pool, { llm })).toBeNull();
  });

  it('divides each judgment by the stored prior and records method batch', async () => {
    const priors: JudgePriors = {
      method: 'batch',
      pipeline: 'toc',
      seed: 0,
      sampleIds: ['d1', 'd2'],
      purposes: { 'toc.verify': { labels: ['True', 'False'], prior: [0.3, 0.7], judgments: 4 } },
      calls: [],
      usage: { llmCalls: 4, promptTokens: 0, completionTokens: 0, cacheHits: 0 },
    };
    // Raw P(True) 0.3 (= the prior) and 0.15: calibrated 0.5 and (0.15/0.3)/(0.15/0.3 + 0.85/0.7) = 0.291…
    const { llm } = scriptedLlm(
      { 'toc.rac': RAC, 'toc.answer': 'Answer: Two actors.' },
      { 'toc.verify': (r) => (judgeField(r, 'Proposed answer') === 'Rupert Grint' ? 0.3 : 0.15) },
    );
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(weasley), demos: fixedDemos(), judgePriors: priors };
    const out = await new TocPipeline(tocOptions({ minValidNodes: 0 })).answer(asqaExample('q', AQ), ctx);
    const d = tocDecisionsSchema.parse(out.trace.decisions);
    const [ron, percy] = [d.nodes[1]!, d.nodes[2]!];
    expect(ron.pTrue).toBeCloseTo(0.5, 12);
    expect(ron.pruned).toBe(false);
    expect(percy.pTrue).toBeCloseTo(0.5 / (0.5 + 0.85 / 0.7), 12);
    expect(percy.pruned).toBe(true);
    expect([ron.pTrueRaw, ron.pTruePrior]).toEqual([0.3, 0.3]);
    const record = out.trace.llmCalls.find((c) => c.purpose === 'toc.verify')!.judge!.calibration!;
    expect(record).toMatchObject({ method: 'batch', prior: [0.3, 0.7], applied: true });
    expect(record.priorCallIndex).toBeUndefined();
    // No per-question prior call.
    expect(out.trace.llmCalls.some((c) => c.purpose.endsWith('.prior'))).toBe(false);
  });

  it('without a stored prior: one clear error, before the judgment is thresholded', async () => {
    const { llm } = scriptedLlm({ 'toc.rac': RAC, 'toc.answer': 'Answer: x.' }, { 'toc.verify': 0.3 });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(weasley), demos: fixedDemos() };
    await expect(new TocPipeline(tocOptions()).answer(asqaExample('q', AQ), ctx)).rejects.toThrow(/judgeCalibration batch: no stored toc.verify prior/);
  });
});

describe('Diva with judgeCalibration: batch', () => {
  it('calibrate(): each disambiguation against its own passages and against another question’s', async () => {
    const { llm } = scriptedLlm({}, { 'diva.verify.calibration': 0.25 });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder() };
    const opts = divaOptionsSchema.parse({ nShots: 1, nPassages: 1, judgeCalibration: 'batch', calibrationQuestions: 3 });
    const priors = (await new DivaPipeline(opts).calibrate(pool, ctx))!;
    expect(priors.purposes['diva.verify']).toEqual({ labels: ['Yes', 'No'], prior: [0.25, 0.75], judgments: priors.calls.length });
    // Pairs of calls ask the same question against different passages.
    const question = (i: number) => judgeField({ messages: priors.calls[i]!.messages } as never, 'Question');
    expect(question(0)).toBe(question(1));
    expect(priors.calls[0]!.messages.at(-1)!.content).not.toBe(priors.calls[1]!.messages.at(-1)!.content);
  });

  it('COMBO keeps none / content-free only', async () => {
    const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
    expect(() => parsePipelineOptions('combo', { judgeCalibration: 'batch' })).toThrow(/judgeCalibration/);
  });
});
