import { describe, expect, it } from 'vitest';
import { expandGrid, gridAxes } from '../../src/experiments/grid';
import { findReferencePoint } from '../../src/experiments/sweep';
import { sweepPairedMetrics } from '../../src/experiments/sweep-charts';
import { summaryCsv, summaryMarkdown, type SummaryRow } from '../../src/experiments/summary';
import type { PairedRow } from '../../src/run-files/comparison';

const axes = gridAxes({ 'pipeline.options.pruneThreshold': [0.1, 0.3, 0.5] });
const points = expandGrid(axes);

describe('sweep.reference', () => {
  it('defaults to the first point and takes a label, a value of the only axis or a mapping', () => {
    expect(findReferencePoint(axes, points, undefined)).toBe(0);
    expect(findReferencePoint(axes, points, 'pruneThreshold=0.5')).toBe(2);
    expect(findReferencePoint(axes, points, 0.3)).toBe(1);
    expect(findReferencePoint(axes, points, { 'pipeline.options.pruneThreshold': 0.5 })).toBe(2);
    expect(findReferencePoint(axes, points, { pruneThreshold: 0.1 })).toBe(0);
  });
  it('says which points exist when it names none', () => {
    expect(() => findReferencePoint(axes, points, 0.7, 'x.yaml')).toThrowError(/x\.yaml: sweep\.reference 0\.7 is not a point of the grid/);
  });
  it('refuses a mapping that leaves an axis out of a two-axis grid', () => {
    const two = gridAxes({ 'a.x': [1, 2], 'a.y': ['p', 'q'] });
    const grid = expandGrid(two);
    expect(findReferencePoint(two, grid, { x: 2, y: 'q' })).toBe(3);
    expect(() => findReferencePoint(two, grid, { x: 2 })).toThrowError(/not a point of the grid/);
  });
});

function pairedRow(metric: string, meanDelta: number, ciLow: number, ciHigh: number, p: number): PairedRow {
  return { run: 'r', baseline: 'b', metric, n: 20, baselineMean: 10, runMean: 10 + meanDelta, meanDelta, ciLow, ciHigh, p, pMethod: 'exact', pHolm: p, sdDelta: 1, questionsFor80Power: 30, answerChanged: 3, failedInRun: 0, failedInBaseline: 0, onlyInRun: 0, onlyInBaseline: 0 };
}

describe('paired deltas in the sweep summary and the parent metrics', () => {
  const metrics = { n: 20, metrics: { str_em: { mean: 10, ciLow: 5, ciHigh: 15, n: 20 } }, usage: { llm_calls: 1, prompt_tokens: 1, completion_tokens: 1, cache_hits: 0, wall_seconds: 1 } };
  const rows: SummaryRow[] = [
    { point: points[0], runDir: '/a', status: 'FINISHED', metrics, paired: [pairedRow('str_em', 2.5, -1, 6, 0.25)] },
    { point: points[1], runDir: '/b', status: 'FINISHED', metrics, reference: true },
  ];
  it('adds a Δ column per metric to summary.md, "reference" on the reference row', () => {
    const md = summaryMarkdown(axes, rows);
    expect(md).toContain('| Δ str_em vs reference [95% CI] p |');
    expect(md).toContain('| +2.5 [-1.0, 6.0] p 0.250 |');
    expect(md.split('\n')[3]).toContain('| reference |');
  });
  it('adds delta, CI, p, Holm p and n columns to summary.csv (0 at the reference)', () => {
    const [head, first, second] = summaryCsv(axes, rows).trim().split('\n');
    expect(head).toContain('delta_str_em,delta_str_em_ci_low,delta_str_em_ci_high,p_str_em,p_holm_str_em,n_paired_str_em');
    expect(first).toContain('2.5,-1,6,0.25,0.25,20');
    expect(second).toContain(',0,0,0,,,');
  });
  it('logs delta, its band and p at each point; 0 with a zero band at the reference', () => {
    expect(sweepPairedMetrics(rows[0])).toEqual({ 'delta.str_em': 2.5, 'delta.str_em.ci_low': -1, 'delta.str_em.ci_high': 6, 'p.str_em': 0.25 });
    expect(sweepPairedMetrics(rows[1], ['str_em'])).toEqual({ 'delta.str_em': 0, 'delta.str_em.ci_low': 0, 'delta.str_em.ci_high': 0 });
  });
});
