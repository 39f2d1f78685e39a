import { describe, expect, it } from 'vitest';
import { exitBound } from '../../bench/exit-bound.js';

describe('exitBound', () => {
  const dq = (id: string) => id.endsWith('.dq1');

  it('counts only the calls above the exit cost on unambiguous questions', () => {
    // Fixed run: two AQs (8 and 6 calls), two DQs (5 and 1 call); an exit costs 2 calls.
    const fixed = [
      { id: 'a', calls: 8 },
      { id: 'a.dq1', calls: 5 },
      { id: 'b', calls: 6 },
      { id: 'b.dq1', calls: 1 },
    ];
    const bound = exitBound(fixed, dq, 2);
    // DQs save 3 + 0 (a 1-call question cannot save by costing 2) of 20 calls.
    expect(bound.perfectDetector).toBeCloseTo(3 / 20, 12);
    // Exiting everywhere saves 6 + 3 + 4 + 0 of 20.
    expect(bound.exitEverywhere).toBeCloseTo(13 / 20, 12);
  });

  it('is zero on a set with no unambiguous question, such as ASQA as published', () => {
    const bound = exitBound(
      [
        { id: 'a', calls: 9 },
        { id: 'b', calls: 4 },
      ],
      dq,
      2,
    );
    expect(bound.perfectDetector).toBe(0);
    expect(bound.exitEverywhere).toBeCloseTo(9 / 13, 12);
  });

  it('is zero for an empty run and rejects a cost that is not a number of calls', () => {
    expect(exitBound([], dq, 2)).toEqual({ perfectDetector: 0, exitEverywhere: 0 });
    expect(() => exitBound([{ id: 'a', calls: 3 }], dq, Number.NaN)).toThrow(/exit cost/);
    expect(() => exitBound([{ id: 'a', calls: 3 }], dq, -1)).toThrow(/exit cost/);
  });
});
