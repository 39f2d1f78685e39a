import { describe, expect, it } from 'vitest';
import { ComboPipeline } from '../../src/pipelines/combo';
import { comboOptionsSchema } from '../../src/pipelines/combo/options';
import type { PipelineContext } from '../../src/pipelines/types';
import type { ComboDecisions } from '../../src/trace/types';
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
} from './fakes';
import type { NormalisedJudgeRequest } from '../../src/llm/types';

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
  return { out, d: out.trace.decisions as ComboDecisions };
}

describe('COMBO', () => {
  it('scores, builds the compatibility matrix and picks the max-total matching', async () => {
    const { d } = await run();
    expect(d.generatedPassages).toEqual(GENERATED);
    expect(d.retrievedPassageIds).toHaveLength(3);
    const rpTopic = d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
    expect(d.evidentiality).toEqual(rpTopic.map((t) => (t === 'Bread' ? 0 : 1)));
    d.consistency.forEach((row, i) => row.forEach((c, j) => expect(c).toBe(topicOf(GENERATED[j]) === rpTopic[i] ? 1 : 0)));
    d.compatibility.forEach((row, i) => row.forEach((c, j) => expect(c).toBe(d.consistency[i][j] * d.evidentiality[i])));
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
    const ronIndex = d.retrievedPassageIds.indexOf('r-ron');
    const block = prompt.split('\n\n').find((b) => b.includes('Rupert Grint played Ron in the films'))!;
    expect(block).toBe(
      `Generated passage ${ronIndex + 1}: Ron was played by Rupert Grint.\nRetrieved passage ${ronIndex + 1}: Rupert Grint; Rupert Grint played Ron in the films.`,
    );
    expect(out.output).toContain('Rupert Grint');
  });

  it('makes N evidentiality calls and N×N consistency calls, fewer when skipping non-evidential rows', async () => {
    const count = (o: Awaited<ReturnType<typeof run>>['out'], p: string) => o.trace.llmCalls.filter((c) => c.purpose === p).length;
    const full = await run();
    expect(count(full.out, 'combo.evidentiality')).toBe(3);
    expect(count(full.out, 'combo.consistency')).toBe(9);
    const skip = await run({ skipEvidentialBelow: 0.5 });
    expect(count(skip.out, 'combo.consistency')).toBe(6);
    expect(skip.d.consistencySkipped).toEqual(skip.d.evidentiality.map((e) => e === 0));
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
    const d = out.trace.decisions as ComboDecisions;
    expect(d.evidentiality).toEqual([0.5, 0.5]);
    expect(out.trace.parseFailures.filter((f) => f.purpose === 'combo.evidentiality')).toHaveLength(2);
  });

  it('reads "No, passage 1 …" as No, never as a score of 1', async () => {
    const { llm } = scriptedLlm({ ...routes(), 'combo.evidentiality': 'No, passage 1 is about something else.' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 0 })).answer(asqaExample('q', Q), ctx);
    expect((out.trace.decisions as ComboDecisions).evidentiality).toEqual([0, 0]);
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
      return { out, d: out.trace.decisions as ComboDecisions };
    }

    it('compatibility = P(consistent) · P(evidential) from judge probabilities', async () => {
      const { d, out } = await graded();
      const rpTopic = d.retrievedPassageIds.map((id) => topicOf(corpus.find((p) => p.id === id)!.text)!);
      expect(d.evidentiality).toEqual(rpTopic.map((t) => (t === 'Ron' ? 0.9 : t === 'Percy' ? 0.6 : 0.2)));
      d.compatibility.forEach((row, i) =>
        row.forEach((c, j) => expect(c).toBeCloseTo((topicOf(GENERATED[j]) === rpTopic[i] ? 0.8 : 0.3) * d.evidentiality[i], 12)),
      );
      const judged = out.trace.llmCalls.filter((c) => c.judge);
      expect(judged).toHaveLength(3 + 9);
      expect(judged.every((c) => c.judge!.mode === 'probability')).toBe(true);
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

    it('skipEvidentialBelow skips the consistency judgments of weakly evidential passages', async () => {
      const { d, out } = await graded({ skipEvidentialBelow: 0.5 });
      expect(d.consistencySkipped).toEqual(d.evidentiality.map((e) => e < 0.5));
      expect(out.trace.llmCalls.filter((c) => c.purpose === 'combo.consistency')).toHaveLength(6);
      d.compatibility.forEach((row, i) => {
        if (d.consistencySkipped![i]) expect(row).toEqual([0, 0, 0]);
      });
    });
  });
});

