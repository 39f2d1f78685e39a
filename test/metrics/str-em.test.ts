import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets';
import type { QaPair } from '../../src/datasets/types';
import { StrEm, dqHits, exactPresence, strEm, strHit } from '../../src/metrics/str-em';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const qa = (...answers: string[][]): QaPair[] => answers.map((a, i) => ({ question: `q${i}`, shortAnswers: a }));

describe('STR-EM / STR-HIT (ALCE)', () => {
  it('hits a DQ when a normalised short answer is a substring of the normalised output', () => {
    const pairs = qa(['Ali Daei', 'Daei'], ['Josef Bican'], ['Christine Sinclair']);
    const out = 'Josef Bican holds the all-time record; in women\'s football it is Christine Sinclair.';
    expect(dqHits(pairs, out)).toEqual([false, true, true]);
    expect(strEm(pairs, out)).toBeCloseTo(200 / 3, 10);
    expect(strHit(pairs, out)).toBe(0);
  });
  it('is a plain substring test, as in the reference ("1990" is found in "19901")', () => {
    expect(exactPresence(['1990'], 'in 19901')).toBe(true);
    expect(exactPresence(['the Beatles'], 'BEATLES!')).toBe(true);
  });
  it('STR-HIT is 100 only when every DQ is hit', () => {
    expect(strHit(qa(['a1'], ['b2']), 'a1 and b2')).toBe(100);
  });
  it('a question without DQs has no STR-EM (null) instead of NaN', () => {
    expect(strEm([], 'anything')).toBeNull();
    expect(StrEm({ output: 'x', expected: [] }).score).toBeNull();
  });
});

// The 20 checked cases from ALCE's human evaluation file (data/asqa/alce_str_em_test_vectors.json),
// scored against the DQs of the same question in ASQA_dev.json.
const haveVectors = hasSharedData('asqa', 'alce_str_em_test_vectors.json') && hasSharedData('asqa', 'ASQA_dev.json');
describe.skipIf(!haveVectors)('ALCE STR-EM test vectors', () => {
  const vectors = haveVectors
    ? (JSON.parse(readFileSync(sharedDataPath('asqa', 'alce_str_em_test_vectors.json'), 'utf8')) as Array<{ id: string; output: string; expected_exact_presence: boolean[] }>)
    : [];
  const byId = haveVectors ? new Map(loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json')).map((e) => [e.id, e])) : new Map();
  it('has all 20 vectors', () => {
    expect(vectors).toHaveLength(20);
  });
  it.each(vectors.map((v, i) => [i, v] as const))('vector %i reproduces the expected per-DQ hits', (_i, v) => {
    const example = byId.get(v.id);
    expect(example, `question ${v.id} in ASQA dev`).toBeDefined();
    expect(dqHits(example!.qaPairs, v.output)).toEqual(v.expected_exact_presence);
  });
});
