import { describe, expect, it } from 'vitest';
import { answerTokens, coverageAt, firstAnswerRanks, hasAnswer } from '../../src/retrieval/has-answer';
import type { Passage, ScoredPassage } from '../../src/retrieval/types';

const passage = (text: string, title = 'T'): Passage => ({ id: text.slice(0, 8), title, text });

describe('answerTokens (DPR SimpleTokenizer)', () => {
  it('keeps runs of letters/digits/marks and splits every other non-space character off', () => {
    expect(answerTokens("Ali Daei's 109 goals, (2006)!")).toEqual(['ali', 'daei', "'", 's', '109', 'goals', ',', '(', '2006', ')', '!']);
  });
  it('normalises to NFD so composed and decomposed accents give the same tokens', () => {
    expect(answerTokens('Curaçao')).toEqual(answerTokens('Curac\u0327ao'));
    expect(answerTokens('Curaçao')).toHaveLength(1);
  });
});

describe('hasAnswer', () => {
  it('ignores case', () => {
    expect(hasAnswer('The capital is PARIS.', ['paris'])).toBe(true);
  });
  it('matches multi-token answers only as a contiguous sequence', () => {
    expect(hasAnswer('Josef Bican scored over 800 goals.', ['Josef Bican'])).toBe(true);
    expect(hasAnswer('Bican, Josef scored over 800 goals.', ['Josef Bican'])).toBe(false);
  });
  it('treats punctuation as tokens: present when the passage has it, a mismatch when it does not', () => {
    expect(hasAnswer('He was born on July 4, 1990 in Ohio.', ['July 4, 1990'])).toBe(true);
    expect(hasAnswer('He was born on July 4 1990 in Ohio.', ['July 4, 1990'])).toBe(false);
    // Punctuation next to the answer in the passage does not hide it.
    expect(hasAnswer('"Paris", she said.', ['Paris'])).toBe(true);
  });
  it('never matches part of a token', () => {
    expect(hasAnswer('A Parisian cafe.', ['Paris'])).toBe(false);
    expect(hasAnswer('In 19900 years.', ['1990'])).toBe(false);
    expect(hasAnswer('the 2006–07 season', ['2006'])).toBe(true); // the en dash is its own token
  });
  it('matches accented text in either Unicode form, but does not strip accents (as DPR)', () => {
    expect(hasAnswer('Islands: Aruba, Curac\u0327ao and Bonaire.', ['Curaçao'])).toBe(true);
    expect(hasAnswer('Islands: Aruba, Curaçao and Bonaire.', ['Curacao'])).toBe(false);
  });
  it('is true when any one of several answers is contained', () => {
    expect(hasAnswer('Christine Sinclair leads.', ['Abby Wambach', 'Sinclair'])).toBe(true);
    expect(hasAnswer('Christine Sinclair leads.', ['Abby Wambach', 'Mia Hamm'])).toBe(false);
  });
  it('never counts an empty or blank answer', () => {
    expect(hasAnswer('anything at all', ['', '   '])).toBe(false);
    expect(hasAnswer('anything at all', [])).toBe(false);
  });
  it('searches the passage text, not its title (as DPR)', () => {
    expect(hasAnswer(passage('scored 805 goals', 'Josef Bican'), ['Josef Bican'])).toBe(false);
    expect(hasAnswer(passage('Josef Bican scored 805 goals', 'Footballers'), ['Josef Bican'])).toBe(true);
  });
});

describe('AC@k from first-answer ranks', () => {
  const ranked: ScoredPassage[] = ['nothing here', 'Ali Daei scored', 'also nothing', 'Josef Bican scored'].map((t, rank) => ({
    passage: passage(t),
    score: 1 - rank / 10,
    rank,
  }));
  it('finds the first rank per answer set and -1 for a missing one', () => {
    expect(firstAnswerRanks(ranked, [['Daei', 'Ali Daei'], ['Bican'], ['Sinclair']])).toEqual([1, 3, -1]);
  });
  it('AC@k is the fraction of answer sets found within k', () => {
    const ranks = [1, 3, -1];
    expect(coverageAt(ranks, 1)).toBe(0);
    expect(coverageAt(ranks, 2)).toBeCloseTo(1 / 3);
    expect(coverageAt(ranks, 4)).toBeCloseTo(2 / 3);
    expect(coverageAt(ranks, 100)).toBeCloseTo(2 / 3);
  });
});
