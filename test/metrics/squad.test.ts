import { describe, expect, it } from 'vitest';
import { ExactMatch, F1, exactMatch, maxOverGolds, normalizeAnswer, tokenF1 } from '../../src/metrics/squad';

// Expected values follow the official SQuAD v2.0 script (lower → strip ASCII punctuation →
// remove \b(a|an|the)\b with Python's Unicode word boundaries → collapse whitespace).
describe('normalizeAnswer (SQuAD)', () => {
  it('lower-cases, strips ASCII punctuation and articles, collapses whitespace', () => {
    expect(normalizeAnswer('  The  Beatles! ')).toBe('beatles');
    expect(normalizeAnswer('An apple, a pear & the plum.')).toBe('apple pear plum');
  });
  it('keeps Unicode punctuation (the reference removes only string.punctuation)', () => {
    expect(normalizeAnswer('“Hello” — world…')).toBe('“hello” — world…');
    expect(normalizeAnswer('2006–07')).toBe('2006–07');
  });
  it('leaves articles inside words alone', () => {
    expect(normalizeAnswer('Theatre of Anatolia')).toBe('theatre of anatolia');
    expect(normalizeAnswer('Athens an thenar')).toBe('athens thenar');
  });
  it('uses Unicode word boundaries: a letter like é is part of the word', () => {
    // Python: "éa" is one word (é is \w), so the "a" stays; JS's ASCII \b would remove it.
    expect(normalizeAnswer('café a éa')).toBe('café éa');
  });
  it('removes an article exposed by deleted punctuation and joins hyphenated words', () => {
    expect(normalizeAnswer('the-end')).toBe('theend');
    expect(normalizeAnswer('(the) end')).toBe('end');
    expect(normalizeAnswer("Rock 'n' roll")).toBe('rock n roll');
  });
  it('handles numbers the reference way: separators are deleted, not kept', () => {
    expect(normalizeAnswer('1,000,000')).toBe('1000000');
    expect(normalizeAnswer('3.5 million')).toBe('35 million');
    expect(normalizeAnswer('$1.5')).toBe('15');
  });
  it('splits on Unicode whitespace like Python str.split()', () => {
    expect(normalizeAnswer('New\u00a0York\u2003City\tNow')).toBe('new york city now');
  });
});

describe('exact match and token F1', () => {
  it('EM compares normalised strings', () => {
    expect(exactMatch('The Beatles', 'beatles')).toBe(1);
    expect(exactMatch('Beatles band', 'beatles')).toBe(0);
  });
  it('F1 by hand: pred "josef bican scored" vs gold "bican" → P=1/3, R=1, F=0.5', () => {
    expect(tokenF1('Josef Bican scored', 'Bican')).toBeCloseTo(0.5, 12);
  });
  it('F1 counts repeated tokens with multiplicity (Counter intersection)', () => {
    // pred [a1,a1,b] vs gold [a1,b,b]: common = 1×a1 + 1×b = 2 → P = R = 2/3.
    expect(tokenF1('a1 a1 b', 'a1 b b')).toBeCloseTo(2 / 3, 12);
  });
  it('F1 of empty answers follows SQuAD 2.0: 1 if both empty, else 0', () => {
    expect(tokenF1('', '')).toBe(1);
    expect(tokenF1('the', '')).toBe(1); // "the" normalises to nothing
    expect(tokenF1('', 'Paris')).toBe(0);
  });
  it('max over golds, and scorers on 0–100 with null for no golds', () => {
    expect(maxOverGolds(tokenF1, 'Ali Daei', ['Bican', 'Daei'])).toBeCloseTo(2 / 3, 12);
    expect(ExactMatch({ output: 'the paris', expected: ['Rome', 'Paris'] })).toEqual({ name: 'em', score: 100 });
    expect(F1({ output: 'x', expected: [] })).toEqual({ name: 'f1', score: null, reason: 'no gold answers' });
  });
});
