import { describe, expect, it } from 'vitest';
import { divaDecisionsSchema } from '../../../src/pipelines/diva/decisions';
import { tocDecisionsSchema } from '../../../src/pipelines/toc/decisions';
import { selfConsistencyDecisionsSchema } from '../../../src/pipelines/baselines/decisions';
import { veDecisionsSchema } from '../../../src/pipelines/verify-edit/decisions';
import { majoritySettled } from '../../../src/pipelines/common/adaptive';
import { majorityVote } from '../../../src/pipelines/common/vote';
import { DivaPipeline } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import { createPipeline } from '../../../src/pipelines/registry';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema } from '../../../src/pipelines/toc/options';
import { VerifyEditPipeline } from '../../../src/pipelines/verify-edit';
import { verifyEditOptionsSchema } from '../../../src/pipelines/verify-edit/options';
import type { DivaDecisions } from '../../../src/pipelines/diva/decisions';
import type { SelfConsistencyDecisions } from '../../../src/pipelines/baselines/decisions';
import type { TocDecisions } from '../../../src/pipelines/toc/decisions';
import type { VeDecisions } from '../../../src/pipelines/verify-edit/decisions';
import { asqaExample, FakeEmbedder, FakeRetriever, fixedDemos, hotpotExample, passage, scriptedLlm } from '../fakes';

/** Adaptive self-consistency (`adaptive: true`): rounds of samples, stopped once the vote is settled. */
describe('majoritySettled', () => {
  it('is settled only when the leader is ahead by more than the votes left', () => {
    expect(majoritySettled(['a', 'a', 'a'], 2)).toBe(true); // 3 > 0 + 2
    expect(majoritySettled(['a', 'a', 'b'], 2)).toBe(false); // 2 ≤ 1 + 2
    expect(majoritySettled(['a', 'a', 'b', 'a'], 1)).toBe(true); // 3 > 1 + 1
    // A tie goes to the answer seen first (as in majorityVote): not settled while the rival
    // could reach a tie it would win, or overtake.
    expect(majoritySettled(['a', 'a', 'b', 'b'], 1)).toBe(false);
    expect(majoritySettled(['b', 'a', 'a', 'c'], 1)).toBe(false); // b can tie a, and b came first
    // ...settled when every possible tie would go to the leader, seen before its rivals.
    expect(majoritySettled(['a', 'b', 'a', 'c'], 1)).toBe(true);
    // A new answer could tie but not beat the leader seen before it; with 2 left it could beat 1.
    expect(majoritySettled(['a', 'b', 'a'], 1)).toBe(true);
    expect(majoritySettled(['a', null, null], 2)).toBe(false);
    expect(majoritySettled(['a', 'b'], 0)).toBe(true);
    // Answers compare normalised; abstentions vote for nobody.
    expect(majoritySettled(['The Paris', 'paris.', null], 1)).toBe(true);
    expect(majoritySettled([null, null, null], 2)).toBe(false);
  });

  it('is exact: settled if and only if no way of casting the remaining votes changes the outcome', () => {
    // Every sequence of up to 5 votes over a, b, c and abstentions, completed in every way with
    // those and an answer not seen yet (d): the winner (and, with a threshold, the side of it)
    // must be the same in all completions exactly when majoritySettled says so.
    const seq = (alphabet: Array<string | null>, length: number): Array<Array<string | null>> =>
      length === 0 ? [[]] : seq(alphabet, length - 1).flatMap((s) => alphabet.map((x) => [...s, x]));
    const n = 5;
    let settledCases = 0;
    for (const threshold of [undefined, 3]) {
      for (let drawn = 1; drawn <= n; drawn++) {
        for (const drawnVotes of seq(['a', 'b', 'c', null], drawn)) {
          const outcomes = new Set(
            seq(['a', 'b', 'c', 'd', null], n - drawn).map((rest) => {
              const v = majorityVote([...drawnVotes, ...rest]);
              return `${v.answer}|${threshold === undefined ? '' : v.winnerVotes >= threshold}`;
            }),
          );
          const settled = majoritySettled(drawnVotes, n - drawn, threshold);
          expect(settled, `${JSON.stringify(drawnVotes)} threshold ${threshold}`).toBe(outcomes.size === 1);
          if (settled && drawn < n) settledCases += 1;
        }
      }
    }
    expect(settledCases).toBeGreaterThan(0);
  });

  it('with a threshold, also waits until the edit decision cannot change', () => {
    // 2 votes, 3 left: 2 ≥ threshold 2 and 2 > 0 + ... no: 2 ≤ 0 + 3, not settled anyway.
    expect(majoritySettled(['a', 'a'], 3, 2)).toBe(false);
    // Winner fixed (3 > 0 + 2) and 3 ≥ threshold 3.
    expect(majoritySettled(['a', 'a', 'a'], 2, 3)).toBe(true);
    // Winner fixed (3 > 0 + 2) but 3 < threshold 4 and 3 + 2 ≥ 4: the edit decision may change.
    expect(majoritySettled(['a', 'a', 'a'], 2, 4)).toBe(false);
    // 1 vote each of three answers + 0 left: always settled.
    expect(majoritySettled(['a', 'b', 'c'], 0, 3)).toBe(true);
  });
});

const sample = (answer: string) => `Because. So the answer is: ${answer}`;

async function cotSc(options: Record<string, unknown>, answers: string[], example = hotpotExample('h', 'Where is the Louvre?')) {
  const { llm, provider } = scriptedLlm({ 'cot-sc.sample': (_r, i) => sample(answers[i]!) });
  const out = await createPipeline('cot-sc', { nShots: 0, n: 5, ...options }).answer(example, { llm, demos: fixedDemos() });
  return { out, d: selfConsistencyDecisionsSchema.parse(out.trace.decisions), provider };
}

describe('CoT-SC with adaptive: true', () => {
  it('stops after a unanimous first round and answers as the fixed budget does', async () => {
    const answers = ['Paris', 'Paris', 'Paris', 'Lyon', 'Lyon'];
    const fixed = await cotSc({}, answers);
    const adaptive = await cotSc({ adaptive: true }, answers);
    expect(fixed.provider.received).toHaveLength(5);
    expect(adaptive.provider.received.map((r) => r.sampleIndex)).toEqual([0, 1, 2]);
    expect(adaptive.out.answer).toBe(fixed.out.answer);
    expect(adaptive.d.adaptive).toEqual({ budget: 5, drawn: 3, stoppedEarly: true });
    expect(fixed.d.adaptive).toBeUndefined();
    expect(adaptive.d.samples).toHaveLength(3);
  });

  it('draws one more sample per round, continuing the sample indices (seeds), until settled', async () => {
    const answers = ['Paris', 'Lyon', 'Paris', 'Paris', 'Lyon'];
    const adaptive = await cotSc({ adaptive: true, seed: 40 }, answers);
    // Round 1: samples 0-2 (Paris 2, Lyon 1; 2 left: open). Round 2: sample 3 → Paris 3 > 1 + 1.
    expect(adaptive.provider.received.map((r) => r.sampleIndex)).toEqual([0, 1, 2, 3]);
    expect(adaptive.out.trace.llmCalls).toHaveLength(2);
    expect(adaptive.out.trace.llmCalls[1]!.params).toMatchObject({ n: 1, firstSample: 3, seed: 40 });
    expect(adaptive.out.answer).toBe('Paris');
    expect(adaptive.d.adaptive).toEqual({ budget: 5, drawn: 4, stoppedEarly: true });
  });

  it('stops once every possible tie would go to the leader, with the fixed budget\'s answer', async () => {
    // After 4: Paris 2 (seen first), Lyon 1, Nice 1, one left — Lyon or Nice could only tie
    // Paris, and ties go to the answer seen first. The fifth sample would make it 2–2: Paris.
    const answers = ['Paris', 'Lyon', 'Paris', 'Nice', 'Lyon'];
    const fixed = await cotSc({}, answers);
    const adaptive = await cotSc({ adaptive: true }, answers);
    expect(fixed.out.answer).toBe('Paris');
    expect(fixed.d.votes).toMatchObject({ paris: 2, lyon: 2 });
    expect(adaptive.provider.received.map((r) => r.sampleIndex)).toEqual([0, 1, 2, 3]);
    expect(adaptive.out.answer).toBe(fixed.out.answer);
    expect(adaptive.d.adaptive).toEqual({ budget: 5, drawn: 4, stoppedEarly: true });
  });

  it('draws the whole budget when the vote stays open', async () => {
    const answers = ['Paris', 'Lyon', 'Nice', 'Lyon', 'Paris'];
    const fixed = await cotSc({}, answers);
    const adaptive = await cotSc({ adaptive: true }, answers);
    expect(adaptive.provider.received).toHaveLength(5);
    expect(adaptive.out.answer).toBe(fixed.out.answer);
    expect(adaptive.d.adaptive).toEqual({ budget: 5, drawn: 5, stoppedEarly: false });
  });

  it('on long-form answers (medoid, not votes) draws the full budget and says why', async () => {
    const answers = ['Paris is the capital.', 'Paris is the capital.', 'Paris is the capital.', 'Lyon.', 'Nice.'];
    const { out, provider } = await cotSc({ adaptive: true }, answers, asqaExample('a', 'Where is the Louvre?'));
    expect(provider.received).toHaveLength(5);
    expect(out.trace.warnings!.map((w) => w.purpose)).toContain('cot-sc.adaptive');
  });
});

describe('Verify-and-Edit with adaptive: true', () => {
  const corpus = [passage('p1', 'Louvre', 'The Louvre is a museum in Paris.')];
  const run = async (options: Record<string, unknown>, answers: string[]) => {
    const { llm, provider } = scriptedLlm({
      've.cot': (_r, i) => `The Louvre is in Paris. So the answer is: ${answers[i]}.`,
      've.verifying-question': 'Where is the Louvre?',
      've.verifying-answer': 'The Louvre is in Paris.',
      've.answer': 'So the answer is: Paris.',
      've.answer-logprob': 'So the answer is: Paris.',
    });
    const ctx = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 0, ...options })).answer(hotpotExample('h', 'Where is the Louvre?'), ctx);
    const cot = provider.received.filter((r) => r.request.purpose === 've.cot').map((r) => r.sampleIndex);
    return { out, d: veDecisionsSchema.parse(out.trace.decisions), cot };
  };

  it('keeps the answer without editing once the majority reaches the threshold and cannot lose', async () => {
    const answers = ['Paris', 'Paris', 'Lyon', 'Paris', 'Lyon'];
    const fixed = await run({}, answers);
    const adaptive = await run({ adaptive: true }, answers);
    expect(fixed.cot).toEqual([0, 1, 2, 3, 4]);
    expect(adaptive.cot).toEqual([0, 1, 2, 3]);
    expect(adaptive.d.edited).toBe(fixed.d.edited);
    expect(adaptive.d.edited).toBe(false);
    expect(adaptive.out.answer).toBe(fixed.out.answer);
    expect(adaptive.d.adaptive).toEqual({ budget: 5, drawn: 4, stoppedEarly: true });
  });

  it('edits, as the fixed budget does, once the threshold is out of reach', async () => {
    // Threshold 4 of 5: after Paris, Lyon, Nice, Rome the leader (1) + 1 left < 4 — but the
    // winner is not settled (1 ≤ 1 + 1), so the last sample is drawn too.
    const answers = ['Paris', 'Lyon', 'Nice', 'Rome', 'Paris'];
    const fixed = await run({ threshold: 4 }, answers);
    const adaptive = await run({ threshold: 4, adaptive: true }, answers);
    expect(adaptive.d.edited).toBe(true);
    expect(adaptive.d.edited).toBe(fixed.d.edited);
    expect(adaptive.d.majorityAnswer).toBe(fixed.d.majorityAnswer);
    expect(adaptive.cot).toEqual([0, 1, 2, 3, 4]);
  });

  it('ignores adaptive with logprob consistency and records why', async () => {
    const { out, cot } = await run({ adaptive: true, consistency: 'logprob' }, ['Paris', 'Paris', 'Paris', 'Paris', 'Paris']);
    expect(cot).toHaveLength(5);
    expect(out.trace.warnings!.map((w) => w.purpose)).toContain('ve.adaptive');
  });
});

describe('ToC with earlyExit: true', () => {
  const corpus = [
    passage('p1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
    passage('p2', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
  ];
  const AQ = 'Who played Ron Weasley in Harry Potter?';
  const run = async (earlyExit: boolean, rac: string) => {
    const { llm, provider } = scriptedLlm(
      { 'toc.rac': rac, 'toc.answer': 'Answer: Rupert Grint played Ron Weasley.' },
      { 'toc.verify': 0.9 },
    );
    const options = tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', earlyExit });
    const out = await new TocPipeline(options).answer(asqaExample('q', AQ), { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() });
    return { out, d: tocDecisionsSchema.parse(out.trace.decisions), provider };
  };
  const oneReading = 'DQ 1: Who played Ron Weasley in the Harry Potter films?\nDA 1: Rupert Grint\nDQ 2: Which actor played Ron in the films?\nDA 2: rupert grint.';
  const twoReadings = 'DQ 1: Who played Ron Weasley in the films?\nDA 1: Rupert Grint\nDQ 2: Who played Ron Weasley on stage?\nDA 2: Paul Thornley';

  it('answers an unambiguous question from the root expansion: no verification, no tree, recorded', async () => {
    const fixed = await run(false, oneReading);
    const early = await run(true, oneReading);
    expect(early.d.stopReason).toBe('unambiguous');
    expect(early.out.trace.llmCalls.map((c) => c.purpose)).toEqual(['toc.rac', 'toc.answer']);
    expect(early.provider.judged).toHaveLength(0);
    expect(early.d.validNodeIds).toHaveLength(1);
    expect(early.d.expansions).toEqual([expect.objectContaining({ nodeId: 0, reason: 'one interpretation: early exit' })]);
    // The paper's method verifies and keeps expanding.
    expect(fixed.provider.judged.length).toBeGreaterThan(0);
    expect(fixed.out.trace.llmCalls.length).toBeGreaterThan(early.out.trace.llmCalls.length);
    expect(fixed.d.stopReason).not.toBe('unambiguous');
  });

  it('changes nothing when the root finds two interpretations', async () => {
    const fixed = await run(false, twoReadings);
    const early = await run(true, twoReadings);
    expect(early.d.stopReason).toBe(fixed.d.stopReason);
    expect(early.out.trace.llmCalls.map((c) => c.purpose)).toEqual(fixed.out.trace.llmCalls.map((c) => c.purpose));
  });
});

describe('Diva with earlyExit: true', () => {
  const corpus = [passage('w1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.')];
  const AQ = 'Who played Ron Weasley in the Harry Potter films?';
  const run = async (earlyExit: boolean, diversify: string) => {
    const { llm, provider } = scriptedLlm(
      { 'diva.diversify': diversify, 'diva.generate.rag': 'Rupert Grint.', 'diva.generate.closed-book': 'Someone.' },
      { 'diva.verify': 0.8 },
    );
    const ctx = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 1, earlyExit })).answer(asqaExample('q', AQ), ctx);
    return { out, d: divaDecisionsSchema.parse(out.trace.decisions), provider };
  };
  const unambiguous = 'Ambiguity type: None\nReason: Only one Ron Weasley.\nInterpretations:\n1. Who played Ron in the films?\n2. Who was the actor of Ron?';
  const ambiguous = 'Ambiguity type: Subject\nReason: Several brothers.\nInterpretations:\n1. Who played Ron Weasley?\n2. Who played Percy Weasley?';

  it("answers a question typed 'none' by RAG on the question, without verification", async () => {
    const fixed = await run(false, unambiguous);
    const early = await run(true, unambiguous);
    expect(early.d.earlyExit).toBe(true);
    expect(early.d.interpretations).toEqual([AQ]);
    expect(early.provider.judged).toHaveLength(0);
    expect(early.d.route).toBe('rag');
    expect(early.out.output).toBe('Rupert Grint.');
    expect(fixed.provider.judged).toHaveLength(2);
    expect(fixed.d.earlyExit).toBeUndefined();
  });

  it('runs the paper method on a question typed ambiguous', async () => {
    const early = await run(true, ambiguous);
    expect(early.d.earlyExit).toBeUndefined();
    expect(early.provider.judged).toHaveLength(2);
  });
});
