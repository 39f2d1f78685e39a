import { describe, expect, it } from 'vitest';
import { divaDecisionsSchema } from '../../../src/pipelines/diva/decisions';
import { DivaPipeline, usefulness } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { DivaDecisions } from '../../../src/pipelines/diva/decisions';
import {
  asqaExample,
  FakeEmbedder,
  FakeRetriever,
  fixedDemos,
  judgeField,
  lastField,
  passage,
  scriptedLlm,
  type JudgeResponder,
  type Responder,
  callText,
} from '../fakes';

const corpus = [
  passage('w1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('w2', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
  passage('w3', 'Cooking', 'A recipe for bread needs flour, water and yeast.'),
];
const AQ = 'Who played the Weasley brothers in Harry Potter?';
const DIVERSIFY =
  'Ambiguity type: **Subject**\nReason: There are several Weasley brothers.\nInterpretations:\n1. Who played Ron Weasley?\n2. Who played Percy Weasley?\n3. Who played Bill Weasley?';

async function run(
  verify: Responder | string,
  options: Record<string, unknown> = {},
  extra: Partial<PipelineContext> = {},
  judge?: JudgeResponder,
) {
  const { llm } = scriptedLlm(
    {
      'diva.diversify': DIVERSIFY,
      'diva.verify': verify,
      'diva.generate.rag': 'Ron was played by Rupert Grint and Percy by Chris Rankin.',
      'diva.generate.closed-book': 'Several actors played the Weasley brothers.',
    },
    judge ? { 'diva.verify': judge } : undefined,
  );
  const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos(), ...extra };
  const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 2, ...options })).answer(asqaExample('q', AQ), ctx);
  return { out, d: divaDecisionsSchema.parse(out.trace.decisions) };
}

describe('Diva', () => {
  it('labels verdicts Useful / PartialUseful / Useless', () => {
    expect(usefulness([true, true])).toBe('Useful');
    expect(usefulness([true, false])).toBe('PartialUseful');
    expect(usefulness([false, false])).toBe('Useless');
    expect(usefulness([])).toBe('Useless');
  });

  it('routes Useful retrieval to the RAG prompt', async () => {
    const { d, out } = await run('Yes');
    expect(d).toMatchObject({ ambiguityType: 'subject', usefulness: 'Useful', route: 'rag', verdicts: [true, true, true] });
    expect(d.ambiguityReason).toBe('There are several Weasley brothers.');
    expect(d.interpretations).toEqual(['Who played Ron Weasley?', 'Who played Percy Weasley?', 'Who played Bill Weasley?']);
    const last = out.trace.llmCalls.at(-1)!;
    expect(last.purpose).toBe('diva.generate.rag');
    expect(callText(last)).toContain('Context:');
    expect(last.params).toMatchObject({ temperature: 0.3, maxTokens: 300 });
    expect(out.output).toContain('Rupert Grint');
  });

  it('routes PartialUseful retrieval to the RAG prompt', async () => {
    const { d, out } = await run((r) => (lastField(r, 'Question').includes('Bill') ? 'No.' : 'Yes, passage 1.'));
    expect(d).toMatchObject({ usefulness: 'PartialUseful', route: 'rag', verdicts: [true, true, false] });
    expect(out.trace.llmCalls.at(-1)!.purpose).toBe('diva.generate.rag');
  });

  it('routes Useless retrieval to the closed-book prompt', async () => {
    const { d, out } = await run('No');
    expect(d).toMatchObject({ usefulness: 'Useless', route: 'closed-book' });
    const last = out.trace.llmCalls.at(-1)!;
    expect(last.purpose).toBe('diva.generate.closed-book');
    expect(callText(last)).not.toContain('Context:');
    expect(callText(last)).not.toContain('Rupert Grint played Ron');
  });

  it('adaptive off always uses RAG', async () => {
    const { d } = await run('No', { adaptive: false });
    expect(d).toMatchObject({ usefulness: 'Useless', route: 'rag' });
  });

  it('retrieves per interpretation and keeps the top passages by mean similarity', async () => {
    const { d, out } = await run('Yes');
    const perQuery = out.trace.retrievals.filter((r) => r.purpose === 'diva.retrieve');
    expect(perQuery.map((r) => r.query)).toEqual(d.interpretations);
    expect(d.passageIds).toHaveLength(2);
    expect(d.passageIds).not.toContain('w3');
    expect(d.passageScores![0]).toBeGreaterThanOrEqual(d.passageScores![1]);
    // One verification call per interpretation.
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'diva.verify')).toHaveLength(3);
  });

  it('an unparseable diversification falls back to the question itself, counted', async () => {
    const { llm } = scriptedLlm({ 'diva.diversify': 'Hello!', 'diva.verify': 'yes', 'diva.generate.rag': 'An answer.' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1 })).answer(asqaExample('q', AQ), ctx);
    const d = divaDecisionsSchema.parse(out.trace.decisions);
    expect(d.interpretations).toEqual([AQ]);
    expect(d.ambiguityType).toBe('none');
    expect(out.trace.parseFailures.map((f) => f.fallback)).toEqual(["ambiguity type 'none'", 'the question itself as the only interpretation']);
  });

  it('an empty retrieval is Useless without verification calls and goes closed-book', async () => {
    const { d, out } = await run('Yes', {}, { retriever: new FakeRetriever([]) });
    expect(d).toMatchObject({ usefulness: 'Useless', route: 'closed-book', passageIds: [] });
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'diva.verify')).toHaveLength(0);
    expect(out.trace.warnings!.length).toBeGreaterThan(0);
  });

  it('an unreadable verdict counts as No and is recorded', async () => {
    const { d, out } = await run('Perhaps.');
    expect(d.usefulness).toBe('Useless');
    expect(out.trace.parseFailures.filter((f) => f.purpose === 'diva.verify')).toHaveLength(3);
  });

  it('drops the cut-off last interpretation of a reply truncated at max tokens', async () => {
    const { llm } = scriptedLlm({
      'diva.diversify': () => ({
        text: 'Ambiguity type: subject\nReason: r\nInterpretations:\n1. Who played Ron Weasley?\n2. Who played Percy Wea',
        finishReason: 'length',
        usage: { promptTokens: 10, completionTokens: 20 },
      }),
      'diva.verify': 'Yes',
      'diva.generate.rag': 'An answer.',
    });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 0 })).answer(asqaExample('q', AQ), ctx);
    expect(divaDecisionsSchema.parse(out.trace.decisions).interpretations).toEqual(['Who played Ron Weasley?']);
    expect(out.trace.warnings!.some((w) => /truncated/.test(w.message))).toBe(true);
  });

  describe('graded retrieval verification', () => {
    // P(yes) per interpretation: Ron 0.8, Percy 0.45, Bill 0.1.
    const judge: JudgeResponder = (r) => {
      const q = judgeField(r, 'Question');
      return q.includes('Ron') ? 0.8 : q.includes('Percy') ? 0.45 : 0.1;
    };

    it('records P(yes) per interpretation and the verifyThreshold decides the label and the route', async () => {
      const at = async (verifyThreshold: number) => (await run('unused', { verifyThreshold }, {}, judge)).d;
      const mid = await at(0.5);
      expect(mid.pAnswered).toEqual([0.8, 0.45, 0.1]);
      expect(mid).toMatchObject({ verdicts: [true, false, false], usefulness: 'PartialUseful', route: 'rag' });
      expect(await at(0.05)).toMatchObject({ verdicts: [true, true, true], usefulness: 'Useful', route: 'rag' });
      expect(await at(0.9)).toMatchObject({ verdicts: [false, false, false], usefulness: 'Useless', route: 'closed-book' });
    });

    it('judges with the labels Yes/No in probability mode', async () => {
      const { out } = await run('unused', {}, {}, judge);
      const calls = out.trace.llmCalls.filter((c) => c.purpose === 'diva.verify');
      expect(calls).toHaveLength(3);
      for (const c of calls) expect(c.judge).toMatchObject({ labels: ['Yes', 'No'], mode: 'probability' });
      expect(calls.map((c) => c.judge!.p)).toEqual([0.8, 0.45, 0.1]);
    });

    it('rejects a verifyThreshold outside [0, 1], naming the option', async () => {
      const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
      expect(() => parsePipelineOptions('diva', { verifyThreshold: 2 })).toThrow(/pipeline diva: options?[ .]verifyThreshold: must be ≤ 1/);
    });

    it('long-form generation demos show DQ/DA pairs before the long answer, as RAC does', async () => {
      const { out } = await run('Yes');
      const gen = out.trace.llmCalls.at(-1)!;
      const demoTurn = gen.messages.find((m) => m.role === 'assistant')!.content;
      expect(demoTurn).toMatch(/^DQ 1: .+\nDA 1: .+\n[\s\S]*Answer: /);
      expect(gen.messages[0].content).toContain('"DQ 1:"');
    });
  });

  it('the diversification prompt shows an unambiguous example typed none before the ambiguous one (option to drop it)', async () => {
    const turns = async (options: Record<string, unknown>) => {
      const { out } = await run('Yes', options);
      const call = out.trace.llmCalls.find((c) => c.purpose === 'diva.diversify')!;
      return call.messages.filter((m) => m.role === 'assistant').map((m) => m.content.split('\n')[0]);
    };
    expect(await turns({})).toEqual(['Ambiguity type: none', 'Ambiguity type: time']);
    expect(await turns({ diversifyUnambiguousExample: false })).toEqual(['Ambiguity type: time']);
    expect(await turns({ diversifyExample: false })).toEqual([]);
    // The unambiguous example's one interpretation is the question itself.
    const { out } = await run('Yes');
    const shown = out.trace.llmCalls.find((c) => c.purpose === 'diva.diversify')!.messages;
    const [question, reply] = [shown[1].content.replace(/^Question: /, ''), shown[2].content];
    expect(reply.endsWith(`Interpretations:\n1. ${question}`)).toBe(true);
  });
});
