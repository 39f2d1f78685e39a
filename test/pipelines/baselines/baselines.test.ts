import { describe, expect, it } from 'vitest';
import { baselineDecisionsSchema, selfConsistencyDecisionsSchema } from '../../../src/pipelines/baselines/decisions';
import { createPipeline } from '../../../src/pipelines/registry';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { Trace } from '../../../src/trace/types';
import type { BaselineDecisions, SelfConsistencyDecisions } from '../../../src/pipelines/baselines/decisions';
import { asqaExample, FakeRetriever, fixedDemos, hotpotDemos, hotpotExample, passage, scriptedLlm, type Responder, callText } from '../fakes';

const corpus = [
  passage('p1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('p2', 'Chris Rankin', 'Chris Rankin played Percy Weasley.'),
];

function ctx(routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}): PipelineContext {
  return { llm: scriptedLlm(routes).llm, retriever: new FakeRetriever(corpus), demos: fixedDemos(), ...extra };
}

describe('baselines', () => {
  it('closed-book: one call, few-shot, long answer for ASQA', async () => {
    const out = await createPipeline('closed-book', { nShots: 2 }).answer(
      asqaExample('q', 'Who played the Weasleys?'),
      ctx({ 'closed-book.answer': 'Answer: Rupert Grint played Ron and Chris Rankin played Percy.' }),
    );
    expect(out.output).toBe('Rupert Grint played Ron and Chris Rankin played Percy.');
    expect(out.answer).toBeUndefined();
    expect(out.trace.summary.llmCalls).toBe(1);
    expect(out.trace.demoIds).toEqual(['d1', 'd2']);
    const prompt = callText(out.trace.llmCalls[0]);
    // Nearest demo last, right above the question.
    expect(prompt.indexOf('Eiffel')).toBeLessThan(prompt.indexOf('Hallelujah'));
    expect(prompt).not.toContain('Context:');
  });

  it('vanilla-rag: the top passages in one prompt', async () => {
    const out = await createPipeline('vanilla-rag', { nShots: 0, nPassages: 1, poolSize: 1 }).answer(
      asqaExample('q', 'Who played Ron Weasley?'),
      ctx({ 'vanilla-rag.answer': 'Rupert Grint played Ron Weasley in the films.' }),
    );
    expect(baselineDecisionsSchema.parse(out.trace.decisions).passageIds).toEqual(['p1']);
    expect(callText(out.trace.llmCalls[0])).toContain('[1] Rupert Grint; Rupert Grint played Ron');
    expect(out.trace.retrievals).toHaveLength(1);
  });

  it('cot: rationale and short answer', async () => {
    const out = await createPipeline('cot', { nShots: 2 }).answer(
      hotpotExample('h', 'Which river flows through Paris?'),
      ctx({ 'cot.answer': 'Paris is the capital of France. The Seine flows through it. So the answer is: the Seine.' }, { demos: fixedDemos(hotpotDemos) }),
    );
    expect(out.answer).toBe('the Seine');
    expect(baselineDecisionsSchema.parse(out.trace.decisions).rationale).toBe('Paris is the capital of France. The Seine flows through it.');
    expect(callText(out.trace.llmCalls[0])).toContain('So the answer is: Seine.');
  });

  it('cot-sc: majority vote over n samples with consistency', async () => {
    const answers = ['Seine', 'the Seine', 'Loire', 'Seine.', 'Rhone'];
    const out = await createPipeline('cot-sc', { nShots: 0 }).answer(
      hotpotExample('h', 'Which river flows through Paris?'),
      ctx({ 'cot-sc.sample': (_r, i) => `Because. So the answer is: ${answers[i]}` }),
    );
    const d = selfConsistencyDecisionsSchema.parse(out.trace.decisions);
    expect(d.votes).toEqual({ seine: 3, loire: 1, rhone: 1 });
    expect(d.consistency).toBeCloseTo(0.6);
    expect(out.answer).toBe('Seine');
    expect(out.trace.summary.samples).toBe(5);
  });

  it('cot-sc on long answers picks the medoid sample', async () => {
    const answers = ['Ron was Rupert Grint and Percy was Chris Rankin.', 'Ron was Rupert Grint; Percy, Chris Rankin.', 'Bread is tasty.'];
    const out = await createPipeline('cot-sc', { nShots: 0, n: 3 }).answer(
      asqaExample('q', 'Who played the Weasleys?'),
      ctx({ 'cot-sc.sample': (_r, i) => `Two readings. So the answer is: ${answers[i]}` }),
    );
    expect(out.output).toMatch(/^Ron was Rupert Grint/);
  });

  it('an unreadable FEVER label is counted and falls back to NOT ENOUGH INFO', async () => {
    const out = await createPipeline('closed-book', { nShots: 0 }).answer(
      { id: 'f', dataset: 'fever', question: 'The Seine flows through Paris.', answers: [], qaPairs: [], longAnswers: [], passages: [] },
      ctx({ 'closed-book.answer': 'Hmm.' }),
    );
    expect(out.answer).toBe('NOT ENOUGH INFO');
    expect(out.trace.parseFailures).toHaveLength(1);
  });

  it('a question with no demos available runs zero-shot and says so', async () => {
    const out = await createPipeline('closed-book', { nShots: 2 }).answer(
      asqaExample('q', 'Who played the Weasleys?'),
      ctx({ 'closed-book.answer': 'Several actors.' }, { demos: fixedDemos([]) }),
    );
    expect(out.trace.warnings).toEqual([expect.objectContaining({ message: expect.stringMatching(/only 0 of 2/), fallback: 'zero-shot prompt' })]);
    expect(out.trace.summary.warnings).toBe(1);
  });

  it('the trace is plain JSON with the cost summary', async () => {
    const out = await createPipeline('vanilla-rag', { nShots: 1 }).answer(
      asqaExample('q', 'Who played Ron Weasley?'),
      ctx({ 'vanilla-rag.answer': 'Rupert Grint.' }),
    );
    const back = JSON.parse(JSON.stringify(out.trace)) as Trace;
    expect(back).toEqual(out.trace);
    expect(back.summary.llmCalls).toBe(1);
    expect(back.summary.promptTokens).toBeGreaterThan(0);
    expect(back.summary.completionTokens).toBeGreaterThan(0);
    expect(back.summary.seconds).toBeGreaterThanOrEqual(0);
    expect(back.options).toMatchObject({ nShots: 1, nPassages: 5 });
    expect(back.llm).toEqual({ provider: 'scripted', model: 'scripted-model' });
  });
});
