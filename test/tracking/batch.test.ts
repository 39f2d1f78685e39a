import { describe, expect, it } from 'vitest';
import { DEFAULT_BATCH_LIMITS, decodeMetricValue, encodeMetricValue, metricToJson, planLogBatches, type LogBatch, type MetricRecord } from '../../src/tracking/batch';
import { MLFLOW_LIMITS, keyProblem, sanitizeKey, truncateValue } from '../../src/tracking/limits';

function metrics(n: number, valueOf = (i: number) => i / 7): MetricRecord[] {
  return Array.from({ length: n }, (_, i) => ({ key: `m${i % 10}`, value: valueOf(i), step: Math.floor(i / 10), timestamp: 1_700_000_000_000 + i }));
}

function params(n: number, value = (i: number) => `v${i}`) {
  return Array.from({ length: n }, (_, i) => ({ key: `p${i}`, value: value(i) }));
}

function requestChars(batch: LogBatch): number {
  return JSON.stringify({ run_id: 'f'.repeat(32), metrics: batch.metrics.map(metricToJson), params: batch.params, tags: batch.tags }).length;
}

function assertWithinLimits(batches: LogBatch[]): void {
  for (const b of batches) {
    expect(b.metrics.length).toBeLessThanOrEqual(MLFLOW_LIMITS.metricsPerBatch);
    expect(b.params.length).toBeLessThanOrEqual(MLFLOW_LIMITS.paramsPerBatch);
    expect(b.tags.length).toBeLessThanOrEqual(MLFLOW_LIMITS.tagsPerBatch);
    expect(b.metrics.length + b.params.length + b.tags.length).toBeLessThanOrEqual(MLFLOW_LIMITS.entitiesPerBatch);
    expect(requestChars(b)).toBeLessThanOrEqual(MLFLOW_LIMITS.batchRequestChars);
  }
}

describe('planLogBatches', () => {
  it('splits 2,500 metrics and 250 params into three full requests, keeping every item once and in order', () => {
    const m = metrics(2500);
    const p = params(250);
    const batches = planLogBatches({ metrics: m, params: p });
    assertWithinLimits(batches);
    // 2,750 entities at ≤ 1,000 per request cannot fit in fewer than three.
    expect(batches).toHaveLength(3);
    expect(batches.map((b) => b.params.length)).toEqual([100, 100, 50]);
    expect(batches.map((b) => b.metrics.length)).toEqual([900, 900, 700]);
    expect(batches.flatMap((b) => b.metrics)).toEqual(m);
    expect(batches.flatMap((b) => b.params)).toEqual(p);
  });

  it('caps tags at 100 per request even when nothing else is sent', () => {
    const tags = params(250).map((t) => ({ key: `t.${t.key}`, value: t.value }));
    const batches = planLogBatches({ tags });
    expect(batches.map((b) => b.tags.length)).toEqual([100, 100, 50]);
    assertWithinLimits(batches);
  });

  it('splits by size when values are long: 400 params of 6,000 chars exceed 1 MB together', () => {
    const p = params(400, (i) => String(i % 10).repeat(MLFLOW_LIMITS.paramValueChars));
    const batches = planLogBatches({ params: p });
    assertWithinLimits(batches);
    // 100 params of ~6 kB are ~600 kB: the count limit binds here, not the size.
    expect(batches.map((b) => b.params.length)).toEqual([100, 100, 100, 100]);
    const big = params(300, (i) => 'x'.repeat(4000) + i);
    const tight = planLogBatches({ params: big }, { ...DEFAULT_BATCH_LIMITS, chars: 200_000 });
    for (const b of tight) expect(requestChars(b)).toBeLessThanOrEqual(200_000);
    expect(tight.length).toBeGreaterThan(3);
    expect(tight.flatMap((b) => b.params)).toEqual(big);
  });

  it('sends nothing for nothing', () => {
    expect(planLogBatches({})).toEqual([]);
  });

  it('encodes non-finite metric values the way the server parses them', () => {
    expect(encodeMetricValue(NaN)).toBe('NaN');
    expect(encodeMetricValue(Infinity)).toBe('Infinity');
    expect(encodeMetricValue(-Infinity)).toBe('-Infinity');
    expect(encodeMetricValue(0.25)).toBe(0.25);
    expect(Number.isNaN(decodeMetricValue('NaN'))).toBe(true);
    expect(decodeMetricValue(-1.5)).toBe(-1.5);
  });
});

describe('value and key limits', () => {
  it('truncates long values with a marker that keeps the result at the limit', () => {
    const long = 'a'.repeat(10_000);
    const cut = truncateValue(long, MLFLOW_LIMITS.paramValueChars);
    expect(Array.from(cut)).toHaveLength(MLFLOW_LIMITS.paramValueChars);
    expect(cut).toMatch(/…\[truncated, 10000 chars\]$/);
    expect(truncateValue('short', 10)).toBe('short');
  });

  it('counts code points like the server, and never splits a surrogate pair', () => {
    const emoji = '😀'.repeat(4000); // 4,000 code points, 8,000 UTF-16 units
    expect(truncateValue(emoji, 6000)).toBe(emoji);
    const cut = truncateValue('😀'.repeat(7000), 6000);
    expect(Array.from(cut)).toHaveLength(6000);
    expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('explains why a key is refused and repairs keys on request', () => {
    expect(keyProblem('llm.temperature')).toBeUndefined();
    expect(keyProblem('metrics/str_em: dev')).toBeUndefined();
    expect(keyProblem('a[0]')).toMatch(/only contain/);
    expect(keyProblem('a//b')).toMatch(/normalised/);
    expect(keyProblem('/abs')).toMatch(/normalised/);
    expect(keyProblem('k'.repeat(251))).toMatch(/longer than 250/);
    expect(sanitizeKey('retrievers[0].k')).toBe('retrievers_0_.k');
    expect(keyProblem(sanitizeKey('a//b/../c/'))).toBeUndefined();
    expect(keyProblem(sanitizeKey('k'.repeat(300)))).toBeUndefined();
  });
});
