import { describe, expect, it } from 'vitest';
import { veDecisionsSchema } from '../../../src/pipelines/verify-edit/decisions';
import { VerifyEditPipeline } from '../../../src/pipelines/verify-edit';
import { verifyEditOptionsSchema } from '../../../src/pipelines/verify-edit/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { VeDecisions } from '../../../src/pipelines/verify-edit/decisions';
import { AmbiqaError } from '../../../src/errors';
import { WRITTEN_DEMOS } from '../../../src/pipelines/verify-edit/demos';
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
    've.answer-logprob': (r) => `So the answer is: ${/So the answer is: ([^.]+)/.exec(lastField(r, 'Reasoning'))?.[1] ?? 'unknown'}.`,
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
        // The samples, and the kept answer's log-probability (auc_logprob).
        expect(out.trace.llmCalls.map((c) => c.purpose)).toEqual(['ve.cot', 've.answer-logprob']);
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

  /**
   * CoT samples with scripted log-probabilities: sample i answers `answers[i]` after the rationale
   * `rationales[i]` (default RATIONALE), with `tokens[i]` completion tokens whose mean
   * log-probability is `means[i]` (so its probability as the code computes it is exp(means[i])).
   */
  function scored(answers: string[], means: number[], tokens: number[] = answers.map(() => 10), rationales?: string[]): Responder {
    return (_r, i) => ({
      text: `${rationales?.[i] ?? RATIONALE} So the answer is: ${answers[i]}.`,
      finishReason: 'stop',
      usage: { promptTokens: 10, completionTokens: tokens[i] },
      logprob: means[i] * tokens[i],
    });
  }

  describe('the rationale edited', () => {
    // 1989 has 2 of 5 votes (edited at threshold 3). Sample 0 has the larger summed log-probability
    // (−6 over 6 tokens), sample 2 the larger mean (−10 over 20 tokens: −0.5 per token), which is
    // what the released code ranks by: exp(mean token log-probability).
    const answers = ['1989', '1990', '1989', '1991', '1992'];
    const rationales = ['Palmer was born in 1989 says sample zero.', 'r1', 'Palmer was born in 1989 says sample two.', 'r3', 'r4'];
    const cot = scored(answers, [-1, -0.2, -0.5, -0.2, -0.2], [6, 10, 20, 10, 10], rationales);

    it('is the most probable sample giving the majority answer (by mean token log-probability), not the first', async () => {
      const { d, out, provider } = await run({}, { 've.cot': cot });
      expect(d).toMatchObject({ edited: true, majorityAnswer: '1989', editSample: 'most-probable', editedSampleIndex: 2 });
      expect(d.majorityRationale).toBe(rationales[2]);
      expect(d.edits[0].sentence).toBe(rationales[2]);
      expect(d.sampleProbabilities![2]).toBeCloseTo(Math.exp(-0.5), 12);
      // Samples more probable than sample 2 but giving other answers are not candidates.
      expect(d.sampleProbabilities![1]).toBeGreaterThan(d.sampleProbabilities![2]!);
      expect(provider.received[0].request.logprobs).toBe(true);
      expect(out.trace.warnings ?? []).toEqual([]);
    });

    it('is the first majority sample with editSample: first', async () => {
      const { d } = await run({ editSample: 'first' }, { 've.cot': cot });
      expect(d).toMatchObject({ editSample: 'first', editedSampleIndex: 0, majorityRationale: rationales[0] });
    });

    it('falls back to the first majority sample, with a warning, when the provider gives no log-probabilities', async () => {
      const { d, out } = await run({}, { 've.cot': samplesWith(answers) });
      expect(d).toMatchObject({ editSample: 'first', editedSampleIndex: 0 });
      expect(d.sampleProbabilities).toBeUndefined();
      expect(out.trace.warnings!.map((w) => w.purpose)).toContain('ve.edit-sample');
    });

    it('asks for no log-probabilities when nothing uses them', async () => {
      const { provider } = await run({ editSample: 'first', answerLogprob: false }, { 've.cot': samplesWith(['1', '1', '1', '1', '1']) });
      expect(provider.received[0].request.logprobs).toBeUndefined();
    });
  });

  describe('consistency: logprob (the paper-era code)', () => {
    it("scores an answer by the sum of its samples' probabilities, unrescaled, against the threshold", async () => {
      // Unanimous, but each sample only exp(−0.6) ≈ 0.549 probable per token: 5 × 0.549 = 2.74 < 3.
      const unsure = await run({ consistency: 'logprob' }, { 've.cot': scored(['1989', '1989', '1989', '1989', '1989'], [-0.6, -0.6, -0.6, -0.6, -0.6]) });
      expect(unsure.d.consistencyMode).toBe('logprob');
      expect(unsure.d.thresholdScore).toBeCloseTo(5 * Math.exp(-0.6), 12);
      expect(unsure.d.weightedVotes).toEqual({ '1989': unsure.d.thresholdScore });
      expect(unsure.d.consistency).toBeCloseTo(Math.exp(-0.6), 12);
      expect(unsure.d.edited).toBe(true);
      // The same votes at exp(−0.4) ≈ 0.670 per sample: 3.35 ≥ 3, kept; under vote both are kept.
      const sure = await run({ consistency: 'logprob' }, { 've.cot': scored(['1989', '1989', '1989', '1989', '1989'], [-0.4, -0.4, -0.4, -0.4, -0.4]) });
      expect(sure.d.thresholdScore).toBeCloseTo(5 * Math.exp(-0.4), 12);
      expect(sure.d.edited).toBe(false);
      const vote = await run({}, { 've.cot': scored(['1989', '1989', '1989', '1989', '1989'], [-0.6, -0.6, -0.6, -0.6, -0.6]) });
      expect(vote.d).toMatchObject({ consistencyMode: 'vote', thresholdScore: 5, consistency: 1, edited: false });
    });

    it('lets a probable answer beat a more frequent one, and divides by the completion length', async () => {
      // 1989: 2 votes at 0.3 each (0.6); 1991: 1 vote at 0.9. Sample 2's completion is 40 tokens
      // long: its summed log-probability is low (40 × ln 0.9 ≈ −4.2), its mean is not.
      const m = [Math.log(0.3), Math.log(0.3), Math.log(0.9), Math.log(0.1), Math.log(0.1)];
      const { d } = await run({ consistency: 'logprob', threshold: 0.5 }, { 've.cot': scored(['1989', '1989', '1991', '1990', '1992'], m, [10, 10, 40, 10, 10]) });
      expect(d.majorityAnswer).toBe('1991');
      expect(d.votes['1989']).toBe(2);
      expect(d.weightedVotes!['1989']).toBeCloseTo(0.6, 12);
      expect(d.weightedVotes!['1991']).toBeCloseTo(0.9, 12);
      expect(d.consistency).toBeCloseTo(0.9 / 5, 12);
      expect(d.edited).toBe(false); // 0.9 ≥ 0.5: fractional thresholds are allowed in this mode
    });

    it('defaults the threshold to ⌈n/2⌉ = 3, the code’s default, and rejects a fraction under vote', () => {
      expect(verifyEditOptionsSchema.parse({ consistency: 'logprob' }).threshold).toBe(3);
      expect(verifyEditOptionsSchema.parse({ consistency: 'logprob', threshold: 3.5 }).threshold).toBe(3.5);
      const r = verifyEditOptionsSchema.safeParse({ threshold: 2.5 });
      expect(r.success).toBe(false);
      expect(r.error!.issues[0].path).toEqual(['threshold']);
    });

    it('falls back to the vote, with a warning, when the provider returns no log-probabilities', async () => {
      const { d, out } = await run({ consistency: 'logprob' }, { 've.cot': samplesWith(['1989', '1989', '1989', '1991', '1990']) });
      expect(d.consistencyMode).toBe('vote');
      expect(d.edited).toBe(false);
      expect(out.trace.warnings!.some((x) => /log-probabilities for 0 of 5 samples/.test(x.message))).toBe(true);
    });
  });

    it('rejects another consistency mode, naming the option', async () => {
      const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
      expect(() => parsePipelineOptions('verify-edit', { consistency: 'majority' })).toThrow(/options?[ .]consistency: must be one of "vote", "logprob"/);
    });

  describe('verifying answers', () => {
    const inconsistent = { 've.cot': samplesWith(['1989', '1989', '1990', '1991', '1992']) };
    const demoTurns = (call: { messages: Array<{ role: string }> }) => call.messages.filter((m) => m.role === 'assistant').length;

    it('are asked with 3 demos, verifying questions with 2 (the released code’s counts)', async () => {
      const { out } = await run({}, inconsistent);
      const answers = out.trace.llmCalls.filter((c) => c.purpose === 've.verifying-answer');
      const questions = out.trace.llmCalls.filter((c) => c.purpose === 've.verifying-question');
      expect(answers.length).toBeGreaterThan(0);
      for (const c of answers) expect(demoTurns(c)).toBe(3);
      for (const c of questions) expect(demoTurns(c)).toBe(2);
    });

    it('take verifyAnswerShots demos', async () => {
      const { out } = await run({ verifyAnswerShots: 1, verifyShots: 0 }, inconsistent);
      expect(out.trace.llmCalls.filter((c) => c.purpose === 've.verifying-answer').map(demoTurns)).toEqual([1, 1]);
      expect(out.trace.llmCalls.filter((c) => c.purpose === 've.verifying-question').map(demoTurns)).toEqual([0, 0]);
    });
  });

  describe('CoT demos', () => {
    const keep = { 've.cot': samplesWith(['1991', '1991', '1991', '1991', '1991']) };

    it('are the written demos by default on adversarial HotpotQA: the first training questions, in file order, the same for every question', async () => {
      const a = await run({ nShots: 6 }, keep);
      const { ctx } = ctxFor(keep);
      const other = await new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 6 })).answer(hotpotExample('h2', 'Which team did Jolyon Palmer drive for?'), ctx);
      const d = a.out.trace.decisions as VeDecisions;
      expect(d.demoSource).toBe('written');
      const ids = WRITTEN_DEMOS['hotpotqa-adversarial'].slice(0, 6).map((x) => x.id);
      expect(a.out.trace.demoIds).toEqual(ids);
      const prompt = a.out.trace.llmCalls[0].messages;
      const users = prompt.filter((m) => m.role === 'user').map((m) => m.content);
      // Demo questions in file order, then the question.
      expect(users.slice(0, 6)).toEqual(WRITTEN_DEMOS['hotpotqa-adversarial'].slice(0, 6).map((x) => `Question: ${x.question}`));
      expect(prompt[2].content).toBe(`${WRITTEN_DEMOS['hotpotqa-adversarial'][0].rationale} So the answer is: 1991.`);
      // Every question is shown the same demos (the prefix before its own question).
      expect(other.trace.llmCalls[0].messages.slice(0, -1)).toEqual(prompt.slice(0, -1));
    });

    it('written rationales are step by step: one hop per sentence, the answer in the reasoning', () => {
      for (const demo of WRITTEN_DEMOS['hotpotqa-adversarial']) {
        expect(demo.rationale).toMatch(/^First, .+\. Then, .+\.$/);
        expect(demo.answer && demo.rationale!.includes(demo.answer.replace(/\.$/, ''))).toBe(true);
      }
      expect(WRITTEN_DEMOS['hotpotqa-adversarial']).toHaveLength(8);
    });

    it('come from the dataset pool with cotDemos: pool', async () => {
      const { out } = await run({ cotDemos: 'pool' }, keep);
      expect((out.trace.decisions as VeDecisions).demoSource).toBe('pool');
      expect(out.trace.demoIds).toEqual(['h1', 'h2']);
    });

    it('refuses written demos where ambiqa has none, and more shots than are written, naming the option', async () => {
      const { ctx, provider } = ctxFor({});
      const fever = { id: 'f', dataset: 'fever' as const, question: 'Reg Watson is a producer.', answers: [], qaPairs: [], longAnswers: [], passages: [] };
      await expect(new VerifyEditPipeline(verifyEditOptionsSchema.parse({ cotDemos: 'written' })).answer(fever, ctx)).rejects.toThrow(/option cotDemos: written/);
      await expect(new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 9 })).answer(hotpotExample('h', Q), ctx)).rejects.toThrow(/option nShots \(9\)/);
      // Nothing was asked of the model.
      expect(provider.received).toEqual([]);
    });
  });

  describe('answer log-probability (auc_logprob)', () => {
    it('scores a kept answer by a greedy conclusion from the edited sample’s own rationale', async () => {
      const means = [-1, -0.5, -0.2, -0.2, -0.2];
      const rationales = ['First rationale.', 'Second rationale.', 'r', 'r', 'r'];
      const { d, out } = await run(
        { threshold: 2 },
        {
          've.cot': scored(['1991', '1991', '1990', '1992', '1993'], means, undefined, rationales),
          've.answer-logprob': () => ({ text: 'So the answer is: 1991.', finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 7 }, logprob: -0.75 }),
        },
      );
      expect(d.edited).toBe(false);
      expect(d.answerLogprob).toBe(-0.75);
      expect(d.answerLogprobAnswer).toBeUndefined();
      // Both signals are handed over with the output (what the scorer ranks by and the row keeps).
      expect(out.confidence).toBe(d.consistency);
      expect(out.confidence).toBeCloseTo(2 / 5, 12);
      expect(out.answerLogprob).toBe(-0.75);
      const call = out.trace.llmCalls.find((c) => c.purpose === 've.answer-logprob')!;
      expect(call.params.temperature).toBe(0);
      expect(call.messages.at(-1)!.content).toContain('Reasoning: Second rationale.');
    });

    it('records the conclusion when it is not the kept answer', async () => {
      const { d } = await run(
        { threshold: 2 },
        {
          've.cot': scored(['1991', '1991', '1990', '1992', '1993'], [-1, -1, -1, -1, -1]),
          've.answer-logprob': () => ({ text: 'So the answer is: 1990.', finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 7 }, logprob: -2 }),
        },
      );
      expect(d).toMatchObject({ finalAnswer: '1991', answerLogprob: -2, answerLogprobAnswer: '1990' });
    });

    it('takes an edited answer’s from its re-answer, and is off with answerLogprob: false', async () => {
      const inconsistent = scored(['1989', '1989', '1990', '1991', '1992'], [-1, -1, -1, -1, -1]);
      const reanswer = () => ({ text: 'So the answer is: 1991.', finishReason: 'stop' as const, usage: { promptTokens: 5, completionTokens: 7 }, logprob: -0.25 });
      const on = await run({}, { 've.cot': inconsistent, 've.answer': reanswer });
      expect(on.d).toMatchObject({ edited: true, finalAnswer: '1991', answerLogprob: -0.25 });
      expect(on.out).toMatchObject({ confidence: on.d.consistency, answerLogprob: -0.25 });
      expect(on.out.trace.llmCalls.filter((c) => c.purpose === 've.answer-logprob')).toEqual([]);
      const off = await run({ answerLogprob: false, threshold: 0 }, { 've.cot': inconsistent });
      expect(off.d.answerLogprob).toBeUndefined();
      expect(off.out.answerLogprob).toBeUndefined();
      expect(off.out.confidence).toBeCloseTo(2 / 5, 12);
      expect(off.out.trace.llmCalls.map((c) => c.purpose)).toEqual(['ve.cot']);
    });
  });

  describe('bad input', () => {
    it('an unknown value of a new option is one line naming the option', async () => {
      const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
      for (const [option, value] of [
        ['consistency', 'majority'],
        ['editSample', 'best'],
        ['cotDemos', 'knn'],
      ] as const) {
        let message = '';
        try {
          parsePipelineOptions('verify-edit', { [option]: value });
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message).toMatch(new RegExp(`options?[ .]${option}: must be one of`));
        expect(message.trim().split('\n')).toHaveLength(1);
      }
    });

    it('is refused when the config is read, before any model is loaded or called', async () => {
      const { createComposer } = await import('../../../src/experiments/compose');
      const { resolveExperimentConfig } = await import('../../../src/experiments/config');
      const { registry } = createComposer({ notify: () => undefined });
      let message = '';
      try {
        resolveExperimentConfig(
          { dataset: { name: 'hotpotqa-adversarial' }, pipeline: { name: 'verify-edit', options: { editSample: 'best' } }, llm: { provider: 'scripted' }, retriever: 'bm25' },
          registry,
          { source: 've.yaml', checkFiles: false },
        );
      } catch (error) {
        message = (error as Error).message;
      }
      const lines = message.split('\n').filter((l) => l.includes('editSample'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/ve\.yaml: pipeline\.options\.editSample: must be one of "most-probable", "first" \(got "best"\)/);
    });
  });
});
