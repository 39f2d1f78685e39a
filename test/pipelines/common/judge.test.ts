import { describe, expect, it } from 'vitest';
import { comboDecisionsSchema } from '../../../src/pipelines/combo/decisions';
import { divaDecisionsSchema } from '../../../src/pipelines/diva/decisions';
import { tocDecisionsSchema } from '../../../src/pipelines/toc/decisions';
import { ComboPipeline } from '../../../src/pipelines/combo';
import { comboOptionsSchema } from '../../../src/pipelines/combo/options';
import { calibrateProbabilities, CONTENT_FREE } from '../../../src/pipelines/common/judge';
import { DivaPipeline } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import { parsePipelineOptions } from '../../../src/pipelines/registry';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema } from '../../../src/pipelines/toc/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import { decisionStatistics } from '../../../src/metrics/decisions';
import type { NormalisedJudgeRequest } from '../../../src/llm/types';
import type { ComboDecisions } from '../../../src/pipelines/combo/decisions';
import type { DivaDecisions } from '../../../src/pipelines/diva/decisions';
import type { TocDecisions } from '../../../src/pipelines/toc/decisions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { planSweep } from '../../../src/experiments/sweep';
import { registry } from '../../../src/experiments/compose';
import { projectRoot } from '../../../src/config/paths';
import { asqaExample, FakeEmbedder, FakeRetriever, fixedDemos, judgeField, lastField, passage, promptOf, scriptedLlm } from '../fakes';
import { methodCatalog } from '../../../src/pipelines/registry';

/** Two-label contextual calibration written out, to check the implementation against. */
const twoLabel = (p: number, p0: number) => p / p0 / (p / p0 + (1 - p) / (1 - p0));

const judgeText = (r: NormalisedJudgeRequest) => r.messages.map((m) => m.content).join('\n');

describe('calibrateProbabilities (contextual calibration, Zhao et al. 2021)', () => {
  it('divides out the prior: for two labels (p/p0) / (p/p0 + (1−p)/(1−p0))', () => {
    for (const [p, p0] of [
      [0.3, 0.3],
      [0.4, 0.3],
      [0.25, 0.3],
      [0.9, 0.7],
    ]) {
      const { probabilities, applied } = calibrateProbabilities([p, 1 - p], [p0, 1 - p0]);
      expect(applied).toBe(true);
      expect(probabilities[0]).toBeCloseTo(twoLabel(p, p0), 12);
      expect(probabilities[0] + probabilities[1]).toBeCloseTo(1, 12);
    }
    // A judgment equal to the prior is "no information": 0.5.
    expect(calibrateProbabilities([0.3, 0.7], [0.3, 0.7]).probabilities[0]).toBeCloseTo(0.5, 12);
    // A uniform prior changes nothing.
    expect(calibrateProbabilities([0.37, 0.63], [0.5, 0.5]).probabilities[0]).toBeCloseTo(0.37, 12);
  });

  it('generalises to k labels: each divided by its prior, then renormalised', () => {
    // Useful / PartialUseful / Useless with a judge that leans to Useless.
    const raw = [0.2, 0.3, 0.5];
    const prior = [0.1, 0.3, 0.6];
    const { probabilities, applied } = calibrateProbabilities(raw, prior);
    expect(applied).toBe(true);
    const ratios = [0.2 / 0.1, 0.3 / 0.3, 0.5 / 0.6];
    const total = ratios.reduce((a, b) => a + b, 0);
    probabilities.forEach((q, i) => expect(q).toBeCloseTo(ratios[i] / total, 12));
    expect(probabilities.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    // The argmax moves from Useless to Useful once the bias is divided out.
    expect(probabilities.indexOf(Math.max(...probabilities))).toBe(0);
  });

  it('leaves probabilities alone when a prior is zero (nothing to divide by)', () => {
    expect(calibrateProbabilities([0.4, 0.6], [0, 1])).toEqual({ probabilities: [0.4, 0.6], applied: false });
    expect(() => calibrateProbabilities([0.4, 0.6], [0.5, 0.3, 0.2])).toThrow(/2 probabilities but 3 prior/);
  });
});

// ToC with a judge biased to "False" that still ranks: P(true) = 0.40 when the evidence passage
// holds the node's answer, 0.25 when not, and 0.30 on the content-free prompt.
const corpus = [
  passage('p1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('p2', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
];
const AQ = 'Who played the Weasley brothers in Harry Potter?';
const ANSWERS = ['Rupert Grint', 'Chris Rankin', 'Daniel Radcliffe', 'Emma Watson'];

function biasedTocJudge(r: NormalisedJudgeRequest): number {
  const answer = judgeField(r, 'Proposed answer');
  const passageLine = judgeText(r).split('\n').find((l) => l.startsWith('Passage:')) ?? '';
  return passageLine.includes(answer) ? 0.4 : 0.25;
}

async function runToc(judgeCalibration: 'none' | 'content-free') {
  const rac = () => [...ANSWERS.map((a, i) => `DQ ${i + 1}: Who played Weasley number ${i + 1}?\nDA ${i + 1}: ${a}`), 'Answer: x'].join('\n');
  const { llm, provider } = scriptedLlm(
    { 'toc.rac': rac, 'toc.answer': 'Answer: The brothers were played by several actors.' },
    { 'toc.verify': biasedTocJudge, 'toc.verify.prior': 0.3 },
  );
  const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
  // One expansion's pairs judged once each: the stop-when-empty search (the released one would
  // switch pruning off and admit more pairs unverified).
  // Evidence that contains the node's answer (the filtered reading, not the released best-shown
  // passage): the scripted judge's P depends on whether the evidence names the answer.
  const opts = tocOptionsSchema.parse({ search: 'stop-when-empty', nShots: 1, poolSize: 2, nPassages: 2, reranker: 'none', maxTrials: 1, maxDepth: 1, minValidNodes: 0, judgeCalibration, evidence: 'contains-answer' });
  const out = await new TocPipeline(opts).answer(asqaExample('q1', AQ), ctx);
  return { out, d: tocDecisionsSchema.parse(out.trace.decisions), provider };
}

describe('ToC with judgeCalibration', () => {
  it("'none' (default) keeps the papers' rule: the biased judge prunes every node", async () => {
    expect(tocOptionsSchema.parse({}).judgeCalibration).toBe('none');
    const { d, out, provider } = await runToc('none');
    const kids = d.nodes.filter((n) => n.id !== 0);
    expect(kids).toHaveLength(4);
    expect(kids.every((n) => n.pruned)).toBe(true);
    expect(kids.every((n) => n.pTrueRaw === undefined && n.pTruePrior === undefined)).toBe(true);
    expect(provider.judged.map((r) => r.purpose)).not.toContain('toc.verify.prior');
    expect(out.trace.llmCalls.some((c) => c.judge?.calibration)).toBe(false);
  });

  it("'content-free' asks the prior with placeholder slots and flips the decisions the ranking supports", async () => {
    const { d, out, provider } = await runToc('content-free');
    const priors = provider.judged.filter((r) => r.purpose === 'toc.verify.prior');
    expect(priors.length).toBeGreaterThan(0);
    for (const r of priors) {
      const text = judgeText(r);
      expect(judgeField(r, 'Proposed answer')).toBe(CONTENT_FREE);
      expect(judgeField(r, 'Question')).toBe(CONTENT_FREE);
      expect(text).toContain(`Passage: ${CONTENT_FREE}`);
      // Nothing of the instance leaks into the content-free prompt; the instruction is the same.
      for (const a of ANSWERS) expect(text).not.toContain(a);
      expect(text).not.toContain('Weasley');
      expect(text).toContain('Reply with True or False only.');
    }
    // The content-free prompt does not depend on the instance: it is asked once per question, and
    // every judgment of the tree divides by that one prior.
    expect(new Set(priors.map(judgeText)).size).toBe(1);
    expect(priors).toHaveLength(1);
    const priorCalls = out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify.prior');
    expect(priorCalls).toHaveLength(1);
    const priorIndices = new Set(out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify').map((c) => c.judge!.calibration!.priorCallIndex));
    expect([...priorIndices]).toEqual([out.trace.llmCalls.indexOf(priorCalls[0]!)]);

    const kids = d.nodes.filter((n) => n.id !== 0);
    for (const n of kids) {
      const raw = n.evidenceHasAnswer ? 0.4 : 0.25;
      expect(n.pTrueRaw).toBe(raw);
      expect(n.pTruePrior).toBe(0.3);
      expect(n.pTrue).toBeCloseTo(twoLabel(raw, 0.3), 12);
      expect(n.verdict).toBe(n.evidenceHasAnswer === true);
    }
    // The two actors whose passages name them are kept; the two with no evidence are pruned.
    expect(kids.filter((n) => !n.pruned).map((n) => n.answer)).toEqual(['Rupert Grint', 'Chris Rankin']);

    // The trace's judge record holds raw, prior and calibrated P, and points at the prior call.
    const verify = out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify');
    for (const c of verify) {
      const cal = c.judge!.calibration!;
      expect(cal.applied).toBe(true);
      expect(out.trace.llmCalls[cal.priorCallIndex!].purpose).toBe('toc.verify.prior');
      expect(cal.prior[0]).toBeCloseTo(0.3, 12);
      expect(cal.p).toBeCloseTo(twoLabel(c.judge!.p, 0.3), 12);
    }

    // Decision statistics report both means per judge, and the prior as its own judge.
    const s = decisionStatistics([out.trace], methodCatalog());
    expect(s.metrics.decision_p_yes_toc_verify).toBeCloseTo((0.4 + 0.4 + 0.25 + 0.25) / 4, 12);
    expect(s.metrics.decision_p_cal_toc_verify).toBeCloseTo((2 * twoLabel(0.4, 0.3) + 2 * twoLabel(0.25, 0.3)) / 4, 12);
    expect(s.metrics.decision_p_yes_toc_verify_prior).toBeCloseTo(0.3, 12);
    expect(s.metrics.decision_prune_rate).toBe(0.5);
  });

  it('reserves the prior judgment in the call budget, once per question', async () => {
    // Budget 5: the RAC call, then each verification needs itself (+ the prior, the first time) + the answer.
    const verified = async (judgeCalibration: 'none' | 'content-free') => {
      const { llm } = scriptedLlm(
        { 'toc.rac': [...ANSWERS.map((a, i) => `DQ ${i + 1}: Who played Weasley ${i + 1}?\nDA ${i + 1}: ${a}`), 'Answer: x'].join('\n'), 'toc.answer': 'Answer: y' },
        { 'toc.verify': 0.9, 'toc.verify.prior': 0.5 },
      );
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
      const opts = tocOptionsSchema.parse({ nShots: 1, poolSize: 2, nPassages: 2, reranker: 'none', maxTrials: 1, maxDepth: 1, maxLlmCalls: 5, judgeCalibration });
      const out = await new TocPipeline(opts).answer(asqaExample('q1', AQ), ctx);
      expect(out.trace.llmCalls.length).toBeLessThanOrEqual(5);
      return tocDecisionsSchema.parse(out.trace.decisions).nodes.filter((n) => n.verdict !== null).length;
    };
    expect(await verified('none')).toBe(3);
    // RAC, verify + prior, verify, answer: the second verification reuses the first one's prior.
    expect(await verified('content-free')).toBe(2);
  });

  it('leaves a text-mode judgment (no probabilities) as it was', async () => {
    const { llm } = scriptedLlm({
      'toc.rac': 'DQ 1: Who played Ron?\nDA 1: Rupert Grint\nAnswer: x',
      'toc.verify': 'True',
      'toc.verify.prior': 'False',
      'toc.answer': 'Answer: y',
    });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const opts = tocOptionsSchema.parse({ nShots: 1, poolSize: 2, nPassages: 2, reranker: 'none', maxTrials: 1, maxDepth: 1, judgeCalibration: 'content-free' });
    const out = await new TocPipeline(opts).answer(asqaExample('q1', AQ), ctx);
    const node = tocDecisionsSchema.parse(out.trace.decisions).nodes[1];
    expect(node).toMatchObject({ pTrue: 1, pTrueRaw: 1, pTruePrior: 0, verdict: true });
    expect(out.trace.llmCalls.find((c) => c.purpose === 'toc.verify')!.judge!.calibration!.applied).toBe(false);
  });

  it('rejects an unknown mode naming the option, for every pipeline that judges', () => {
    for (const name of ['toc', 'diva', 'combo'] as const) {
      // COMBO's scorers have no batch prior (issue 26: batch calibration is ToC's and Diva's).
      const modes = name === 'combo' ? '"none", "content-free"' : '"none", "content-free", "batch"';
      expect(() => parsePipelineOptions(name, { judgeCalibration: 'platt' })).toThrow(
        new RegExp(`pipeline ${name}: options?[ .]judgeCalibration: must be one of ${modes} \\(got "platt"\\)`),
      );
      expect(parsePipelineOptions(name, { judgeCalibration: 'content-free' })).toMatchObject({ judgeCalibration: 'content-free' });
    }
  });
});

describe('judgeCalibration as a sweep axis', () => {
  const file = join(projectRoot, 'experiments', 'ablation-toc-judge-calibration.yaml');
  const plan = (raw: Record<string, unknown>) =>
    planSweep({ raw, source: file, registry, options: { defaultName: 'x', checkFiles: false }, sweepDir: (n) => `/tmp/${n}` });

  it('the shipped ablation sweeps none against content-free, and a bad value is refused naming the option', () => {
    const raw = YAML.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(plan(raw).points).toHaveLength(2);
    expect(() => plan({ ...raw, sweep: { 'pipeline.options.judgeCalibration': ['none', 'platt'] } })).toThrow(/pipeline\.options\.judgeCalibration/);
  });
});

describe('Diva with judgeCalibration', () => {
  const DIVERSIFY =
    'Ambiguity type: **Subject**\nReason: Several brothers.\nInterpretations:\n1. Who played Ron Weasley?\n2. Who played Bill Weasley?';
  // Biased to "No": 0.45 when a passage names the brother, 0.2 when none does, 0.35 content-free.
  const judge = (r: NormalisedJudgeRequest) => {
    const brother = /Who played (\w+) Weasley/.exec(lastField({ messages: r.messages } as never, 'Question'))?.[1];
    return brother && judgeText(r).split('Question:')[0].includes(brother) ? 0.45 : 0.2;
  };
  const runDiva = async (judgeCalibration: 'none' | 'content-free') => {
    const { llm, provider } = scriptedLlm(
      {
        'diva.diversify': DIVERSIFY,
        'diva.generate.rag': 'Ron was played by Rupert Grint.',
        'diva.generate.closed-book': 'Several actors.',
      },
      { 'diva.verify': judge, 'diva.verify.prior': 0.35 },
    );
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 2, judgeCalibration })).answer(asqaExample('q', AQ), ctx);
    return { d: divaDecisionsSchema.parse(out.trace.decisions), provider };
  };

  it("routes everything closed-book uncalibrated, and to RAG (PartialUseful) once the prior is divided out", async () => {
    const plain = await runDiva('none');
    expect(plain.d).toMatchObject({ usefulness: 'Useless', route: 'closed-book', pAnswered: [0.45, 0.2] });
    expect(plain.d.pAnsweredRaw).toBeUndefined();

    const cal = await runDiva('content-free');
    expect(cal.d.pAnsweredRaw).toEqual([0.45, 0.2]);
    expect(cal.d.pAnsweredPrior).toEqual([0.35, 0.35]);
    cal.d.pAnswered!.forEach((p, i) => expect(p).toBeCloseTo(twoLabel([0.45, 0.2][i], 0.35), 12));
    expect(cal.d).toMatchObject({ verdicts: [true, false], usefulness: 'PartialUseful', route: 'rag' });
    // The prior prompt keeps the passage count, with every slot a placeholder.
    const prior = cal.provider.judged.find((r) => r.purpose === 'diva.verify.prior')!;
    expect(judgeText(prior)).toContain(`Question: ${CONTENT_FREE}`);
    expect(judgeText(prior)).not.toMatch(/Weasley|Grint|Rankin/);
    expect(judgeText(prior).match(new RegExp(CONTENT_FREE, 'g'))!.length).toBe(1 + 2 * 2);
  });
});

describe('COMBO with judgeCalibration', () => {
  const combo = [passage('r-ron', 'Rupert Grint', 'Rupert Grint played Ron in the films.'), passage('r-bread', 'Baking', 'Bread needs yeast.')];
  it('calibrates evidentiality and consistency; the prior prompts hold only placeholders', async () => {
    const { llm, provider } = scriptedLlm(
      { 'combo.generate': 'Ron was played by Rupert Grint.', 'combo.read': 'Answer: Rupert Grint.' },
      {
        'combo.evidentiality': (r) => (judgeText(r).includes('Rupert') ? 0.4 : 0.1),
        'combo.evidentiality.prior': 0.2,
        'combo.consistency': 0.3,
        'combo.consistency.prior': 0.3,
      },
    );
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(combo), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 1, judgeCalibration: 'content-free' })).answer(
      asqaExample('q', 'Who played Ron?'),
      ctx,
    );
    const d = comboDecisionsSchema.parse(out.trace.decisions);
    expect(d.retrievedPassageIds).toContain('r-ron');
    d.retrievedPassageIds.forEach((id, i) => expect(d.evidentiality[i]).toBeCloseTo(twoLabel(id === 'r-ron' ? 0.4 : 0.1, 0.2), 12));
    // 0.4 against a prior of 0.2 is evidence (≈ 0.73), though the raw P was below 0.5.
    expect(d.evidentiality[d.retrievedPassageIds.indexOf('r-ron')]).toBeGreaterThan(0.5);
    // A consistency judge exactly at its prior carries no information: 0.5.
    for (const row of d.consistency) for (const c of row) expect(c).toBeCloseTo(0.5, 12);
    expect(d.scorers).toEqual({ evidentiality: 'llm-judge:content-free', consistency: 'llm-judge:content-free' });
    for (const purpose of ['combo.evidentiality.prior', 'combo.consistency.prior']) {
      const r = provider.judged.find((j) => j.purpose === purpose)!;
      expect(promptOf(r as never)).not.toMatch(/Ron|Grint|Bread/);
      expect(promptOf(r as never)).toContain(`Question: ${CONTENT_FREE}`);
    }
  });
});
