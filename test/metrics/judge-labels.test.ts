import { describe, expect, it } from 'vitest';
import type { Example } from '../../src/datasets/types';
import { goldShortAnswers, labelJudgments } from '../../src/metrics/judge-labels';
import type { Decisions, Trace } from '../../src/trace/types';
import type { ComboDecisions } from '../../src/pipelines/combo/decisions';
import type { DivaDecisions } from '../../src/pipelines/diva/decisions';
import type { TocNode } from '../../src/pipelines/toc/decisions';
import type { VeDecisions } from '../../src/pipelines/verify-edit/decisions';
import { methodCatalog } from '../../src/pipelines/registry';

const example: Example = {
  id: 'q1',
  dataset: 'asqa',
  question: 'Who played Ron Weasley?',
  answers: ['Rupert Grint'],
  qaPairs: [
    { question: 'Who played Ron Weasley in the films?', shortAnswers: ['Rupert Grint'] },
    { question: 'Who played Ron Weasley on stage?', shortAnswers: ['Paul Thornley', 'Thornley'] },
  ],
  longAnswers: [],
  passages: [],
};

function trace(decisions: Decisions, answer?: string): Trace {
  return {
    pipeline: decisions.kind,
    questionId: example.id,
    question: example.question,
    llm: { provider: 'scripted', model: 'x' },
    demoIds: [],
    llmCalls: [],
    retrievals: [],
    parseFailures: [],
    decisions,
    summary: { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 },
    output: '',
    ...(answer !== undefined ? { answer } : {}),
  };
}

const node = (id: number, answer: string | null, extra: Partial<TocNode> = {}): TocNode => ({
  id,
  parentId: id === 0 ? null : 0,
  depth: id === 0 ? 0 : 1,
  question: `dq ${id}`,
  answer,
  bfsOrder: id,
  expanded: false,
  verdict: null,
  pruned: false,
  unpruned: false,
  ...extra,
});

const texts: Record<string, string> = {
  p1: 'Rupert Grint played Ron Weasley in all eight Harry Potter films.',
  p2: 'Paul Thornley played Ron in Harry Potter and the Cursed Child.',
  p3: 'Bread is made from flour, water and yeast.',
};
const passageText = (id: string): string | undefined => texts[id];

describe('goldShortAnswers', () => {
  it('pools the DQ answers and the flat answers without duplicates', () => {
    expect(goldShortAnswers(example)).toEqual(['Rupert Grint', 'Paul Thornley', 'Thornley']);
  });
});

describe('labelJudgments', () => {
  it('ToC: a verified node is right when its answer reaches Answer-F1 0.5 against a gold DQ; root and unverified nodes are not judgments', () => {
    const decisions = {
      kind: 'toc',
      nodes: [
        node(0, null),
        node(1, 'Rupert Grint', { pTrue: 0.3, verdict: false }),
        // "Grint" vs "Rupert Grint": precision 1, recall 0.5, F1 0.667 ≥ 0.5
        node(2, 'Grint', { pTrue: 0.25, verdict: false, pTrueRaw: 0.2 }),
        // "Emma Watson Grint" vs "Rupert Grint": 1 shared token, P 1/3, R 1/2, F1 0.4 < 0.5
        node(3, 'Emma Watson Grint', { pTrue: 0.6, verdict: true }),
        node(4, 'Daniel Radcliffe', { skipped: 'max-nodes' }),
        node(5, null, { pTrue: 0.1, verdict: false }),
      ],
      expansions: [],
      stopReason: 'max-nodes',
      validNodeIds: [],
      answerPassageIds: [],
    } as Decisions;
    expect(labelJudgments(trace(decisions), example, methodCatalog())).toEqual([
      { purpose: 'toc.verify', p: 0.3, label: true },
      { purpose: 'toc.verify', p: 0.25, pRaw: 0.2, label: true },
      { purpose: 'toc.verify', p: 0.6, label: false },
      { purpose: 'toc.verify', p: 0.1, label: null },
    ]);
  });

  it('Diva: every interpretation is labelled by whether the judged passages hold a gold answer; unknown passages leave it unlabelled', () => {
    const diva = (passageIds: string[], pAnswered?: number[]): DivaDecisions => ({
      kind: 'diva',
      ambiguityType: 'time',
      ambiguityReason: '',
      interpretations: ['a', 'b'],
      verdicts: [false, false],
      ...(pAnswered ? { pAnswered } : {}),
      usefulness: 'Useless',
      route: 'rag',
      passageIds,
    });
    expect(labelJudgments(trace(diva(['p3', 'p2'], [0.2, 0.7])), example, methodCatalog(), passageText)).toEqual([
      { purpose: 'diva.verify', p: 0.2, label: true },
      { purpose: 'diva.verify', p: 0.7, label: true },
    ]);
    expect(labelJudgments(trace(diva(['p3'], [0.2, 0.7])), example, methodCatalog(), passageText).map((x) => x.label)).toEqual([false, false]);
    expect(labelJudgments(trace(diva(['p3', 'p9'], [0.2, 0.7])), example, methodCatalog(), passageText).map((x) => x.label)).toEqual([null, null]);
    // Verification off, or no passages (P = 0 set without asking the judge): no judgments.
    expect(labelJudgments(trace(diva(['p1'])), example, methodCatalog(), passageText)).toEqual([]);
    expect(labelJudgments(trace(diva([], [0, 0])), example, methodCatalog(), passageText)).toEqual([]);
  });

  it('COMBO: evidentiality by the retrieved passage, consistency by a shared gold answer; skipped rows and embedding scorers are not judgments', () => {
    const combo: ComboDecisions = {
      kind: 'combo',
      generatedPassages: ['Ron was played by Rupert Grint.', 'Thornley played Ron on stage.', 'Ron is a wizard.'],
      retrievedPassageIds: ['p1', 'p3', 'p2'],
      evidentiality: [0.9, 0.4, 0.6],
      consistency: [
        [0.8, 0.3, 0.5],
        [0, 0, 0],
        [0.2, 0.7, 0.1],
      ],
      compatibility: [],
      matching: [0, -1, 1],
      scorers: { evidentiality: 'llm-judge', consistency: 'llm-judge:content-free' },
      consistencySkipped: [false, true, false],
    };
    const labels = labelJudgments(trace(combo), example, methodCatalog(), passageText);
    expect(labels.filter((x) => x.purpose === 'combo.evidentiality')).toEqual([
      { purpose: 'combo.evidentiality', p: 0.9, label: true },
      { purpose: 'combo.evidentiality', p: 0.4, label: false },
      { purpose: 'combo.evidentiality', p: 0.6, label: true },
    ]);
    // p1 has "Rupert Grint"; p2 has "Paul Thornley" and "Thornley". Generated: g0 Grint, g1
    // Thornley, g2 none. p1–g0 share; p1–g1 differ; p1–g2 one side; p2–g0 differ; p2–g1 share.
    expect(labels.filter((x) => x.purpose === 'combo.consistency').map((x) => [x.p, x.label])).toEqual([
      [0.8, true],
      [0.3, false],
      [0.5, false],
      [0.2, false],
      [0.7, true],
      [0.1, false],
    ]);
    const embedded = { ...combo, scorers: { evidentiality: 'embedding-cosine:minilm', consistency: 'embedding-cosine:minilm' } };
    expect(labelJudgments(trace(embedded), example, methodCatalog(), passageText)).toEqual([]);
  });

  it('COMBO: a pair where neither passage holds a gold answer is unlabelled', () => {
    const combo: ComboDecisions = {
      kind: 'combo',
      generatedPassages: ['Ron is a wizard.'],
      retrievedPassageIds: ['p3'],
      evidentiality: [0.4],
      consistency: [[0.6]],
      compatibility: [[0.24]],
      matching: [0],
    };
    expect(labelJudgments(trace(combo), example, methodCatalog(), passageText)).toEqual([
      { purpose: 'combo.evidentiality', p: 0.4, label: false },
      { purpose: 'combo.consistency', p: 0.6, label: null },
    ]);
  });

  it('VE: the consistency is labelled by exact match of the final answer', () => {
    const ve = (finalAnswer: string): VeDecisions => ({
      kind: 'verify-edit',
      samples: [],
      votes: {},
      majorityAnswer: finalAnswer,
      consistency: 0.6,
      threshold: 0.5,
      edited: false,
      edits: [],
      finalAnswer,
    });
    expect(labelJudgments(trace(ve('rupert grint'), 'rupert grint'), example, methodCatalog())).toEqual([{ purpose: 've.consistency', p: 0.6, label: true }]);
    expect(labelJudgments(trace(ve('Grint'), 'Grint'), example, methodCatalog())).toEqual([{ purpose: 've.consistency', p: 0.6, label: false }]);
    const noGold = { ...example, answers: [], qaPairs: [] };
    expect(labelJudgments(trace(ve('x'), 'x'), noGold, methodCatalog())).toEqual([{ purpose: 've.consistency', p: 0.6, label: null }]);
  });
});
