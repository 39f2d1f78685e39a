import { afterEach, describe, expect, it, vi } from 'vitest';
import { figureBundle, PLOTLY_MIME, setDisplaySink, show, showTable, showTrace, showTree, tableHtml, type MimeBundle } from '../../src/notebook/display';
import type { PngSize } from '../../src/notebook/figure-png';
import { frameRows, toDataFrame } from '../../src/notebook/frame';
import { llmCallRows, resultRows, runRows, tocNodeRows } from '../../src/notebook/records';
import { jupyterEnv, kernelSpec, withSourceMaps } from '../../src/notebook/kernel';
import { coverageFigure } from '../../src/plots/coverage';
import { INJECTIONS } from '../plots/browser';
import { result, run, summary, tocNode, tocTrace, veTrace } from '../plots/fixtures';

interface Captured {
  html: string[];
  bundles: MimeBundle[];
  pngSizes: PngSize[];
}

/** Outputs captured in place of the kernel; the PNG "renderer" records the size it was asked for. */
function capture(): Captured & string[] {
  const outputs = Object.assign([] as string[], { html: [] as string[], bundles: [] as MimeBundle[], pngSizes: [] as PngSize[] });
  setDisplaySink(
    {
      html: (h) => {
        outputs.push(h);
        outputs.html.push(h);
      },
      bundle: (b) => outputs.bundles.push(b),
    },
    {
      renderPng: (figure, size) => {
        outputs.pngSizes.push(size);
        expect(figure.layout.width).toBe(size.width);
        return Buffer.from(`PNG ${size.width}x${size.height}`);
      },
    },
  );
  return outputs;
}

afterEach(() => setDisplaySink(undefined));

describe('notebook display', () => {
  const fig = coverageFigure([{ name: 'bm25', k: [5, 10], coverage: [40, 50] }]);

  it('sends each figure as one MIME bundle: plotly JSON, PNG and text, and no plotly.js', () => {
    const outputs = capture();
    show(fig);
    show([fig, fig], { title: 'two', height: 300 });
    showTree(tocTrace('q', [tocNode(0, null, null), tocNode(1, 0, 'A')]));
    // Four figures, four bundles; the title is the only HTML.
    expect(outputs.bundles).toHaveLength(4);
    expect(outputs.html).toEqual(['<h4>two</h4>']);
    const [first, second, , tree] = outputs.bundles;
    expect(Object.keys(first!.data).sort()).toEqual(['application/vnd.plotly.v1+json', 'image/png', 'text/plain']);
    const plotly = first!.data[PLOTLY_MIME] as { data: unknown[]; layout: { height: number; title: { text: string } }; config: object };
    expect(plotly.data).toEqual(fig.data);
    expect(plotly.layout.title.text).toBe((fig.layout.title as { text: string }).text);
    expect(plotly.config).toMatchObject({ displaylogo: false });
    // The PNG is base64 of what the renderer returned, at the default size unless asked otherwise.
    expect(Buffer.from(first!.data['image/png'] as string, 'base64').toString()).toBe('PNG 900x460');
    expect(first!.metadata).toEqual({ 'image/png': { width: 900, height: 460 } });
    expect(Buffer.from(second!.data['image/png'] as string, 'base64').toString()).toBe('PNG 900x300');
    expect((second!.data[PLOTLY_MIME] as { layout: { height: number } }).layout.height).toBe(300);
    // showTree's default height.
    expect(outputs.pngSizes.at(-1)).toEqual({ width: 900, height: 520 });
    expect(tree!.data['text/plain']).toMatch(/^<ambiqa figure: .* — \d+ trace\(s\)>$/);
    const text = JSON.stringify(outputs.bundles);
    expect(text).not.toContain('<script');
    expect(text.length).toBeLessThan(50_000);
  });

  it('still shows the figure JSON when Chromium cannot render, and says why', () => {
    const bundles: MimeBundle[] = [];
    setDisplaySink({ html: () => {}, bundle: (b) => bundles.push(b) }, { renderPng: () => { throw new Error('no chromium here'); } });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let warned = '';
    try {
      show(fig);
      warned = stderr.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      stderr.mockRestore();
    }
    expect(Object.keys(bundles[0]!.data).sort()).toEqual(['application/vnd.plotly.v1+json', 'text/plain']);
    expect(bundles[0]!.data['text/plain']).toContain('no PNG: no chromium here');
    expect(warned).toContain('no chromium here');
  });

  it('builds a bundle without a PNG when none is given', () => {
    const b = figureBundle(fig, { width: 640, height: 400 });
    expect(b.metadata).toEqual({});
    expect(b.data['image/png']).toBeUndefined();
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
    expect(spec.env.AMBIQA_HOME).toBe("/repo with 'quotes'");
  });

  it("turns on source maps for the kernel's Node, keeping the user's NODE_OPTIONS", () => {
    const reg = { name: 'k', prefix: '/p', jupyterPath: '/p/share/jupyter', kernelJson: '/p/k.json', root: '/repo' };
    expect(jupyterEnv(reg, {}).NODE_OPTIONS).toBe('--enable-source-maps');
    expect(jupyterEnv(reg, { NODE_OPTIONS: '--max-old-space-size=8192' }).NODE_OPTIONS).toBe('--max-old-space-size=8192 --enable-source-maps');
    expect(withSourceMaps('--enable-source-maps --trace-warnings')).toBe('--enable-source-maps --trace-warnings');
  });
});
