import { describe, expect, it } from 'vitest';
import type { QaPair } from '../../src/datasets/types';
import { answerF1, meanAnswerF1 } from '../../src/metrics/answer-f1';
import { answerCoverage, coverageCurve, hasAnswer } from '../../src/metrics/coverage';
import { drScore } from '../../src/metrics/dr';
import { FeverAccuracy, normalizeFeverLabel } from '../../src/metrics/fever';

const gold: QaPair[] = [
  { question: 'men', shortAnswers: ['Ali Daei', 'Daei'] },
  { question: 'all', shortAnswers: ['Josef Bican'] },
  { question: 'women', shortAnswers: ['Christine Sinclair'] },
];

describe('Answer-F1 of a DQ node', () => {
  it('is the F1 against the best-matching gold DQ, with its index', () => {
    expect(answerF1('Bican', gold)).toEqual({ f1: expect.closeTo(200 / 3, 10), bestDq: 1 });
    expect(answerF1('Daei', gold)).toEqual({ f1: 100, bestDq: 0 });
    expect(answerF1('Pelé', gold)).toEqual({ f1: 0, bestDq: null });
    expect(meanAnswerF1(['Daei', 'Pelé'], gold)).toBe(50);
    expect(meanAnswerF1([], gold)).toBeNull();
  });
});

describe('AC@k', () => {
  const ranked = ['Pelé scored many goals.', 'Josef Bican scored over 800.', 'Ali Daei holds the record.', 'Christine Sinclair leads.'];
  it('counts the DQs covered within the first k passages (hasAnswer from retrieval)', () => {
    expect(answerCoverage(ranked, gold, 1)).toBe(0);
    expect(answerCoverage(ranked, gold, 2)).toBeCloseTo(100 / 3, 10);
    expect(coverageCurve(ranked, gold, [1, 3, 4, 10]).map((p) => p.coverage)).toEqual([0, expect.closeTo(200 / 3, 10), 100, 100]);
    expect(hasAnswer('Parisian cafe', ['Paris'])).toBe(false);
  });
  it('skips DQs without answers; null when none has any', () => {
    expect(answerCoverage(ranked, [...gold, { question: 'x', shortAnswers: [' '] }], 4)).toBe(100);
    expect(answerCoverage(ranked, [], 4)).toBeNull();
  });
});

describe('DR', () => {
  it('is the geometric mean of D-F1 and ROUGE-L on 0–100', () => {
    expect(drScore(25, 36)).toBe(30);
    expect(drScore(0, 80)).toBe(0);
  });
});

describe('FEVER accuracy', () => {
  it('reads labels leniently but explicitly', () => {
    expect(normalizeFeverLabel('SUPPORTS')).toBe('SUPPORTS');
    expect(normalizeFeverLabel(' refutes. ')).toBe('REFUTES');
    expect(normalizeFeverLabel('Not enough info')).toBe('NOT ENOUGH INFO');
    expect(normalizeFeverLabel('NOT_ENOUGH_INFO')).toBe('NOT ENOUGH INFO');
    expect(normalizeFeverLabel('maybe')).toBeNull();
    expect(normalizeFeverLabel('constructor')).toBeNull();
  });
  it('scores 100 for the gold label and 0 otherwise', () => {
    expect(FeverAccuracy({ output: 'supports', expected: 'SUPPORTS' }).score).toBe(100);
    expect(FeverAccuracy({ output: 'garbage', expected: 'SUPPORTS' })).toEqual({ name: 'accuracy', score: 0, metadata: { predicted_label: null } });
  });
});
