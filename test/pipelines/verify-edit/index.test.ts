import { describe, expect, it } from 'vitest';
import { veDecisionsSchema } from '../../../src/pipelines/verify-edit/decisions';
import { VerifyEditPipeline } from '../../../src/pipelines/verify-edit';
import { verifyEditOptionsSchema } from '../../../src/pipelines/verify-edit/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { VeDecisions } from '../../../src/pipelines/verify-edit/decisions';
import { AmbiqaError } from '../../../src/errors';
import {
  asqaExample,
  FakeEmbedder,
  FakeRetriever,
  fixedDemos,
  hotpotDemos,
  hotpotExample,
  lastField,
  passage,
  scriptedLlm,
  type Responder, callText } from '../fakes';

const corpus = [
  passage('j1', 'Jolyon Palmer', 'Jolyon Palmer was born on 20 January 1991. He later drove for the Renault team in Formula One racing.'),
  passage('j2', '2014 Bahrain GP2 Series round', 'The 2014 Bahrain GP2 round was held in April 2014. Jolyon Palmer came in third.'),
  passage('j3', 'Bahrain', 'Bahrain is an island country in the Persian Gulf.'),
];
const Q = 'This British racing driver came in third at the 2014 Bahrain GP2 round and was born in what year?';

const RATIONALE = 'The driver who came third in Bahrain in 2014 was Jolyon Palmer. Jolyon Palmer was born in 1989.';

/** CoT samples whose answers are `answers[sampleIndex]`. */
function samplesWith(answers: string[]): Responder {
  return (_request, i) => `${RATIONALE} So the answer is: ${answers[i]}.`;
}

function ctxFor(routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}) {
  const { llm, provider } = scriptedLlm({
    've.verifying-question': (r) =>
      lastField(r, 'Step').includes('third') ? 'Who came in third at the 2014 Bahrain GP2 round?' : 'When was Jolyon Palmer born?',
    've.verifying-answer': (r) =>
      lastField(r, 'Question').startsWith('When') ? 'Jolyon Palmer was born on 20 January 1991.' : 'Jolyon Palmer came in third.',
    've.answer': 'So the answer is: 1991.',
    ...routes,
  });
  const ctx: PipelineContext = {
    llm,
    retriever: new FakeRetriever(corpus),
    embedder: new FakeEmbedder(),
    demos: fixedDemos(hotpotDemos),
    ...extra,
  };
  return { ctx, provider };
}

async function run(options: Record<string, unknown>, routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}) {
  const { ctx, provider } = ctxFor(routes, extra);
  const out = await new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 2, ...options })).answer(hotpotExample('h', Q), ctx);
  return { out, d: veDecisionsSchema.parse(out.trace.decisions), provider };
}

describe('Verify-and-Edit', () => {
  it('defaults the threshold to ⌈n/2⌉', () => {
    expect(verifyEditOptionsSchema.parse({}).threshold).toBe(3);
    expect(verifyEditOptionsSchema.parse({ n: 4 }).threshold).toBe(2);
    expect(verifyEditOptionsSchema.parse({ n: 7 }).threshold).toBe(4);
    expect(verifyEditOptionsSchema.parse({ n: 1 }).threshold).toBe(1);
    expect(verifyEditOptionsSchema.parse({ n: 5, threshold: 5 }).threshold).toBe(5);
  });

  it('rejects threshold > n, naming the option', () => {
    const r = verifyEditOptionsSchema.safeParse({ n: 3, threshold: 4 });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0].path).toEqual(['threshold']);
    expect(r.error!.issues[0].message).toMatch(/≤ n \(3\)/);
  });

  it('edits exactly when the majority has fewer votes than the threshold', async () => {
    // Majority "1989" with 2 of 5 votes.
    const answers = ['1989', '1989', '1990', '1991', '1992'];
    for (const threshold of [0, 1, 2, 3, 4, 5]) {
      const { d, out } = await run({ n: 5, threshold }, { 've.cot': samplesWith(answers) });
      expect(d.consistency).toBeCloseTo(2 / 5);
      expect(d.votes).toEqual({ '1989': 2, '1990': 1, '1991': 1, '1992': 1 });
      const shouldEdit = 2 < threshold;
      expect(d.edited).toBe(shouldEdit);
      if (shouldEdit) {
        expect(out.answer).toBe('1991');
        expect(d.edits).toHaveLength(2);
        expect(out.trace.llmCalls.map((c) => c.purpose)).toEqual([
          've.cot',
          've.verifying-question',
          've.verifying-answer',
          've.verifying-question',
          've.verifying-answer',
          've.answer',
        ]);
      } else {
        expect(out.answer).toBe('1989');
        expect(d.edits).toEqual([]);
        expect(out.trace.summary.llmCalls).toBe(1);
        expect(out.trace.retrievals).toEqual([]);
      }
    }
  });

  it('keeps a consistent majority with the default threshold and edits an inconsistent one', async () => {
    const keep = await run({}, { 've.cot': samplesWith(['1989', '1989', '1989', '1991', '1990']) });
    expect(keep.d.edited).toBe(false);
    expect(keep.d.threshold).toBe(3);
    const edit = await run({}, { 've.cot': samplesWith(['1989', '1989', '1990', '1991', '1992']) });
    expect(edit.d.edited).toBe(true);
  });

  it('records each verifying question with its retrieved sentences and the edited rationale', async () => {
    const { d, out } = await run({ topSentences: 2 }, { 've.cot': samplesWith(['1989', '1989', '1990', '1991', '1992']) });
    expect(d.majorityRationale).toBe(RATIONALE);
    expect(d.edits[1]).toMatchObject({
      sentence: 'Jolyon Palmer was born in 1989.',
      verifyingQuestion: 'When was Jolyon Palmer born?',
      answer: 'Jolyon Palmer was born on 20 January 1991.',
    });
    expect(d.edits[1].retrievedSentences).toHaveLength(2);
    expect(d.edits[1].retrievedSentences[0]).toContain('was born on 20 January 1991');
    expect(d.editedRationale).toBe('Jolyon Palmer came in third. Jolyon Palmer was born on 20 January 1991.');
    // The final prompt shows the edited rationale, and the re-answer is greedy.
    const last = out.trace.llmCalls.at(-1)!;
    expect(callText(last)).toContain('born on 20 January 1991');
    expect(last.params.temperature).toBe(0);
    expect(out.trace.retrievals.map((r) => r.query)).toEqual([
      'Who came in third at the 2014 Bahrain GP2 round?',
      'When was Jolyon Palmer born?',
    ]);
  });

  it('samples n chains at the given temperature in one call', async () => {
    const { out } = await run({ n: 5, temperature: 0.7, threshold: 0 }, { 've.cot': samplesWith(['a', 'a', 'a', 'a', 'a']) });
    const call = out.trace.llmCalls[0];
    expect(call.params).toMatchObject({ n: 5, temperature: 0.7 });
    expect(call.completions).toHaveLength(5);
  });

  it('a sample without an answer abstains and is counted as a parse failure', async () => {
    const replies = ['So the answer is: 1991.', 'I cannot tell', 'So the answer is: 1991', 'hmm', 'The answer is 1990'];
    const { d, out } = await run({ threshold: 2 }, { 've.cot': (_r, i) => replies[i] });
    expect(out.trace.parseFailures.filter((f) => f.purpose === 've.cot')).toHaveLength(2);
    expect(d.votes).toEqual({ '1991': 2, '1990': 1 });
    expect(d.consistency).toBeCloseTo(2 / 5);
    expect(d.edited).toBe(false);
  });

  it('an empty retrieval keeps the sentence and records a warning', async () => {
    const { d, out } = await run({}, { 've.cot': samplesWith(['1', '2', '3', '4', '5']) }, { retriever: new FakeRetriever([]) });
    expect(d.edited).toBe(true);
    expect(d.edits.every((e) => e.answer === e.sentence)).toBe(true);
    expect(out.trace.warnings!.filter((w) => w.purpose === 've.retrieve')).toHaveLength(2);
  });

  it('refuses long-form datasets with a clear error', async () => {
    const { ctx } = ctxFor({});
    const p = new VerifyEditPipeline(verifyEditOptionsSchema.parse({}));
    await expect(p.answer(asqaExample('a', 'Who won?'), ctx)).rejects.toThrow(AmbiqaError);
  });

  it('FEVER claims vote over labels', async () => {
    const replies = ['So the answer is: SUPPORTS.', 'So the answer is: supported', 'So the answer is: REFUTES', 'So the answer is: True', 'Not enough info. So the answer is: NOT ENOUGH INFO'];
    const { ctx } = ctxFor({ 've.cot': (_r, i) => replies[i] });
    const out = await new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 0 })).answer(
      { id: 'f', dataset: 'fever', question: 'Reg Watson is a producer.', answers: [], qaPairs: [], longAnswers: [], passages: [] },
      ctx,
    );
    const d = veDecisionsSchema.parse(out.trace.decisions);
    expect(d.votes).toEqual({ supports: 3, refutes: 1, 'not enough info': 1 });
    expect(out.answer).toBe('SUPPORTS');
  });

  describe('consistency: logprob', () => {
    // Three samples say 1989 but each is unlikely (log P = -3); 1991 and 1990 are likely (-1).
    const answers = ['1989', '1989', '1989', '1991', '1990'];
    const logprobs = [-3, -3, -3, -1, -1];
    const weighted: Responder = (_r, i) => ({
      text: `${RATIONALE} So the answer is: ${answers[i]}.`,
      finishReason: 'stop',
      usage: { promptTokens: 10, completionTokens: 10 },
      logprob: logprobs[i],
    });

    it('weights each vote by the sample probability, so the same samples edit under logprob but not under vote', async () => {
      const vote = await run({ consistency: 'vote' }, { 've.cot': weighted });
      expect(vote.d).toMatchObject({ consistencyMode: 'vote', edited: false, majorityAnswer: '1989' });
      expect(vote.d.consistency).toBeCloseTo(3 / 5);

      const lp = await run({ consistency: 'logprob' }, { 've.cot': weighted });
      const w = [Math.exp(-2), Math.exp(-2), Math.exp(-2), 1, 1];
      const total = w.reduce((a, b) => a + b, 0);
      expect(lp.d.consistencyMode).toBe('logprob');
      expect(lp.d.majorityAnswer).toBe('1991');
      expect(lp.d.weightedVotes!['1989']).toBeCloseTo((5 * 3 * Math.exp(-2)) / total, 10);
      expect(lp.d.weightedVotes!['1991']).toBeCloseTo(5 / total, 10);
      expect(lp.d.consistency).toBeCloseTo(1 / total, 10);
      // 5/total ≈ 2.08 weighted votes < threshold 3: edit.
      expect(lp.d.edited).toBe(true);
      // The samples were asked for log-probabilities.
      expect(lp.provider.received[0].request.logprobs).toBe(true);
      expect(vote.provider.received[0].request.logprobs).toBeUndefined();
    });

    it('falls back to the vote, with a warning, when the provider returns no log-probabilities', async () => {
      const { d, out } = await run({ consistency: 'logprob' }, { 've.cot': samplesWith(answers) });
      expect(d.consistencyMode).toBe('vote');
      expect(d.edited).toBe(false);
      expect(out.trace.warnings!.some((x) => /log-probabilities for 0 of 5 samples/.test(x.message))).toBe(true);
    });

    it('rejects another consistency mode, naming the option', async () => {
      const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
      expect(() => parsePipelineOptions('verify-edit', { consistency: 'majority' })).toThrow(/options?[ .]consistency: must be one of "vote", "logprob"/);
    });
  });
});

