import { describe, expect, it } from 'vitest';
import { planMetrics } from '../../src/metrics/registry';

/** The one decision of which metrics a run computes and which need a reader (metrics/plan.ts). */
describe('which metrics a run computes', () => {
  it('named metrics as named; else the defaults, less those that need a reader when it is off', () => {
    expect(planMetrics('asqa').needReader).toEqual(['d_f1', 'dr']);
    const off = planMetrics('asqa', { readerOff: true });
    expect(off.metrics).not.toContain('d_f1');
    expect(off.needReader).toEqual([]);
    expect(off.usesSplitter).toBe(true);
    const named = planMetrics('asqa', { metrics: ['str_em', 'dr'], readerOff: true });
    expect(named.metrics).toEqual(['str_em', 'dr']);
    expect(named.needReader).toEqual(['dr']);
    expect(planMetrics('fever').metrics).toEqual(['accuracy']);
  });
});
