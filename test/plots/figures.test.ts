import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeCapFigure, nodeCapPoints, tocAblationFigure } from '../../src/plots/ablation';
import { consistencyKdeFigure, consistencyPoints } from '../../src/plots/consistency';
import { costPoints, costQualityFigure } from '../../src/plots/cost';
import { coverageFigure, parseCoverage, readCoverageFile } from '../../src/plots/coverage';
import { pruningEffect, pruningEffectFigure } from '../../src/pipelines/toc/pruning-figure';
import {
  thresholdAblationFigure,
  thresholdAblationFromSweep,
  thresholdAblationFromTraces,
} from '../../src/pipelines/verify-edit/threshold-figure';
import { clarificationTreeFigure, layoutTree, nodeStatus } from '../../src/pipelines/toc/tree-figure';
import { result, run, summary, tocNode, tocTrace, veTrace } from './fixtures';
import { tocDecisionsOf } from '../../src/pipelines/toc/decisions';
import { methodCatalog } from '../../src/pipelines/registry';

/** Five VE examples, n = 5, recorded with threshold 3 (see the threshold tests). */
function veRun() {
  const traces = [
    veTrace('a', { votes: 5 }),
    veTrace('b', { votes: 4 }),
    veTrace('c', { votes: 3 }),
    veTrace('d', { votes: 2 }),
    veTrace('e', { votes: 1 }),
  ];
  // Each row keeps the confidence the pipeline handed over (VE: votes / n).
  const results = [
    { ...result('a', { em: 100, f1: 100 }), confidence: 1 },
    { ...result('b', { em: 100, f1: 100 }), confidence: 0.8 },
    { ...result('c', { em: 0, f1: 50 }), confidence: 0.6 },
    { ...result('d', { em: 100, f1: 100 }), confidence: 0.4 },
    { ...result('e', { em: 0, f1: 0 }), confidence: 0.2 },
  ];
  return { traces, results };
}

describe('consistency KDE', () => {
  it('splits consistency by correctness and draws a density and a rug per group', () => {
    const { traces, results } = veRun();
    const points = consistencyPoints(traces, results);
    expect(points.filter((p) => p.correct).map((p) => p.consistency)).toEqual([1, 0.8, 0.4]);
    expect(points.filter((p) => !p.correct).map((p) => p.consistency)).toEqual([0.6, 0.2]);
    const fig = consistencyKdeFigure(traces, results, { points: 50 });
    expect(fig.data.map((t) => [t.name, t.yaxis])).toEqual([
      ['correct (n=3)', 'y'],
      ['correct (rug)', 'y2'],
      ['incorrect (n=2)', 'y'],
      ['incorrect (rug)', 'y2'],
    ]);
    expect(fig.data[0].x).toHaveLength(50);
    expect(fig.data[1].x).toEqual([1, 0.8, 0.4]);
    expect((fig.layout.xaxis as { title: { text: string } }).title.text).toMatch(/consistency/);
    expect((fig.layout.yaxis as { title: { text: string } }).title.text).toMatch(/density/);
  });

  it('rows written before rows carried a confidence: read back from the trace by the method, the row first', () => {
    const { traces, results } = veRun();
    const older = results.map(({ confidence: _c, ...r }) => r);
    // Without a row confidence and without a reader, nothing is drawn.
    expect(consistencyPoints(traces, older)).toEqual([]);
    const confidenceOf = methodCatalog().analysis('verify-edit')!.confidence!;
    expect(consistencyPoints(traces, older, { confidenceOf }).map((p) => p.consistency)).toEqual([1, 0.8, 0.6, 0.4, 0.2]);
    // A row's own confidence wins over the trace's.
    const mixed = [{ ...older[0], confidence: 0.5 }, ...older.slice(1)];
    expect(consistencyPoints(traces, mixed, { confidenceOf })[0]).toEqual({ id: 'a', consistency: 0.5, correct: true });
  });

  it('uses the named metric and skips errored results', () => {
    const { traces, results } = veRun();
    results[0] = { ...results[0], error: 'boom' };
    const points = consistencyPoints(traces, results, { metric: 'f1', atLeast: 50 });
    expect(points.map((p) => [p.id, p.correct])).toEqual([
      ['b', true],
      ['c', true],
      ['d', true],
      ['e', false],
    ]);
  });

  it('names the metrics it found when none decides correctness', () => {
    const { traces } = veRun();
    expect(() => consistencyKdeFigure(traces, [result('a', { rougeLsum: 40 })])).toThrow(/rougeLsum/);
  });
});

describe('threshold ablation', () => {
  it('re-applies thresholds to one run and leaves out what is not exact', () => {
    const { traces, results } = veRun();
    const points = thresholdAblationFromTraces(traces, results);
    expect(points.map((p) => p.threshold)).toEqual([1, 2, 3, 4, 5]);
    // The edited fraction depends only on votes: exact everywhere.
    expect(points.map((p) => p.editedFraction)).toEqual([0, 20, 40, 60, 80]);
    // At 1 and 2 the recorded edits of d (and e) would be skipped: their majority answers are unscored.
    // At 4 and 5, c (and b) would be edited, but the run never produced those edits.
    expect(points.map((p) => p.accuracy)).toEqual([null, null, 60, null, null]);
    expect(points[2].source).toBe('recorded');
    // VE's AUC (src/metrics/calibration.ts): N = 5 → 4 coverage levels keeping 1, 2, 3, 5 of
    // a ✓ b ✓ c ✗ d ✓ e ✗ (by consistency): accuracies 100, 100, 66.7, 60.
    expect(points[2].auc).toBeCloseTo((100 + 100 + 200 / 3 + 60) / 4, 9);
    expect(points.map((p) => p.known)).toEqual([3, 4, 5, 4, 3]);
  });

  it('becomes exact below the recorded threshold when majority answers can be scored', () => {
    const { traces, results } = veRun();
    const scored: string[] = [];
    const points = thresholdAblationFromTraces(traces, results, {
      scoreAnswer: (id, answer) => {
        scored.push(`${id}:${answer}`);
        return id === 'e'; // e's majority answer happens to be right, d's is wrong
      },
    });
    expect(scored.sort()).toEqual(['d:m-d', 'd:m-d', 'e:m-e']);
    // t=1: a, b and e's majority answer right of five; t=2: d's edit is skipped (majority wrong)
    // and e is still edited (recorded wrong): a, b right.
    expect(points[0].accuracy).toBe(60);
    expect(points[1].accuracy).toBe(40);
    expect(points[0].source).toBe('re-applied');
  });

  it('reuses the recorded correctness when the edit did not change the answer', () => {
    const traces = [veTrace('x', { votes: 2, final: 'm-x' }), veTrace('y', { votes: 5 })];
    const results = [result('x', { em: 100 }), result('y', { em: 0 })];
    const points = thresholdAblationFromTraces(traces, results, { thresholds: [1, 2, 3] });
    expect(points.map((p) => p.accuracy)).toEqual([50, 50, 50]);
  });

  it('takes one exact point per run of a sweep, thresholds read from the traces', () => {
    const runs = [4, 2, 3].map((t) => {
      const traces = [veTrace('a', { votes: 5, threshold: t }), veTrace('b', { votes: 3, threshold: t }), veTrace('c', { votes: 1, threshold: t })];
      const results = [result('a', { accuracy: 100 }), result('b', { accuracy: t <= 3 ? 100 : 0 }), result('c', { accuracy: 0 })];
      return run(`ve-t${t}`, {}, results, traces);
    });
    const points = thresholdAblationFromSweep(runs);
    expect(points.map((p) => p.threshold)).toEqual([2, 3, 4]);
    expect(points.map((p) => p.source)).toEqual(['sweep', 'sweep', 'sweep']);
    expect(points.map((p) => Math.round(p.editedFraction))).toEqual([33, 33, 67]);
    expect(points.map((p) => Math.round(p.accuracy!))).toEqual([67, 67, 33]);
    const fig = thresholdAblationFigure(points);
    expect(fig.data.map((t) => t.name)).toEqual(['accuracy', 'accuracy–coverage AUC', 'edited fraction']);
    expect(fig.data[0].x).toEqual([2, 3, 4]);
    expect((fig.layout.xaxis as { title: { text: string } }).title.text).toMatch(/threshold/);
  });

  it('draws omitted points as gaps with a note, and marks the recorded threshold', () => {
    const { traces, results } = veRun();
    const fig = thresholdAblationFigure(thresholdAblationFromTraces(traces, results));
    expect(fig.data[0].y).toEqual([null, null, 60, null, null]);
    const notes = (fig.layout.annotations as Array<{ text: string }>).map((a) => a.text).join(' ');
    expect(notes).toMatch(/not exact .* threshold 1, 2, 4, 5/);
    expect(fig.layout.shapes).toEqual([expect.objectContaining({ x0: 3, x1: 3 })]);
  });
});

describe('pruning effect', () => {
  const traces = [
    tocTrace('q1', [
      tocNode(0, null, null),
      tocNode(1, 0, 'Paris'),
      tocNode(2, 0, 'Paris', { duplicateOf: 1 }),
      tocNode(3, 0, 'Berlin', { verdict: false, pruned: true }),
      tocNode(4, 0, 'Rome Italy', { verdict: false, unpruned: true }),
      tocNode(5, 0, 'Madrid', { verdict: null, skipped: 'max-calls' }),
    ]),
    tocTrace('q2', [tocNode(0, null, null), tocNode(1, 0, 'Lyon', { verdict: null })]),
    tocTrace('q3-no-gold', [tocNode(0, null, null), tocNode(1, 0, 'x')]),
  ];
  const dq = (...answers: string[]) => answers.map((a) => ({ question: `Which ${a}?`, shortAnswers: [a] }));
  const gold = new Map([
    ['q1', dq('Paris', 'Rome')],
    ['q2', dq('Lyon')],
  ]);

  it('scores each stage against the best-matching gold DQ', () => {
    const stats = pruningEffect(traces, gold);
    expect(stats.map((s) => [s.stage, s.nodes, s.questions])).toEqual([
      ['no pruning', 6, 2],
      ['dedup only', 5, 2],
      ['self-verification', 1, 1],
      ['pruned', 1, 1],
      ['un-pruned', 1, 1],
      // The released search's groups: these stop-when-empty trees have none.
      ['kept after a restart', 0, 1],
      ['pruning off', 0, 1],
      ['budget-skipped', 1, 1],
    ]);
    // SQuAD token F1: Paris 100, Paris 100, Berlin 0, "Rome Italy" vs "Rome" 2/3, Madrid 0, Lyon 100
    expect(stats[0].meanF1).toBeCloseTo((100 + 100 + 0 + 200 / 3 + 0 + 100) / 6, 9);
    expect(stats[1].meanF1).toBeCloseTo((100 + 0 + 200 / 3 + 0 + 100) / 5, 9);
    // Kept by the judge only: the un-pruned and the budget-skipped nodes are groups of their own.
    expect(stats[2].meanF1).toBe(100);
    expect(stats[3].meanF1).toBe(0);
    expect(stats[4].meanF1).toBeCloseTo(200 / 3, 9);
    expect(stats[5].meanF1).toBeNaN();
    expect(stats[7].meanF1).toBe(0);
  });

  it('draws F1 and node counts side by side', () => {
    const fig = pruningEffectFigure(pruningEffect(traces, gold));
    expect(fig.data.map((t) => [t.type, t.name, t.xaxis, t.yaxis])).toEqual([
      ['bar', 'node Answer-F1', 'x', 'y'],
      ['bar', 'nodes', 'x2', 'y2'],
    ]);
    expect(fig.data[1].y).toEqual([6, 5, 1, 1, 1, 1]);
    expect(fig.data[0].x).toEqual(['no pruning', 'dedup only', 'self-verification', 'pruned', 'un-pruned', 'budget-skipped']);
    // Groups without nodes are not drawn.
    const noSkips = pruningEffectFigure(pruningEffect([traces[0]].map((t) => ({ ...t, decisions: { ...t.decisions, nodes: tocDecisionsOf(t)!.nodes.slice(0, 5) } })) as never, gold));
    expect(noSkips.data[0].x).toEqual(['no pruning', 'dedup only', 'self-verification', 'pruned', 'un-pruned']);
    expect((fig.layout.yaxis2 as { title: { text: string } }).title.text).toBe('number of nodes');
  });

  it('leaves out self-verification when no run recorded verdicts', () => {
    const stats = pruningEffect([traces[1]], gold);
    const fig = pruningEffectFigure(stats);
    expect(fig.data[0].x).toEqual(['no pruning', 'dedup only']);
  });
});

describe('answer-coverage curves', () => {
  it('accepts the documented shapes and normalises to percent', () => {
    expect(parseCoverage({ retriever: 'bm25', k: [10, 5], coverage: [0.5, 0.4] }, 'f')).toEqual([
      { name: 'bm25', k: [5, 10], coverage: [40, 50] },
    ]);
    expect(parseCoverage([{ k: 5, ac: 41 }, { k: 10, ac: 52 }], 'dense')).toEqual([{ name: 'dense', k: [5, 10], coverage: [41, 52] }]);
    expect(parseCoverage({ name: 'h', n: 300, 'AC@5': 0.3, 'AC@100': 0.8 }, 'f')).toEqual([
      { name: 'h', k: [5, 100], coverage: [30, 80], questions: 300 },
    ]);
    expect(parseCoverage({ ac: { '5': 0.1, '20': 0.2 } }, 'file-name')[0]).toMatchObject({ name: 'file-name', k: [5, 20] });
    expect(parseCoverage({ curve: [{ k: 1, coverage: 0.5 }] }, 'f')[0].coverage).toEqual([50]);
    const many = parseCoverage({ retrievers: { bm25: { k: [5], coverage: [0.4] }, dense: { '5': 0.5 } } }, 'f');
    expect(many.map((c) => [c.name, c.coverage[0]])).toEqual([
      ['bm25', 40],
      ['dense', 50],
    ]);
    const list = parseCoverage([{ retriever: 'a', k: [5], coverage: [0.1] }, { retriever: 'b', k: [5], coverage: [0.2] }], 'f');
    expect(list.map((c) => c.name)).toEqual(['a', 'b']);
  });

  it('reads what `ambiqa coverage --out` writes', () => {
    const written = {
      dataset: 'asqa', data: '/x/ASQA_dev.json', corpus: '/x/corpus.jsonl', corpusPassages: 26, corpusHash: 'abc',
      retriever: 'bm25', questions: 6, ks: [1, 2, 5], coverage: [25, 41.7, 66.7],
      perQuestion: [{ id: 'q', firstRanks: [0, -1] }], seconds: 0.1,
    };
    expect(parseCoverage(written, 'bm25-file')).toEqual([{ name: 'bm25', k: [1, 2, 5], coverage: [25, 41.7, 66.7], questions: 6 }]);
  });

  it('rejects a file that is not a curve, naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-cov-'));
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ hello: 'world' }));
    expect(() => readCoverageFile(path)).toThrow(new RegExp(`${path.replace(/[/.]/g, '\\$&')}: not a coverage curve`));
    const good = join(dir, 'bm25-dev.json');
    writeFileSync(good, JSON.stringify({ k: [5, 10], coverage: [0.2, 0.3] }));
    expect(readCoverageFile(good)[0].name).toBe('bm25-dev');
  });

  it('names retrievers by kind in the legend, unless two curves share a kind', () => {
    const curve = (name: string) => ({ name, k: [1, 5], coverage: [10, 20] });
    const fig = coverageFigure([curve('bm25(k1=0.9,b=0.4,stem=porter)'), curve('dense:all-minilm-l6-v2-q'), curve('hybrid(bm25(k1=0.9)+dense:x)')]);
    expect(fig.data.map((t) => t.name)).toEqual(['bm25', 'dense:all-minilm-l6-v2-q', 'hybrid']);
    expect(fig.data[0].hovertemplate).toContain('bm25(k1=0.9,b=0.4,stem=porter)');
    const same = coverageFigure([curve('bm25(k1=0.9)'), curve('bm25(k1=1.2)')]);
    expect(same.data.map((t) => t.name)).toEqual(['bm25(k1=0.9)', 'bm25(k1=1.2)']);
  });

  it('draws one line per retriever on a log k axis for wide ranges', () => {
    const fig = coverageFigure([
      { name: 'bm25', k: [5, 10, 100], coverage: [40, 50, 70] },
      { name: 'dense', k: [5, 10, 100], coverage: [45, 55, 75] },
    ]);
    expect(fig.data.map((t) => [t.name, t.x, t.y])).toEqual([
      ['bm25', [5, 10, 100], [40, 50, 70]],
      ['dense', [5, 10, 100], [45, 55, 75]],
    ]);
    expect((fig.layout.xaxis as { type: string }).type).toBe('log');
    expect((fig.layout.yaxis as { range: number[] }).range).toEqual([0, 100]);
  });
});

describe('node cap ablation and cost against quality', () => {
  const tocRun = (maxNodes: number, maxDepth: number, dr: number, calls: number) =>
    run(
      `toc-n${maxNodes}-d${maxDepth}`,
      { pipeline: { name: 'toc', options: { maxNodes, maxDepth } }, llm: { maxNodes: 99 } },
      [result('q1', { dr, str_em: dr + 1 }, { usage: summary({ llmCalls: calls, promptTokens: 1000 * calls, completionTokens: 10 }) })],
      [],
    );

  it('reads maxNodes/maxDepth from the configs, quality with CIs and calls per question', () => {
    const runs = [tocRun(6, 3, 30, 12), tocRun(2, 3, 20, 4), tocRun(2, 2, 18, 3), tocRun(6, 2, 25, 8)];
    const points = nodeCapPoints(runs, 'dr');
    expect(points.map((p) => [p.maxNodes, p.maxDepth, p.quality, p.llmCalls])).toEqual([
      [2, 3, 20, 4],
      [2, 2, 18, 3],
      [6, 3, 30, 12],
      [6, 2, 25, 8],
    ]);
    const fig = nodeCapFigure(runs);
    expect(fig.data.map((t) => [t.name, t.xaxis, t.yaxis])).toEqual([
      ['maxDepth 2', 'x', 'y'],
      ['maxDepth 2 (LLM calls)', 'x2', 'y2'],
      ['maxDepth 3', 'x', 'y'],
      ['maxDepth 3 (LLM calls)', 'x2', 'y2'],
    ]);
    expect(fig.data[0].x).toEqual([2, 6]);
    expect(fig.data[0].y).toEqual([18, 25]);
    expect((fig.data[0].error_y as { array: number[] }).array).toEqual([5, 5]);
    expect(fig.data[1].y).toEqual([3, 8]);
    expect((fig.layout.yaxis as { title: { text: string } }).title.text).toMatch(/^dr/);
    expect((fig.layout.yaxis2 as { title: { text: string } }).title.text).toBe('LLM calls per question');
  });

  it('puts maxDepth on the x axis for a depth sweep', () => {
    const runs = [tocRun(10, 1, 20, 3), tocRun(10, 3, 30, 12), tocRun(10, 2, 25, 7)];
    const fig = tocAblationFigure(runs, { knob: 'maxDepth' });
    expect(fig.data.map((t) => t.name)).toEqual(['maxNodes 10', 'maxNodes 10 (LLM calls)']);
    expect(fig.data[0].x).toEqual([1, 2, 3]);
    expect(fig.data[1].y).toEqual([3, 7, 12]);
    expect((fig.layout.xaxis as { title: { text: string } }).title.text).toBe('maxDepth');
  });

  it('fails with the run name when a run has no maxNodes', () => {
    expect(() => nodeCapPoints([run('plain', { pipeline: 'toc' }, [result('q', { dr: 1 })], [])], 'dr')).toThrow(/run plain.*maxNodes/);
  });

  it('places one point per pipeline at its tokens or seconds per question', () => {
    const mk = (name: string, pipeline: 'toc' | 'diva', dr: number, tokens: number, seconds: number) =>
      run(
        name,
        { pipeline },
        [
          result('q1', { dr }, { usage: summary({ promptTokens: tokens - 100, completionTokens: 100, seconds }) }),
          result('q2', { dr }, { usage: summary({ promptTokens: tokens + 100 - 100, completionTokens: 100, seconds: seconds * 3 }) }),
        ],
        [],
      );
    const runs = [mk('toc-run', 'toc', 36, 12000, 50), mk('diva-run', 'diva', 42, 8000, 25)];
    const points = costPoints(runs, 'dr', 'seconds');
    expect(points.map((p) => [p.label, p.pipeline, p.cost, p.quality])).toEqual([
      ['toc-run', 'toc', 100, 36],
      ['diva-run', 'diva', 50, 42],
    ]);
    const fig = costQualityFigure(runs);
    expect(fig.data.map((t) => [t.name, t.x, t.y])).toEqual([
      ['toc', [12050], [36]],
      ['diva', [8050], [42]],
    ]);
    expect((fig.layout.xaxis as { title: { text: string } }).title.text).toMatch(/tokens per question/);
    expect((fig.layout.yaxis as { title: { text: string } }).title.text).toMatch(/^dr/);
  });
});

describe('clarification tree', () => {
  const nodes = [
    tocNode(0, null, null, { question: 'Who won the <b>cup</b>?' }),
    tocNode(1, 0, 'Spain', { expanded: true }),
    tocNode(2, 0, 'Italy'),
    tocNode(3, 1, 'Iker <script>alert(1)</script>', { depth: 2 }),
    tocNode(4, 1, 'Nobody', { depth: 2, verdict: false, pruned: true }),
    tocNode(5, 0, 'Spain', { duplicateOf: 1 }),
  ];
  const t = { ...tocTrace('q', nodes, [1, 3]), question: 'Who won the <b>cup</b>?' };

  it('lays leaves out in BFS order and centres parents over children', () => {
    const pos = layoutTree(nodes);
    expect([...pos.values()].sort((a, b) => a.id - b.id).map((p) => [p.id, p.x, p.y])).toEqual([
      [0, 1.75, -0],
      [1, 0.5, -1],
      [2, 2, -1],
      [3, 0, -2],
      [4, 1, -2],
      [5, 3, -1],
    ]);
  });

  it('marks each node by what happened to it and escapes model text', () => {
    const d = tocDecisionsOf(t);
    if (!d) throw new Error('fixture');
    expect(nodes.map((n) => nodeStatus(n, d))).toEqual(['root', 'used in answer', 'kept', 'used in answer', 'pruned', 'duplicate']);
    const fig = clarificationTreeFigure(t);
    expect(fig.data.map((tr) => tr.name)).toEqual(['clarifies', 'root', 'used in answer', 'kept', 'pruned', 'duplicate']);
    // 5 edges, each two points and a gap.
    expect(fig.data[0].x).toHaveLength(15);
    const used = fig.data.find((tr) => tr.name === 'used in answer')!;
    expect(used.customdata).toEqual([1, 3]);
    const all = JSON.stringify(fig);
    expect(all).not.toMatch(/<script>/);
    expect(all).toContain('&lt;script&gt;');
    expect(JSON.stringify(fig.layout.title)).toContain('&lt;b&gt;cup&lt;/b&gt;');
    expect((fig.data.find((tr) => tr.name === 'pruned')!.hovertext as string[])[0]).toMatch(/self-verification: False/);
  });

  it('refuses a trace of another pipeline', () => {
    expect(() => clarificationTreeFigure(veTrace('v', { votes: 3 }))).toThrow(/not a ToC one/);
  });
});

describe('pruning effect uses SQuAD normalisation', () => {
  it('scores node answers with SQuAD normalisation', () => {
    const t = tocTrace('q', [tocNode(0, null, null), tocNode(1, 0, 'The Eiffel Tower!'), tocNode(2, 0, 'tower')]);
    const stats = pruningEffect([t], new Map([['q', [{ question: 'Which tower?', shortAnswers: ['Eiffel Tower'] }]]]));
    // "the" and "!" are removed: 100; "tower" vs "eiffel tower": P=1, R=1/2 → 2/3
    expect(stats[1].meanF1).toBeCloseTo((100 + 200 / 3) / 2, 9);
  });
});
