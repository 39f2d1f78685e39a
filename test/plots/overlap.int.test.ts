import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeCapFigure, tocAblationFigure } from '../../src/plots/ablation';
import { consistencyKdeFigure } from '../../src/plots/consistency';
import { costQualityFigure } from '../../src/plots/cost';
import { coverageFigure } from '../../src/plots/coverage';
import { CHROMIUM_ARGS, chromiumPath, plotlyJs } from '../../src/plots/export';
import { pruningEffect, pruningEffectFigure } from '../../src/pipelines/toc/pruning-figure';
import { thresholdAblationFigure, thresholdAblationFromTraces } from '../../src/pipelines/verify-edit/threshold-figure';
import { comparisonFigure } from '../../src/plots/compare';
import { judgeHistogramFigure, judgeReliabilityFigure } from '../../src/plots/judges';
import { clarificationTreeFigure } from '../../src/pipelines/toc/tree-figure';
import type { Figure, RunData } from '../../src/plots/types';
import { trialSpreadFigure } from '../../src/plots/trials';
import { compareRuns } from '../../src/metrics/compare';
import { aggregateResults } from '../../src/experiments/bindings';
import type { Comparison } from '../../src/run-files/comparison';
import type { JudgeDiagnostics } from '../../src/run-files';
import { result, run, summary, tocNode, tocTrace, veTrace } from './fixtures';

/**
 * What a reader sees: every figure builder of src/plots/, drawn by plotly.js in Chromium at the
 * sizes notebooks (the PNG is 900 px wide; a JupyterLab cell beside a side panel is about 640)
 * and reports (about 1,200) use. The title, the legend, the axis titles and the annotations must
 * not cover one another (their bounding boxes may not intersect) and must lie inside the figure.
 */

const veTraces = [5, 4, 3, 2, 1].map((votes, i) => veTrace(`q${i}`, { votes }));
// Each row keeps the confidence the pipeline handed over (votes / 5).
const veResults = [100, 100, 0, 100, 0].map((em, i) => ({ ...result(`q${i}`, { em, f1: em }), confidence: (5 - i) / 5 }));
const tocRun = (maxNodes: number, maxDepth: number, dr: number, calls: number) =>
  run(`toc-n${maxNodes}-d${maxDepth}`, { pipeline: { name: 'toc', options: { maxNodes, maxDepth } } }, [
    result('q1', { dr, str_em: dr + 1 }, { usage: summary({ llmCalls: calls, promptTokens: 1000 * calls, completionTokens: 10 }) }),
    result('q2', { dr: dr + 4, str_em: dr + 3 }, { usage: summary({ llmCalls: calls + 1, promptTokens: 900 * calls, completionTokens: 12 }) }),
  ], []);
const costRun = (name: string, pipeline: string, dr: number, tokens: number) =>
  run(name, { pipeline }, [
    result('q1', { dr, str_em: dr }, { usage: summary({ promptTokens: tokens, completionTokens: 100, seconds: tokens / 1000 }) }),
    result('q2', { dr: dr + 6, str_em: dr + 2 }, { usage: summary({ promptTokens: tokens * 1.2, completionTokens: 90, seconds: tokens / 800 }) }),
  ], []);
/** A Verify-and-Edit run of 12 questions × 3 trials (trials.ts), metrics.json as a run writes it. */
const trialRun = (name: string, shift: number): RunData => {
  const results = Array.from({ length: 12 }, (_, q) => [0, 1, 2].map((t) => result(`q${q}`, { em: Math.min(100, Math.max(0, 8 * q + 20 * t + shift)) }, t > 0 ? { trial: t } : {}))).flat();
  return { name, config: { dataset: { name: 'ambignq', split: 'dev' }, pipeline: { name: 'verify-edit' } }, results, traces: [], metrics: { n: results.length, metrics: aggregateResults(results), usage: { llm_calls: 0, cache_hits: 0, wall_seconds: 0 } } };
};
const tree = {
  ...tocTrace('q', [
    tocNode(0, null, null, { question: 'Who won the most recent FIFA World Cup held in South America?' }),
    tocNode(1, 0, 'Argentina', { expanded: true }),
    tocNode(2, 0, 'Uruguay'),
    tocNode(3, 1, 'Lionel Messi captained the side', { depth: 2 }),
    tocNode(4, 1, 'Nobody', { depth: 2, verdict: false, pruned: true }),
    tocNode(5, 0, 'Argentina', { duplicateOf: 1 }),
  ], [1, 3]),
  question: 'Who won the most recent FIFA World Cup held in South America?',
};
const pruningTraces = [
  tocTrace('q1', [
    tocNode(0, null, null),
    tocNode(1, 0, 'Paris', { verdict: true }),
    tocNode(2, 0, 'Berlin', { verdict: false, pruned: true }),
    tocNode(3, 0, 'Rome Italy', { verdict: false, unpruned: true }),
    tocNode(4, 0, 'Paris', { duplicateOf: 1 }),
    tocNode(5, 0, 'Madrid', { verdict: null, skipped: 'max-calls' }),
  ]),
  tocTrace('q2', [tocNode(0, null, null), tocNode(1, 0, 'Lyon', { verdict: null })]),
];
const dq = (...answers: string[]) => answers.map((a) => ({ question: `Which ${a}?`, shortAnswers: [a] }));

const judge: JudgeDiagnostics = {
  purpose: 'toc.verify',
  silverLabel: 'node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)',
  judgments: 120, labelled: 96, positives: 40, negatives: 56,
  auc: 0.58, aucCiLow: 0.46, aucCiHigh: 0.7, brier: 0.27, meanPPositive: 0.61, meanPNegative: 0.55, shareAtLeastHalf: 0.7,
  separates: false,
  verdict: 'toc.verify does not separate right from wrong judgments (AUC 0.58, 95% CI [0.46, 0.70] contains 0.5): a threshold sweep on this judge cannot show an effect',
  reliability: [0.1, 0.3, 0.5, 0.7, 0.9].map((m, i) => ({ low: i * 0.2, high: (i + 1) * 0.2, n: 10 + i * 5, meanP: m, positiveRate: 0.3 + i * 0.05 })),
  histogram: { edges: [0, 0.25, 0.5, 0.75, 1], positive: [4, 8, 16, 12], negative: [6, 14, 20, 16] },
};
const pairedRow = (run: string, metric: string, delta: number) => ({
  run, baseline: 'vanilla-rag', metric, n: 50, baselineMean: 40, runMean: 40 + delta, meanDelta: delta, ciLow: delta - 4, ciHigh: delta + 4,
  p: 0.04, pMethod: 'exact' as const, pHolm: 0.08, sdDelta: 10, answerChanged: 30, failedInRun: 0, failedInBaseline: 0, onlyInRun: 0, onlyInBaseline: 0,
});
const comparedRun = (name: string) => ({ name, key: name, dataset: 'asqa', questions: 50, failed: 0, means: {} });
const comparison: Comparison = {
  kind: 'ambiqa.comparison', version: 1, createdAt: '2026-12-03T00:00:00Z', dataset: 'asqa', baseline: 'vanilla-rag',
  metrics: ['str_em', 'rougeLsum', 'dr'],
  method: { resamples: 1000, seed: 1, level: 0.95, permutations: 10000, exactLimit: 20 },
  runs: ['vanilla-rag', 'toc', 'diva', 'combo'].map(comparedRun),
  rows: ['toc', 'diva', 'combo'].flatMap((run, i) => ['str_em', 'rougeLsum', 'dr'].map((metric, j) => pairedRow(run, metric, i * 2 - j))),
  questions: [],
  notes: [],
} as unknown as Comparison;

const figures: Record<string, Figure> = {
  'consistency KDE': consistencyKdeFigure(veTraces, veResults),
  'threshold ablation': thresholdAblationFigure(thresholdAblationFromTraces(veTraces, veResults)),
  'pruning effect': pruningEffectFigure(pruningEffect(pruningTraces, new Map([['q1', dq('Paris', 'Rome')], ['q2', dq('Lyon')]]))),
  coverage: coverageFigure(['bm25', 'dense', 'hybrid', 'multi-query bm25'].map((name, i) => ({ name, k: [1, 2, 3, 5, 10, 100], coverage: [10, 20, 30, 40, 50, 60].map((c) => c + i) }))),
  'node cap ablation': nodeCapFigure([tocRun(2, 2, 18, 3), tocRun(6, 2, 25, 8), tocRun(2, 3, 20, 4), tocRun(6, 3, 30, 12)]),
  'depth ablation': tocAblationFigure([tocRun(10, 1, 20, 3), tocRun(10, 2, 25, 7), tocRun(10, 3, 30, 12)], { knob: 'maxDepth' }),
  'cost against quality': costQualityFigure([
    costRun('nb04-vanilla-rag', 'vanilla-rag', 30, 1500),
    costRun('nb04-diva', 'diva', 36, 4000),
    costRun('nb04-toc', 'toc', 40, 12000),
    costRun('nb04-combo', 'combo', 38, 6000),
    costRun('nb04-closed-book', 'closed-book', 20, 600),
  ]),
  'clarification tree': clarificationTreeFigure(tree),
  'judge reliability': judgeReliabilityFigure(judge),
  'judge P histogram': judgeHistogramFigure(judge),
  'paired comparison': comparisonFigure(comparison),
  'paired comparison with trials': comparisonFigure(compareRuns([trialRun('nb05-ve-threshold-0.5', 0), trialRun('nb05-ve-threshold-0.7', 8), trialRun('nb05-ve-threshold-0.9', -3)])),
  'trial spread': trialSpreadFigure([trialRun('nb05-ve-threshold-0.5', 0), trialRun('nb05-ve-threshold-0.7', 8)], { metric: 'em' }),
};

const WIDTHS = [640, 900, 1200];

interface Box {
  name: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

let context: BrowserContext;
let page: Page;
let profile: string;

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'ambiqa-overlap-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS, viewport: { width: 1300, height: 900 } });
  page = context.pages()[0] ?? (await context.newPage());
  await page.setContent('<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0"><div id="fig"></div></body></html>');
  await page.addScriptTag({ content: plotlyJs() });
}, 120_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Draw the figure at a size and read the boxes of what must stay apart. */
async function labelBoxes(figure: Figure, width: number, height: number): Promise<Box[]> {
  return page.evaluate(
    async (arg: { data: unknown; layout: Record<string, unknown>; width: number; height: number }) => {
      const Plotly = (globalThis as unknown as { Plotly: { newPlot(el: Element, d: unknown, l: unknown, c: unknown): Promise<void>; purge(el: Element): void } }).Plotly;
      const el = document.getElementById('fig')!;
      Plotly.purge(el);
      el.style.width = `${arg.width}px`;
      el.style.height = `${arg.height}px`;
      await Plotly.newPlot(el, arg.data, { ...arg.layout, width: arg.width, height: arg.height }, { staticPlot: true });
      const boxes: Array<{ name: string; x: number; y: number; w: number; h: number }> = [];
      const add = (name: string, node: Element | null) => {
        if (!node) return;
        const r = node.getBoundingClientRect();
        if (r.width > 0 && r.height > 0) boxes.push({ name, x: r.x, y: r.y, w: r.width, h: r.height });
      };
      add('title', el.querySelector('.gtitle'));
      add('subtitle', el.querySelector('.gtitle-subtitle'));
      add('legend', el.querySelector('.legend .bg') ?? el.querySelector('.legend'));
      el.querySelectorAll('[class$="title"]').forEach((t) => {
        const cls = t.getAttribute('class') ?? '';
        if (/^(x|y)\d*title$/.test(cls)) add(cls.replace('title', ' axis title'), t);
      });
      el.querySelectorAll('.annotation').forEach((a, i) => add(`annotation ${i}`, a.querySelector('.annotation-text-g') ?? a));
      return boxes;
    },
    JSON.parse(JSON.stringify({ data: figure.data, layout: figure.layout, width, height })),
  );
}

function intersect(a: Box, b: Box): boolean {
  // One pixel of tolerance: text boxes that merely touch are not an overlap.
  return a.x + 1 < b.x + b.w && b.x + 1 < a.x + a.w && a.y + 1 < b.y + b.h && b.y + 1 < a.y + a.h;
}

describe('figure labels do not overlap', () => {
  it.each(Object.keys(figures))('%s', async (name) => {
    const figure = figures[name]!;
    const height = typeof figure.layout.height === 'number' ? figure.layout.height : 460;
    const problems: string[] = [];
    for (const width of WIDTHS) {
      const boxes = await labelBoxes(figure, width, height);
      expect(boxes.some((b) => b.name === 'title'), `${name} at ${width}px has a title`).toBe(true);
      // Nothing is cut off at the figure's edges either (a long title overflows both sides).
      for (const b of boxes) {
        if (b.x < -1 || b.y < -1 || b.x + b.w > width + 1 || b.y + b.h > height + 1) problems.push(`${width}x${height}: ${b.name} ${JSON.stringify(b)} runs off the figure`);
      }
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, b] = [boxes[i]!, boxes[j]!];
          if (a.name.startsWith('annotation') && b.name.startsWith('annotation')) continue;
          if (a.name === 'title' && b.name === 'subtitle') continue;
          if (intersect(a, b)) problems.push(`${width}x${height}: ${a.name} ${JSON.stringify(a)} overlaps ${b.name} ${JSON.stringify(b)}`);
        }
      }
    }
    expect(problems).toEqual([]);
  }, 60_000);
});
