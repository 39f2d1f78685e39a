import { describe, expect, it } from 'vitest';
import { comboDecisionsSchema } from '../../../src/pipelines/combo/decisions';
import { ComboPipeline } from '../../../src/pipelines/combo';
import { comboOptionsSchema } from '../../../src/pipelines/combo/options';
import { parsePipelineOptions } from '../../../src/pipelines/registry';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { ComboDecisions } from '../../../src/pipelines/combo/decisions';
import {
  asqaExample,
  FakeEmbedder,
  FakeRetriever,
  fixedDemos,
  passage,
  promptOf,
  scriptedLlm,
  type JudgeResponder,
  type Responder,
  callText,
} from '../fakes';
import type { NormalisedJudgeRequest } from '../../../src/llm/types';

const corpus = [
  passage('r-ron', 'Rupert Grint', 'Rupert Grint played Ron in the films.'),
  passage('r-percy', 'Chris Rankin', 'Chris Rankin played Percy in the films.'),
  passage('r-bread', 'Baking', 'Bread is baked in the films of cookery shows.'),
];
const Q = 'Who played the Weasleys in the films?';
const GENERATED = ['Percy was played by Chris Rankin.', 'Ron was played by Rupert Grint.', 'Bread needs yeast.'];
const NAMES = ['Ron', 'Percy', 'Bread'];

function topicOf(text: string): string | undefined {
  return NAMES.find((n) => text.includes(n));
}

function routes(): Record<string, Responder | string> {
  return {
    'combo.generate': (_r, i) => GENERATED[i],
    'combo.evidentiality': (r) => (promptOf(r).includes('Bread is baked') ? 'No' : 'Yes'),
    'combo.consistency': (r) => {
      const text = promptOf(r);
      const a = /Passage A: (.*)/.exec(text)![1];
      const b = /Passage B: (.*)/.exec(text)![1];
      return topicOf(a) === topicOf(b) ? 'Yes' : 'No';
    },
    'combo.read': 'Answer: Ron was played by Rupert Grint and Percy by Chris Rankin.',
  };
}

async function run(options: Record<string, unknown> = {}) {
  const { llm } = scriptedLlm(routes());
  const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
  const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 3, nShots: 1, ...options })).answer(asqaExample('q', Q), ctx);
  return { out, d: comboDecisionsSchema.parse(out.trace.decisions) };
}

describe('COMBO', () => {
  it('scores, builds the gated compatibility matrix and picks the max-total matching', async () => {
    const { d } = await run();
    expect(d.generatedPassages).toEqual(GENERATED);
    expect(d.retrievedPassageIds).toHaveLength(3);
    const rpTopic = d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
    expect(d.evidentiality).toEqual(rpTopic.map((t) => (t === 'Bread' ? 0 : 1)));
    expect(d.consistencySkipped).toEqual(rpTopic.map((t) => t === 'Bread'));
    d.consistency.forEach((row, i) =>
      row.forEach((c, j) => expect(c).toBe(rpTopic[i] !== 'Bread' && topicOf(GENERATED[j]) === rpTopic[i] ? 1 : 0)),
    );
    // Gated: the compatibility of an evidential passage's pair is its P(consistent), else 0.
    d.compatibility.forEach((row, i) => row.forEach((c, j) => expect(c).toBe(d.consistencySkipped![i] ? 0 : d.consistency[i][j])));
    // Each evidential RP is paired with the generated passage on its topic.
    d.matching.forEach((j, i) => {
      if (rpTopic[i] !== 'Bread') expect(topicOf(GENERATED[j])).toBe(rpTopic[i]);
    });
    expect(new Set(d.matching).size).toBe(3);
    expect(d.matchingScore).toBe(2);
    expect(d.scorers).toEqual({ evidentiality: 'llm-judge', consistency: 'llm-judge' });
  });

  it('gives the reader each pair with the generated passage before the retrieved one', async () => {
    const { out, d } = await run();
    const prompt = callText(out.trace.llmCalls.at(-1)!);
    const ronSlot = d.pairs!.findIndex((p) => d.retrievedPassageIds[p.retrieved] === 'r-ron');
    const block = prompt.split('\n\n').find((b) => b.includes('Rupert Grint played Ron in the films'))!;
    expect(block).toBe(
      `Generated passage ${ronSlot + 1}: Ron was played by Rupert Grint.\nRetrieved passage ${ronSlot + 1}: Rupert Grint; Rupert Grint played Ron in the films.`,
    );
    expect(out.output).toContain('Rupert Grint');
  });

  it('judges consistency only for evidential passages: N + (evidential × N) judge calls, N + N² with product', async () => {
    const count = (o: Awaited<ReturnType<typeof run>>['out'], p: string) => o.trace.llmCalls.filter((c) => c.purpose === p).length;
    const gated = await run();
    expect(count(gated.out, 'combo.evidentiality')).toBe(3);
    expect(count(gated.out, 'combo.consistency')).toBe(2 * 3);
    // No consistency prompt shows the passage judged not evidential.
    const consistencyPrompts = gated.out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency').map(callText);
    expect(consistencyPrompts.some((t) => t.includes('Bread is baked'))).toBe(false);
    const product = await run({ compatibility: 'product' });
    expect(count(product.out, 'combo.evidentiality')).toBe(3);
    expect(count(product.out, 'combo.consistency')).toBe(3 * 3);
    expect(product.d.consistencySkipped).toBeUndefined();
  });

  it('with no passage evidential: no consistency judgment, every pair 0, pairs in retrieval order', async () => {
    const { llm } = scriptedLlm({ ...routes(), 'combo.evidentiality': 'No' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 3, nShots: 0 })).answer(asqaExample('q', Q), ctx);
    const d = comboDecisionsSchema.parse(out.trace.decisions);
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(0);
    expect(d.compatibility.flat().every((c) => c === 0)).toBe(true);
    // The code's solver pairs i with i on an all-zero matrix; the stable sort keeps that order.
    expect(d.pairs).toEqual([0, 1, 2].map((i) => ({ retrieved: i, generated: i, compatibility: 0 })));
    expect(d.matching).toEqual([0, 1, 2]);
  });

  it('a generated passage dropped as empty leaves N pairs: the generated list repeats, as in the code', async () => {
    const { llm } = scriptedLlm({ ...routes(), 'combo.generate': (_r, i) => (i === 2 ? '' : GENERATED[i]) });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 3, nShots: 0 })).answer(asqaExample('q', Q), ctx);
    const d = comboDecisionsSchema.parse(out.trace.decisions);
    expect(d.generatedPassages).toHaveLength(2);
    expect(d.pairs).toHaveLength(3);
    expect(new Set(d.pairs!.map((p) => p.retrieved))).toEqual(new Set([0, 1, 2]));
    // Each distinct generated passage was judged once per evidential retrieved passage.
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(2 * 2);
    const prompt = callText(out.trace.llmCalls.at(-1)!);
    expect(prompt).toContain('Generated passage 3:');
    expect(prompt).toContain('Retrieved passage 3:');
  });

  it('embedding scorers need no judge calls', async () => {
    const { out, d } = await run({ evidentialityScorer: 'embedding', consistencyScorer: 'embedding' });
    expect(out.trace.llmCalls.map((c) => c.purpose)).toEqual(['combo.generate', 'combo.read']);
    expect(d.scorers!.consistency).toMatch(/^embedding-cosine/);
    for (const row of d.compatibility) for (const c of row) expect(c).toBeGreaterThanOrEqual(0);
  });

  it('an unreadable judgement is counted and scored 0.5', async () => {
    const { llm } = scriptedLlm({ ...routes(), 'combo.evidentiality': 'It depends.' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 0 })).answer(asqaExample('q', Q), ctx);
    const d = comboDecisionsSchema.parse(out.trace.decisions);
    expect(d.evidentiality).toEqual([0.5, 0.5]);
    expect(out.trace.parseFailures.filter((f) => f.purpose === 'combo.evidentiality')).toHaveLength(2);
  });

  it('reads "No, passage 1 …" as No, never as a score of 1', async () => {
    const { llm } = scriptedLlm({ ...routes(), 'combo.evidentiality': 'No, passage 1 is about something else.' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 0 })).answer(asqaExample('q', Q), ctx);
    expect(comboDecisionsSchema.parse(out.trace.decisions).evidentiality).toEqual([0, 0]);
    expect(out.trace.parseFailures).toEqual([]);
  });

  it('defaults to the paper\'s N = 10', () => {
    expect(comboOptionsSchema.parse({}).nPassages).toBe(10);
  });

  describe('graded compatibility', () => {
    const text = (r: NormalisedJudgeRequest) => r.messages.map((m) => m.content).join('\n');
    // Evidentiality: Ron 0.9, Percy 0.6, Bread 0.2. Consistency: 0.8 on the same topic, 0.3 otherwise.
    const judges: Record<string, JudgeResponder> = {
      'combo.evidentiality': (r) => {
        const t = topicOf(/Passage: (.*)/.exec(text(r))![1]);
        return t === 'Ron' ? 0.9 : t === 'Percy' ? 0.6 : 0.2;
      },
      'combo.consistency': (r) => {
        const a = /Passage A: (.*)/.exec(text(r))![1];
        const b = /Passage B: (.*)/.exec(text(r))![1];
        return topicOf(a) === topicOf(b) ? 0.8 : 0.3;
      },
    };
    async function graded(options: Record<string, unknown> = {}) {
      const { llm } = scriptedLlm(routes(), judges);
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
      const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 3, nShots: 1, ...options })).answer(
        asqaExample('q', Q),
        ctx,
      );
      return { out, d: comboDecisionsSchema.parse(out.trace.decisions) };
    }

    it('gated (default): 0 below evidentialThreshold, else P(consistent); consistency judged only above it', async () => {
      const { d, out } = await graded();
      const rpTopic = d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
      expect(d.evidentiality).toEqual(rpTopic.map((t) => (t === 'Ron' ? 0.9 : t === 'Percy' ? 0.6 : 0.2)));
      expect(d.consistencySkipped).toEqual(rpTopic.map((t) => t === 'Bread'));
      d.compatibility.forEach((row, i) =>
        row.forEach((c, j) => expect(c).toBe(rpTopic[i] === 'Bread' ? 0 : topicOf(GENERATED[j]) === rpTopic[i] ? 0.8 : 0.3)),
      );
      expect(out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(2 * 3);
      const strict = await graded({ evidentialThreshold: 0.7 });
      expect(strict.out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(1 * 3);
      const open = await graded({ evidentialThreshold: 0 });
      expect(open.out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(3 * 3);
      expect(open.d.consistencySkipped).toEqual([false, false, false]);
    });

    it('product: compatibility = P(consistent) · P(evidential) over all N² pairs', async () => {
      const { d, out } = await graded({ compatibility: 'product' });
      const rpTopic = d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
      d.compatibility.forEach((row, i) =>
        row.forEach((c, j) => expect(c).toBeCloseTo((topicOf(GENERATED[j]) === rpTopic[i] ? 0.8 : 0.3) * d.evidentiality[i], 12)),
      );
      const judged = out.trace.llmCalls.filter((c) => c.judge);
      expect(judged).toHaveLength(3 + 9);
      expect(judged.every((c) => c.judge!.mode === 'probability')).toBe(true);
      // The reader's pairs follow the product: Ron 0.72, Percy 0.48, Bread 0.06.
      expect(d.pairs!.map((p) => rpTopic[p.retrieved])).toEqual(['Ron', 'Percy', 'Bread']);
      expect(d.pairs!.map((p) => p.compatibility)).toEqual([0.9 * 0.8, 0.6 * 0.8, 0.2 * 0.8].map((x) => expect.closeTo(x, 12)));
    });

    it("orders the reader's pairs by compatibility, highest first (pairSort: retrieval keeps retrieval order)", async () => {
      // Percy's pair is more consistent than Ron's, so compatibility ranks it first; retrieval ranks Ron first.
      const percyFirst: Record<string, JudgeResponder> = {
        ...judges,
        'combo.consistency': (r) => {
          const a = topicOf(/Passage A: (.*)/.exec(text(r))![1]);
          const b = topicOf(/Passage B: (.*)/.exec(text(r))![1]);
          return a !== b ? 0.1 : a === 'Percy' ? 0.95 : 0.7;
        },
      };
      async function order(options: Record<string, unknown>) {
        const { llm } = scriptedLlm(routes(), percyFirst);
        const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
        const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 3, nShots: 0, ...options })).answer(asqaExample('q', Q), ctx);
        const prompt = callText(out.trace.llmCalls.at(-1)!);
        const slots = [1, 2, 3].map((k) => {
          const g = new RegExp(`Generated passage ${k}: (.*)`).exec(prompt)![1];
          const r = new RegExp(`Retrieved passage ${k}: (.*)`).exec(prompt)![1];
          expect(prompt.indexOf(`Generated passage ${k}:`)).toBeLessThan(prompt.indexOf(`Retrieved passage ${k}:`));
          return `${topicOf(g)}/${topicOf(r)}`;
        });
        return { slots, d: comboDecisionsSchema.parse(out.trace.decisions) };
      }
      const sorted = await order({});
      expect(sorted.slots.slice(0, 2)).toEqual(['Percy/Percy', 'Ron/Ron']);
      expect(sorted.slots[2]).toMatch(/\/Bread$/);
      expect(sorted.d.pairs!.map((p) => p.compatibility)).toEqual([0.95, 0.7, 0]);
      const byRetrieval = await order({ pairSort: 'retrieval' });
      const retrievalTopics = byRetrieval.d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text));
      expect(byRetrieval.slots.map((s) => s.split('/')[1])).toEqual(retrievalTopics);
      expect(retrievalTopics).not.toEqual(['Percy', 'Ron', 'Bread']);
    });

    it('hungarian and rank matching now differ, and hungarian scores higher', async () => {
      const h = await graded({ matching: 'hungarian' });
      const r = await graded({ matching: 'rank' });
      expect(h.d.matching).not.toEqual(r.d.matching);
      expect(r.d.matching).toEqual([0, 1, 2]);
      expect(h.d.matchingScore!).toBeGreaterThan(r.d.matchingScore!);
      // Hungarian pairs each retrieved passage with the generated one on its topic.
      const rpTopic = h.d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
      h.d.matching.forEach((j, i) => expect(topicOf(GENERATED[j])).toBe(rpTopic[i]));
    });

    it('skipEvidentialBelow (retired) is refused with a line naming its replacement', () => {
      expect(() => parsePipelineOptions('combo', { skipEvidentialBelow: 0.5 })).toThrow(
        /^pipeline combo: option skipEvidentialBelow: retired: use 'compatibility: gated' .* or 'compatibility: product'$/,
      );
    });
  });
});
