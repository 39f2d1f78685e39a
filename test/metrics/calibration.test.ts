import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/datasets/sample';
import { accuracyCoverageAuc, accuracyCoverageCurve } from '../../src/metrics/calibration';

describe('accuracy–coverage AUC (Verify-and-Edit f1auc_score)', () => {
  it('hand-worked, no ties: N = 7 → S = 6 levels, kept m_k = trunc(7k/6) = 1,2,3,4,5,7', () => {
    const conf = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3];
    const correct = [1, 0, 1, 1, 0, 1, 0];
    // accuracies 1/1, 1/2, 2/3, 3/4, 3/5, 4/7; mean = 4.0880952…/6 → 68.1349…
    const expected = (100 * (1 + 1 / 2 + 2 / 3 + 3 / 4 + 3 / 5 + 4 / 7)) / 6;
    expect(accuracyCoverageCurve(conf, correct).map((p) => p.kept)).toEqual([1, 2, 3, 4, 5, 7]);
    expect(accuracyCoverageAuc(conf, correct)).toBeCloseTo(expected, 10);
    // The order of the input does not matter, only the confidences.
    expect(accuracyCoverageAuc([...conf].reverse(), [...correct].reverse())).toBeCloseTo(expected, 10);
  });

  it('hand-worked, with a tie: both tie rules', () => {
    // Confidence 1.0 > 0.8 = 0.8 > 0.6 > 0.4; N = 5 → S = 4, m_k = 1, 2, 3, 5.
    const conf = [1.0, 0.8, 0.8, 0.6, 0.4];
    const correct = [true, true, false, false, true];
    // input-order: top-m sums 1, 2, 2, 3 → accuracies 1, 1, 2/3, 3/5 → 81.666…
    expect(accuracyCoverageAuc(conf, correct, { ties: 'input-order' })).toBeCloseTo((100 * (1 + 1 + 2 / 3 + 3 / 5)) / 4, 10);
    // average: at m = 2 the cut takes one of the two tied predictions, worth their mean 0.5:
    // sums 1, 1.5, 2, 3 → accuracies 1, 0.75, 2/3, 3/5 → 75.4166…
    const averaged = (100 * (1 + 0.75 + 2 / 3 + 3 / 5)) / 4;
    expect(accuracyCoverageAuc(conf, correct)).toBeCloseTo(averaged, 10);
    // Swapping the tied predictions changes input-order but not average.
    const swapped = [true, false, true, false, true];
    expect(accuracyCoverageAuc(conf, swapped, { ties: 'input-order' })).toBeCloseTo((100 * (1 + 0.5 + 2 / 3 + 3 / 5)) / 4, 10);
    expect(accuracyCoverageAuc(conf, swapped)).toBeCloseTo(averaged, 10);
  });

  it('matches the reference with 1,000 levels on 2,500 predictions', () => {
    // The reference (numpy f1auc_score) gave 59.81549984623468 for exactly these values during
    // development; there are no ties, so both tie rules apply.
    const rng = seededRandom(42);
    const conf: number[] = [];
    const correct: number[] = [];
    for (let i = 0; i < 2500; i++) {
      conf.push(rng());
      correct.push(rng() < 0.6 ? 1 : 0);
    }
    expect(accuracyCoverageCurve(conf, correct)).toHaveLength(1000);
    expect(accuracyCoverageAuc(conf, correct)).toBeCloseTo(59.81549984623468, 10);
  });

  it('edge cases: none → null, one → its correctness, perfect ranking > random', () => {
    expect(accuracyCoverageAuc([], [])).toBeNull();
    expect(accuracyCoverageAuc([0.4], [1])).toBe(100);
    const good = accuracyCoverageAuc([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0])!;
    const bad = accuracyCoverageAuc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1])!;
    expect(good).toBeGreaterThan(50);
    expect(bad).toBeLessThan(50);
    expect(() => accuracyCoverageAuc([1, 2], [1])).toThrow(/2 confidences but 1/);
  });
});
