import { describe, expect, it } from 'vitest';
import {
  auc,
  clusteredAucInterval,
  judgeQuality,
  labelHistogram,
  pairedAucDifference,
  reliabilityBins,
  runJudgeDiagnostics,
} from '../../src/metrics/judge-quality';
import type { ExampleResult, LabelledJudgment } from '../../src/run-files';
import { methodCatalog } from '../../src/pipelines/registry';

const j = (p: number, label: boolean | null, purpose = 'toc.verify', pRaw?: number): LabelledJudgment => ({
  purpose,
  p,
  label,
  ...(pRaw !== undefined ? { pRaw } : {}),
});

describe('auc', () => {
  it('counts a tie between a positive and a negative as one half', () => {
    // positives {0.5, 0.8}, negatives {0.2, 0.5}: pairs 1 + 0.5 + 1 + 1 = 3.5 of 4
    expect(auc([0.2, 0.5, 0.5, 0.8], [false, true, false, true])).toBeCloseTo(0.875, 12);
  });

  it('is 0.5 when every score is the same, 1 when positives all rank above, 0 when inverted', () => {
    expect(auc([0.3, 0.3, 0.3], [true, false, true])).toBe(0.5);
    expect(auc([0.1, 0.2, 0.9], [false, false, true])).toBe(1);
    expect(auc([0.1, 0.2, 0.9], [true, true, false])).toBe(0);
  });

  it('is NaN when a class is empty', () => {
    expect(auc([0.1, 0.9], [true, true])).toBeNaN();
    expect(auc([], [])).toBeNaN();
  });
});

describe('pairedAucDifference', () => {
  it('a judge that ranks every question right against one that ranks each backwards: Δ = +1, the whole interval above 0, p at its floor', () => {
    const q = [
      { pA: 0.2, pB: 0.9, label: true },
      { pA: 0.8, pB: 0.1, label: false },
    ];
    const r = pairedAucDifference([q, q, q, q], { resamples: 500 })!;
    expect(r.delta).toBe(1);
    expect(r.low).toBe(1);
    expect(r.high).toBe(1);
    expect(r.p).toBe(1 / 500);
  });

  it('two judges that rank alike: Δ = 0 and p = 1', () => {
    const qs = [
      [{ pA: 0.7, pB: 0.6, label: true }, { pA: 0.3, pB: 0.2, label: false }],
      [{ pA: 0.4, pB: 0.45, label: true }, { pA: 0.5, pB: 0.55, label: false }],
    ];
    const r = pairedAucDifference(qs, { seed: 1 })!;
    expect(r.delta).toBe(0);
    expect(r.p).toBe(1);
  });

  it('pairs the resamples: the judges differ on one question only, and Δ stays on its side of 0', () => {
    // B fixes question 2's order and agrees elsewhere: every resample's Δ is ≥ 0.
    const qs = [
      [{ pA: 0.9, pB: 0.9, label: true }, { pA: 0.1, pB: 0.1, label: false }],
      [{ pA: 0.3, pB: 0.8, label: true }, { pA: 0.6, pB: 0.2, label: false }],
      [{ pA: 0.7, pB: 0.7, label: true }, { pA: 0.4, pB: 0.4, label: false }],
    ];
    const r = pairedAucDifference(qs, { seed: 2 })!;
    expect(r.delta).toBeGreaterThan(0);
    expect(r.low).toBeGreaterThanOrEqual(0);
  });

  it('null without both classes', () => {
    expect(pairedAucDifference([[{ pA: 0.5, pB: 0.6, label: true }]])).toBeNull();
    expect(pairedAucDifference([])).toBeNull();
  });
});

describe('clusteredAucInterval', () => {
  it('resamples whole questions: two questions that disagree give resamples of AUC 0, 0.5 and 1', () => {
    // Question A alone: AUC 1; B alone: AUC 0; A with B pooled: (1 + .5 + .5 + 0)/4 = 0.5.
    // Resamples AA, AB/BA, BB come with probabilities 1/4, 1/2, 1/4, so the 2.5th and 97.5th
    // percentiles of 1000 resamples are 0 and 1.
    const a = [{ p: 0.9, label: true }, { p: 0.1, label: false }];
    const b = [{ p: 0.1, label: true }, { p: 0.9, label: false }];
    expect(clusteredAucInterval([a, b], { seed: 3 })).toEqual({ low: 0, high: 1 });
  });

  it('is a zero-width interval at 1 when every question separates perfectly', () => {
    const q = [{ p: 0.8, label: true }, { p: 0.3, label: false }];
    expect(clusteredAucInterval([q, q, q])).toEqual({ low: 1, high: 1 });
  });

  it('is reproducible for a seed', () => {
    const qs = [
      [{ p: 0.9, label: true }, { p: 0.4, label: false }],
      [{ p: 0.3, label: true }, { p: 0.6, label: false }],
      [{ p: 0.7, label: true }],
      [{ p: 0.2, label: false }, { p: 0.5, label: true }],
    ];
    expect(clusteredAucInterval(qs, { seed: 7 })).toEqual(clusteredAucInterval(qs, { seed: 7 }));
    const ci = clusteredAucInterval(qs, { seed: 7 })!;
    expect(ci.low).toBeLessThan(ci.high);
  });

  it('is null without questions', () => {
    expect(clusteredAucInterval([])).toBeNull();
  });
});

describe('judgeQuality', () => {
  it('computes Brier, mean P per label, share at 0.5 and counts, leaving unlabelled judgments out', () => {
    const d = judgeQuality('toc.verify', [[j(0.9, true), j(0.2, false)], [j(0.6, false), j(0.7, null)], [j(0.4, null, 'diva.verify')]])!;
    expect(d.judgments).toBe(4);
    expect(d.labelled).toBe(3);
    expect(d.positives).toBe(1);
    expect(d.negatives).toBe(2);
    expect(d.brier).toBeCloseTo((0.01 + 0.04 + 0.36) / 3, 12);
    expect(d.meanPPositive).toBeCloseTo(0.9, 12);
    expect(d.meanPNegative).toBeCloseTo(0.4, 12);
    expect(d.shareAtLeastHalf).toBeCloseTo(2 / 3, 12);
    expect(d.auc).toBe(1);
    expect(d.questions).toBe(2);
    // 1 positive, 2 negatives: below the minimum per class, whatever the AUC.
    expect(d.separates).toBe(false);
    expect(d.verdict).toBe(
      'toc.verify: only 1 right and 2 wrong labelled judgments (fewer than 10 in a class), so a threshold sweep of this judge cannot show an effect.',
    );
  });

  it('with one class empty has no AUC and no CI, and says a sweep cannot show an effect', () => {
    const d = judgeQuality('toc.verify', Array.from({ length: 12 }, () => [j(0.3, true)]))!;
    expect(d.auc).toBeNull();
    expect(d.aucCiLow).toBeNull();
    expect(d.aucCiHigh).toBeNull();
    expect(d.brier).toBeCloseTo(0.49, 12);
    expect(d.meanPNegative).toBeNull();
    expect(d.separates).toBe(false);
    expect(d.verdict).toContain('0 wrong');
    expect(d.verdict).toContain('cannot show an effect');
  });

  it('separates when each class has enough judgments and the CI excludes 0.5, and says where 0.5 cuts', () => {
    const questions = Array.from({ length: 12 }, () => [j(0.8, true), j(0.3, false)]);
    const d = judgeQuality('toc.verify', questions)!;
    expect([d.auc, d.aucCiLow, d.aucCiHigh]).toEqual([1, 1, 1]);
    expect(d.separates).toBe(true);
    expect(d.verdict).toBe('toc.verify: P separates right from wrong (AUC 1.00 [1.00, 1.00]); 50% of labelled judgments are at or above 0.5.');
  });

  it('a judge that ranks well but never reaches 0.5 is told apart (the embedded judge of issue 26)', () => {
    const questions = Array.from({ length: 12 }, () => [j(0.33, true), j(0.26, false)]);
    const d = judgeQuality('toc.verify', questions)!;
    expect(d.separates).toBe(true);
    expect(d.verdict).toContain('no P reaches 0.5, so the 0.5 threshold rejects everything');
  });

  it('does not separate when the CI contains 0.5', () => {
    // Half the questions rank right, half wrong: pooled AUC 0.5.
    const questions = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? [j(0.9, true), j(0.1, false)] : [j(0.1, true), j(0.9, false)]));
    const d = judgeQuality('toc.verify', questions)!;
    expect(d.auc).toBe(0.5);
    expect(d.aucCiLow!).toBeLessThan(0.5);
    expect(d.aucCiHigh!).toBeGreaterThan(0.5);
    expect(d.separates).toBe(false);
    expect(d.verdict).toMatch(/^toc\.verify: P does not separate right from wrong \(AUC 0\.50 \[0\.\d\d, 0\.\d\d\] includes 0\.5\), so a threshold sweep of this judge cannot show an effect\.$/);
  });

  it('reports raw P when the pipeline calibrated', () => {
    // Calibrated P separates; raw P is constant (AUC 0.5).
    const questions = Array.from({ length: 12 }, () => [j(0.8, true, 'toc.verify', 0.3), j(0.4, false, 'toc.verify', 0.3)]);
    const d = judgeQuality('toc.verify', questions)!;
    expect(d.auc).toBe(1);
    expect(d.raw?.auc).toBe(0.5);
    expect(d.raw?.shareAtLeastHalf).toBe(0);
    expect(judgeQuality('toc.verify', [[j(0.8, true)]])!.raw).toBeUndefined();
  });

  it('is null when the run has no judgment of the purpose', () => {
    expect(judgeQuality('diva.verify', [[j(0.8, true)]])).toBeNull();
  });
});

describe('reliability bins and histograms', () => {
  it('bins labelled P into equal-width bins, P = 1 in the last, empty bins left out', () => {
    const bins = reliabilityBins(
      [
        { p: 0.05, label: false },
        { p: 0.15, label: true },
        { p: 0.12, label: false },
        { p: 1, label: true },
      ],
      10,
    );
    expect(bins).toHaveLength(3);
    expect(bins[0]).toMatchObject({ low: 0, high: 0.1, n: 1, meanP: 0.05, positiveRate: 0 });
    expect(bins[1].n).toBe(2);
    expect(bins[1].meanP).toBeCloseTo(0.135, 12);
    expect(bins[1].positiveRate).toBe(0.5);
    expect(bins[2]).toMatchObject({ low: 0.9, high: 1, n: 1, meanP: 1, positiveRate: 1 });
  });

  it('counts P by label', () => {
    const h = labelHistogram([{ p: 0.05, label: false }, { p: 0.55, label: true }, { p: 0.99, label: true }], 4);
    expect(h.edges).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(h.positive).toEqual([0, 0, 1, 1]);
    expect(h.negative).toEqual([1, 0, 0, 0]);
  });
});

describe('runJudgeDiagnostics', () => {
  const result = (id: string, judgments: LabelledJudgment[] | undefined, error?: string): ExampleResult => ({
    id,
    question: id,
    output: '',
    format: 3,
    scores: {},
    usage: { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 },
    ...(judgments ? { judgments } : {}),
    ...(error ? { error } : {}),
  });

  it('keys every purpose of the answered results, in the documented order; failed questions are left out', () => {
    const results = [
      result('q1', [j(0.4, true, 'combo.consistency'), j(0.9, true, 'combo.evidentiality')]),
      result('q2', [j(0.9, false, 'combo.evidentiality')]),
      result('q3', [j(0.1, false, 'combo.evidentiality')], 'endpoint down'),
      result('q4', undefined),
    ];
    const judges = runJudgeDiagnostics(results, { judges: methodCatalog().judges });
    expect(Object.keys(judges)).toEqual(['combo.evidentiality', 'combo.consistency']);
    expect(judges['combo.evidentiality'].judgments).toBe(2);
    expect(judges['combo.evidentiality'].auc).toBe(0.5);
    expect(judges['combo.evidentiality'].silverLabel).toBe('the retrieved passage contains a gold short answer');
    // Without the catalog's judges nothing is known of them: purposes by name, silver label unknown.
    const bare = runJudgeDiagnostics(results);
    expect(Object.keys(bare)).toEqual(['combo.consistency', 'combo.evidentiality']);
    expect(bare['combo.evidentiality'].silverLabel).toBe('unknown');
    expect(bare['combo.evidentiality'].auc).toBe(0.5);
  });

  it('is empty for results without judgments (runs written before diagnostics existed)', () => {
    expect(runJudgeDiagnostics([result('q1', undefined)])).toEqual({});
  });
});

describe('judge columns of the sweep summary', () => {
  it('one AUC [CI] column per judge, starred where a sweep of it cannot show an effect; CSV has the numbers', async () => {
    const { summaryCsv, summaryMarkdown } = await import('../../src/experiments/summary');
    const separating = judgeQuality('toc.verify', Array.from({ length: 12 }, () => [j(0.8, true), j(0.3, false)]))!;
    const flat = judgeQuality('toc.verify', Array.from({ length: 12 }, () => [j(0.5, true), j(0.5, false)]))!;
    const metrics = (d: typeof flat) => ({
      n: 12,
      metrics: {},
      usage: { llm_calls: 1, prompt_tokens: 1, completion_tokens: 1, cache_hits: 0, wall_seconds: 1 },
      judges: { 'toc.verify': d },
    });
    const axes = [{ label: 'judgeCalibration', path: 'pipeline.options.judgeCalibration', values: ['none', 'content-free'] }];
    const rows = [
      { point: { values: { judgeCalibration: 'content-free' } }, runDir: '/r/1', status: 'FINISHED', metrics: metrics(separating) },
      { point: { values: { judgeCalibration: 'none' } }, runDir: '/r/2', status: 'FINISHED', metrics: metrics(flat) },
    ] as never;
    const md = summaryMarkdown(axes as never, rows);
    expect(md.split('\n')[0]).toContain('| judge toc.verify AUC |');
    expect(md).toContain('| content-free | 12 | 1.00 [1.00, 1.00] |');
    expect(md).toContain('| none | 12 | 0.50 [0.50, 0.50]* |');
    expect(md).toContain('a threshold sweep of it cannot show an effect');
    const csv = summaryCsv(axes as never, rows).trim().split('\n');
    expect(csv[0]).toContain('judge.toc.verify.auc,judge.toc.verify.auc_ci_low,judge.toc.verify.auc_ci_high,judge.toc.verify.labelled,judge.toc.verify.separates');
    expect(csv[1]).toContain(',1,1,1,24,1,');
    expect(csv[2]).toContain(',0.5,0.5,0.5,24,0,');
  });
});
