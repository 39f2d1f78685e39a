import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { judgeDiagnostics } from '../../src/index';
import { judgeHistogramFigure, judgeReliabilityFigure, judgesOf } from '../../src/plots/judges';
import { figuresForRun } from '../../src/report/figures';
import { renderRunReport } from '../../src/report/render';
import type { ExampleResult, LabelledJudgment, RunMetrics } from '../../src/run-files';
import { methodCatalog } from '../../src/pipelines/registry';

const usage = { llmCalls: 1, promptTokens: 1, completionTokens: 1, cacheHits: 0, seconds: 1, retrievals: 0, parseFailures: 0 };

/** 12 questions, each one right node at P 0.8 and one wrong node at P 0.2 (a judge that separates). */
function results(): ExampleResult[] {
  return Array.from({ length: 12 }, (_, i) => ({
    id: `q${i}`,
    question: `question ${i}`,
    output: 'answer',
    format: 3 as const,
    scores: { str_em: { value: 50 } },
    usage,
    judgments: [
      { purpose: 'toc.verify', p: 0.8, label: true },
      { purpose: 'toc.verify', p: 0.2, label: false },
      { purpose: 'toc.verify', p: 0.5, label: null },
    ] satisfies LabelledJudgment[],
  }));
}

describe('judge figures', () => {
  const d = judgesOf({ results: results() }, methodCatalog().judges)['toc.verify'];

  it('the reliability diagram puts each bin at (mean P, share right) beside the diagonal', () => {
    const fig = judgeReliabilityFigure(d);
    expect(fig.data[0]).toMatchObject({ name: 'perfectly calibrated', x: [0, 1], y: [0, 1] });
    const x = fig.data[1].x as number[];
    expect(x).toHaveLength(2);
    expect(x[0]).toBeCloseTo(0.2, 12);
    expect(x[1]).toBeCloseTo(0.8, 12);
    expect(fig.data[1].y).toEqual([0, 1]);
    expect(fig.data[1].name).toBe('toc.verify<br>AUC 1.00 [1.00, 1.00], Brier 0.040');
    expect(JSON.stringify(fig.layout.title)).toContain('P separates right from wrong');
  });

  it('the histogram has the right and the wrong judgments in their P bins', () => {
    const fig = judgeHistogramFigure(d);
    const [right, wrong] = fig.data;
    expect(right.name).toBe('right (silver label) (n=12, mean P 0.800)');
    expect(wrong.name).toBe('wrong (silver label) (n=12, mean P 0.200)');
    // 20 bins of width 0.05: P 0.8 falls in bin 16, P 0.2 in bin 4.
    expect((right.y as number[])[16]).toBe(12);
    expect((wrong.y as number[])[4]).toBe(12);
    expect((right.y as number[]).reduce((a, b) => a + b, 0)).toBe(12);
  });

  it('a judge without labelled judgments draws empty figures that say so', () => {
    const none = judgesOf({ results: [{ ...results()[0], judgments: [{ purpose: 'diva.verify', p: 0.4, label: null }] }] }, methodCatalog().judges)['diva.verify'];
    expect(none.labelled).toBe(0);
    expect(JSON.stringify(judgeReliabilityFigure(none).layout)).toContain('no labelled judgments');
    expect(JSON.stringify(judgeHistogramFigure(none).layout)).toContain('no labelled judgments');
  });
});

describe('judge diagnostics in the report', () => {
  it('figuresForRun draws a reliability diagram and a histogram per judge; the report has the table and the verdict', () => {
    const run = { name: 'r', config: {}, results: results(), traces: [] };
    const choice = figuresForRun(run, methodCatalog());
    expect(choice.figures.map((f) => f.name)).toEqual(['judge-reliability-toc-verify', 'judge-p-histogram-toc-verify']);
    expect(choice.figures[0].caption).toContain('24 of 36 judgments labelled');
    const html = renderRunReport(run, methodCatalog(), { figures: choice });
    expect(html).toContain('<h2>Judges</h2>');
    expect(html).toContain('id="fig-judge-reliability-toc-verify"');
    expect(html).toContain('toc.verify: P separates right from wrong (AUC 1.00 [1.00, 1.00]); 50% of labelled judgments are at or above 0.5.');
  });

  it('metrics.json judges take precedence over recomputing from results', () => {
    const computed = judgesOf({ results: results() }, methodCatalog().judges);
    const stored: RunMetrics = {
      n: 12,
      metrics: {},
      usage: { llm_calls: 0, prompt_tokens: 0, completion_tokens: 0, cache_hits: 0, wall_seconds: 0 },
      judges: { 'toc.verify': { ...computed['toc.verify'], verdict: 'stored verdict' } },
    };
    expect(judgesOf({ results: results(), metrics: stored }, methodCatalog().judges)['toc.verify'].verdict).toBe('stored verdict');
  });

  it('a run without judgments has no Judges section and no judge figures', () => {
    const run = { name: 'r', config: {}, results: results().map(({ judgments: _j, ...r }) => r), traces: [] };
    expect(figuresForRun(run, methodCatalog()).figures).toEqual([]);
    expect(renderRunReport(run, methodCatalog())).not.toContain('<h2>Judges</h2>');
  });
});

describe("judgeDiagnostics (from 'ambiqa')", () => {
  it('returns the table, the diagnostics and the figures of a run directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-nb-'));
    writeFileSync(join(dir, 'results.jsonl'), results().map((r) => JSON.stringify(r)).join('\n') + '\n');
    const view = judgeDiagnostics(dir);
    expect(view.table).toHaveLength(1);
    expect(view.table[0]).toMatchObject({ judge: 'toc.verify', judgments: 36, labelled: 24, right: 12, wrong: 12, auc: 1, brier: 0.04, separates: true });
    expect(Object.keys(view.figures)).toEqual(['reliability-toc-verify', 'p-histogram-toc-verify']);
    expect(view.verdicts).toEqual([view.judges['toc.verify'].verdict]);
  });
});
