import { afterEach, describe, expect, it } from 'vitest';
import { setDisplaySink, show, showTable, showTrace, showTree, tableHtml } from '../../src/notebook/display';
import { frameRows, toDataFrame } from '../../src/notebook/frame';
import { llmCallRows, resultRows, runRows, tocNodeRows } from '../../src/notebook/records';
import { kernelSpec } from '../../src/notebook/kernel';
import { coverageFigure } from '../../src/plots/coverage';
import { INJECTIONS } from '../plots/browser';
import { result, run, summary, tocNode, tocTrace, veTrace } from '../plots/fixtures';

function capture(): string[] {
  const outputs: string[] = [];
  setDisplaySink({ html: (h) => outputs.push(h) });
  return outputs;
}

afterEach(() => setDisplaySink(undefined));

describe('notebook display', () => {
  const fig = coverageFigure([{ name: 'bm25', k: [5, 10], coverage: [40, 50] }]);

  it('sends plotly.js once per session, not once per figure', () => {
    const outputs = capture();
    show(fig);
    show([fig, fig], { title: 'two' });
    showTree(tocTrace('q', [tocNode(0, null, null), tocNode(1, 0, 'A')]));
    const bundles = outputs.filter((o) => o.includes('plotly.js v'));
    expect(bundles).toHaveLength(1);
    expect(outputs[0]).toBe(bundles[0]);
    // Each later output only draws; together: four figures.
    expect(outputs.slice(1).join('').match(/class="ambiqa-figure"/g)).toHaveLength(4);
    expect(outputs.slice(1).every((o) => o.length < 50_000)).toBe(true);
  });

  it('escapes records, DataFrames and traces', () => {
    const outputs = capture();
    const rows = [{ id: 'x', output: INJECTIONS[0], score: 0.123456, missing: null }];
    showTable(rows, { title: INJECTIONS[1] });
    expect(outputs[0]).not.toContain('<script>');
    expect(outputs[0]).not.toContain('<img');
    expect(outputs[0]).toContain('&lt;script&gt;');
    expect(outputs[0]).toContain('<td style="text-align:left;vertical-align:top;max-width:420px">0.123</td>');
    const t = veTrace('v', { votes: 2 });
    t.output = INJECTIONS[2];
    t.llmCalls = [{
      index: 0, purpose: 've.cot', messages: [{ role: 'user', content: INJECTIONS[3] }],
      params: { temperature: 0.7, topP: 1, maxTokens: 8, stop: [], n: 1, seed: null },
      completions: [{ text: INJECTIONS[0], finishReason: 'stop', promptTokens: 3, completionTokens: 2, latencySeconds: 0, cacheHit: true }],
      wallSeconds: 0,
    }];
    showTrace(t);
    for (const s of INJECTIONS) expect(outputs[1]).not.toContain(s);
    expect(outputs[1]).toContain('completion 0 (cached)');
  });

  it('limits long tables', () => {
    const html = tableHtml(Array.from({ length: 60 }, (_, i) => ({ i })), { maxRows: 10 });
    expect(html.match(/<tr>/g)).toHaveLength(11);
    expect(html).toContain('50 more rows not shown');
  });
});

describe('records and DataFrames', () => {
  const r = run('toc-a', { pipeline: { name: 'toc' } }, [
    result('q1', { str_em: 50, dr: 30.123 }, { usage: summary({ llmCalls: 4, promptTokens: 100, completionTokens: 10, seconds: 2 }) }),
    result('q2', { str_em: 100 }, { error: 'boom', usage: summary({ llmCalls: 2, promptTokens: 50, completionTokens: 5, seconds: 1 }) }),
  ], [tocTrace('q1', [tocNode(0, null, null), tocNode(1, 0, 'A'), tocNode(2, 0, 'B', { pruned: true, verdict: false })])]);

  it('flattens results, runs, calls and nodes', () => {
    expect(resultRows(r.results)).toEqual([
      { id: 'q1', question: 'question q1?', output: 'output q1', str_em: 50, dr: 30.12, llm_calls: 4, tokens: 110, seconds: 2, error: null },
      { id: 'q2', question: 'question q2?', output: 'output q2', str_em: 100, dr: null, llm_calls: 2, tokens: 55, seconds: 1, error: 'boom' },
    ]);
    expect(runRows([r], ['str_em'])).toEqual([
      { run: 'toc-a', pipeline: 'toc', n: 2, str_em: 75, str_em_ci: '[70.0, 80.0]', llm_calls_per_q: 3, tokens_per_q: 83, seconds_per_q: 1.5 },
    ]);
    expect(tocNodeRows(r.traces[0]).map((n) => [n.id, n.pruned, n.used])).toEqual([
      [0, false, false],
      [1, false, true],
      [2, true, false],
    ]);
    expect(llmCallRows(r.traces[0])).toEqual([]);
  });

  it('turns records into a danfojs DataFrame and back', () => {
    const df = toDataFrame(resultRows(r.results));
    expect(df.columns).toEqual(['id', 'question', 'output', 'str_em', 'dr', 'llm_calls', 'tokens', 'seconds', 'error']);
    expect(df.shape).toEqual([2, 9]);
    expect(frameRows(df)[0]).toMatchObject({ id: 'q1', str_em: 50 });
    const outputs = capture();
    showTable(df);
    expect(outputs[0]).toContain('<th style="text-align:left">str_em</th>');
  });
});

describe('kernel spec', () => {
  it('starts tslab from the repository root, with paths passed as arguments', () => {
    const spec = kernelSpec("/repo with 'quotes'", '/repo/node_modules/.bin/tslab');
    expect(spec.argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(spec.argv[2]).toBe('cd "$1" && exec "$2" kernel --config-path "$0"');
    expect(spec.argv.slice(3)).toEqual(['{connection_file}', "/repo with 'quotes'", '/repo/node_modules/.bin/tslab']);
    expect(spec.env.AMBIQA_ROOT).toBe("/repo with 'quotes'");
  });
});
