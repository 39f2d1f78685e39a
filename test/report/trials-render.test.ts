import { describe, expect, it } from 'vitest';
import { aggregateResults } from '../../src/experiments/bindings';
import { sweepPairedMetrics, sweepPointMetrics } from '../../src/experiments/sweep-charts';
import { summaryCsv, summaryMarkdown, type SummaryRow } from '../../src/experiments/summary';
import { expandGrid, gridAxes } from '../../src/experiments/grid';
import { compareRuns, type CompareRunInput } from '../../src/metrics/compare';
import { comparisonFigure } from '../../src/plots/compare';
import { questionSpread, trialSpreadFigure } from '../../src/plots/trials';
import { methodCatalog } from '../../src/pipelines/registry';
import { renderComparisonReport } from '../../src/report/compare';
import { comparisonMetrics } from '../../src/report/compare-mlflow';
import { comparisonRows } from '../../src/notebook/compare';
import { trialsMarkdown } from '../../src/report/compare-trials';
import { figuresForRun, figuresForSweep } from '../../src/report/figures';
import type { RunMetrics } from '../../src/run-files';
import { result, trace } from '../plots/fixtures';
import { renderRunReport } from '../../src/report/render';

const dataset = { name: 'ambignq', split: 'dev' };
/** Six questions × three trials; the hot run gains 10 on trials 1 and 2 of every question. */
const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
const baseRows = ids.flatMap((id, i) => [0, 1, 2].map((t) => result(id, { f1: 10 * i + 5 * t }, t > 0 ? { trial: t } : {})));
const hotRows = ids.flatMap((id, i) => [0, 1, 2].map((t) => result(id, { f1: 10 * i + 5 * t + (t > 0 ? 10 : 0) + (i % 2) * 3 }, t > 0 ? { trial: t } : {})));
const metricsOf = (rows: typeof baseRows): RunMetrics => ({ n: rows.length, metrics: aggregateResults(rows), usage: { llm_calls: 0, cache_hits: 0, wall_seconds: 0 } });
const base: CompareRunInput = { name: 'base', config: { dataset, pipeline: { name: 've' } }, results: baseRows, metrics: metricsOf(baseRows) };
const hot: CompareRunInput = { name: 'hot', config: { dataset, pipeline: { name: 've' } }, results: hotRows, metrics: metricsOf(hotRows) };
const plainBase: CompareRunInput = { ...base, results: ids.map((id, i) => result(id, { f1: 10 * i })), metrics: undefined };
const plainHot: CompareRunInput = { ...hot, results: ids.map((id, i) => result(id, { f1: 10 * i + 4 })), metrics: undefined };

describe('compare output under trials', () => {
  const c = compareRuns([base, hot], { createdAt: 'fixed' });
  const row = c.rows[0];

  it('prints the variance split and a power grid in questions × trials', () => {
    const md = trialsMarkdown(c);
    const t = row.trials!;
    expect(md).toContain('| run | metric | trials (baseline/run) | paired by | trial SD (baseline/run) | sampling | questions | SD of per-question Δ |');
    expect(t.pairing).toBe('trial');
    expect(md).toContain(`| hot | f1 | 3/3 | trial | ${t.baselineTrialSd!.toFixed(1)}/${t.runTrialSd!.toFixed(1)}, Δ ${t.deltaTrialSd!.toFixed(1)} | ${Math.round(100 * t.samplingShare!)}% | ${Math.round(100 * (1 - t.samplingShare!))}% |`);
    expect(md).toContain(`| questions \\ trials | ${t.power.trials.join(' | ')} |`);
    expect(md).toContain(`| needed for 80% power | ${t.power.questionsNeeded.map((q) => q ?? '–').join(' | ')} |`);
    expect(md).toContain('power with 6 (this comparison)');
    expect(trialsMarkdown(compareRuns([plainBase, plainHot]))).toBe('');
  });

  it('the report has the trials section and each answer its trial mean ± SD; not without trials', () => {
    const html = renderComparisonReport(c, { generatedAt: 'now' });
    expect(html).toContain('Trials: sampling against questions');
    expect(html).toContain('over 3 trials (mean ± SD): f1 ');
    const plain = renderComparisonReport(compareRuns([plainBase, plainHot]), { generatedAt: 'now' });
    expect(plain).not.toContain('Trials: sampling');
    expect(plain).not.toContain('over 3 trials');
  });

  it('the delta figure adds the sampling part of each interval, only under trials', () => {
    const fig = comparisonFigure(c);
    expect(fig.data.length).toBe(2);
    const half = (fig.data[1].error_x as { array: number[] }).array[0];
    expect(half).toBeCloseTo(1.959963984540054 * Math.sqrt(row.trials!.samplingVar! / row.n), 10);
    expect(comparisonFigure(compareRuns([plainBase, plainHot])).data.length).toBe(1);
  });

  it('the comparison’s MLflow run gets the sampling share of each delta', () => {
    expect(comparisonMetrics(c)['sampling_share.f1.hot']).toBe(row.trials!.samplingShare);
    expect(Object.keys(comparisonMetrics(compareRuns([plainBase, plainHot]))).some((k) => k.startsWith('sampling_share'))).toBe(false);
  });

  it('the notebook table gains trials and sampling share columns under trials only', () => {
    expect(comparisonRows(c)[0]).toMatchObject({ trials: '3/3', sampling_share: Math.round(100 * row.trials!.samplingShare!) / 100 });
    expect(comparisonRows(compareRuns([plainBase, plainHot]))[0]).not.toHaveProperty('sampling_share');
  });
});

describe('trial spread figures', () => {
  const runData = (r: CompareRunInput) => ({ name: r.name, config: r.config, results: [...r.results], traces: [], ...(r.metrics ? { metrics: r.metrics } : {}) });

  it('per question: the mean over its trials and their SD', () => {
    const spread = questionSpread(runData(base), 'f1');
    expect(spread.map((q) => [q.id, q.trials, q.mean, q.sd])).toEqual(ids.map((id, i) => [id, 3, 10 * i + 5, 5]));
    const fig = trialSpreadFigure([runData(base), runData(hot)], { metric: 'f1' });
    expect(fig.data.length).toBe(2);
    expect((fig.data[0].error_y as { array: number[] }).array).toEqual([5, 5, 5, 5, 5, 5]);
    // The legend carries the run's two-level CI, trial SD and sampling share.
    expect(String(fig.data[0].name)).toMatch(/^base<br>\d+\.\d \[\d+\.\d, \d+\.\d\], SD 5\.0, sampling \d+%$/);
  });

  it('runs and sweeps draw it only when trials exist', () => {
    expect(figuresForRun(runData(base), methodCatalog()).figures.map((f) => f.name)).toContain('trial-spread');
    expect(figuresForRun(runData(plainBase), methodCatalog()).figures.map((f) => f.name)).not.toContain('trial-spread');
    expect(figuresForSweep([runData(base), runData(hot)], methodCatalog()).figures.map((f) => f.name)).toContain('trial-spread-points');
    expect(figuresForSweep([runData(plainBase), runData(plainHot)], methodCatalog()).figures.map((f) => f.name)).not.toContain('trial-spread-points');
  });
});

describe('sweep deltas under trials', () => {
  const axes = gridAxes({ 'pipeline.options.threshold': [0.5, 0.7] });
  const points = expandGrid(axes);
  const c = compareRuns([base, hot], { createdAt: 'fixed' });
  const rows: SummaryRow[] = [
    { point: points[0], runDir: '/a', status: 'FINISHED', metrics: base.metrics!, reference: true },
    { point: points[1], runDir: '/b', status: 'FINISHED', metrics: hot.metrics!, paired: c.rows },
  ];
  const share = c.rows[0].trials!.samplingShare!;

  it('summary.md shows trial SD and sampling share per point and per delta', () => {
    const md = summaryMarkdown(axes, rows);
    const f1 = hot.metrics!.metrics.f1;
    expect(md).toContain(`${f1.mean.toFixed(1)} [${f1.ciLow.toFixed(1)}, ${f1.ciHigh.toFixed(1)}] trial SD ${f1.trialSd!.toFixed(1)} sampling ${Math.round(100 * f1.samplingShare!)}%`);
    expect(md).toContain(` · sampling ${Math.round(100 * share)}%`);
  });
  it('summary.csv gains the trial columns only under trials', () => {
    const [head, , second] = summaryCsv(axes, rows).trim().split('\n');
    expect(head).toContain('f1,f1_ci_low,f1_ci_high,f1_trials,f1_trial_sd,f1_sampling_share');
    expect(head).toContain('n_paired_f1,delta_f1_sampling_share');
    expect(second).toContain(`,3,${hot.metrics!.metrics.f1.trialSd},`);
    const plainRows: SummaryRow[] = rows.map((r) => ({ ...r, metrics: { ...r.metrics!, metrics: { f1: { mean: 1, ciLow: 0, ciHigh: 2, n: 6 } } }, ...(r.paired ? { paired: r.paired.map(({ trials: _t, ...p }) => p) } : {}) }));
    expect(summaryCsv(axes, plainRows)).not.toContain('trial');
  });
  it('the parent run logs the trial SD and the sampling share of each delta', () => {
    expect(sweepPairedMetrics(rows[1])['delta.f1.sampling_share']).toBe(share);
    expect(sweepPointMetrics(axes, points[1], hot.metrics!).f1_trial_sd).toBe(hot.metrics!.metrics.f1.trialSd);
  });
});

describe('the run report under trials', () => {
  it('keys rows and traces by rowKey and shows the trial SD and sampling share beside the CI', () => {
    const traces = baseRows.map((r) => trace('vanilla-rag', r.id, { kind: 'baseline' } as never, { ...(r.trial ? { trial: r.trial } : {}), output: `trace of ${r.id} trial ${r.trial ?? 0}` }));
    const html = renderRunReport({ name: 'base', config: base.config, results: [...baseRows], traces, metrics: base.metrics }, methodCatalog());
    expect(html).toContain('data-id="a#1"');
    expect(html).toContain('data-id="a#2"');
    const data = JSON.parse(html.split('<script type="application/json" id="ambiqa-traces">')[1].split('</script>')[0]) as Record<string, { output: string }>;
    expect(data['a#2'].output).toBe('trace of a trial 2');
    expect(data.a.output).toBe('trace of a trial 0');
    expect(html).toMatch(/3 trials, trial SD 5\.0, sampling \d+%/);
  });
  it('a run without trials keeps its keys by id and no trial note', () => {
    const rows = ids.map((id, i) => result(id, { f1: 10 * i }));
    const html = renderRunReport({ name: 'plain', config: base.config, results: rows, traces: ids.map((id) => trace('vanilla-rag', id, { kind: 'baseline' } as never)), metrics: metricsOf(rows) }, methodCatalog());
    expect(html).toContain('data-id="a"');
    expect(html).not.toContain('#1"');
    expect(html).not.toContain('trial SD');
  });
});
