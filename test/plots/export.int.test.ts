import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PngRenderer,
  exportFigures,
  figurePageHtml,
  jsonForScript,
  plotlyJs,
  writeFigureHtml,
} from '../../src/plots/export';
import { coverageFigure } from '../../src/plots/coverage';
import type { Figure } from '../../src/plots/types';
import type { ParamValue, RunTracker } from '../../src/tracking/types';
import { INJECTIONS, launchBrowser, type Browser } from './browser';
import { decodePng, luminanceVariance, pngSize } from './png';

const line: Figure = coverageFigure([
  { name: 'bm25', k: [5, 10, 20, 50, 100], coverage: [30, 42, 55, 66, 72] },
  { name: 'dense', k: [5, 10, 20, 50, 100], coverage: [35, 47, 58, 70, 78] },
]);

/** Records what would be logged to MLflow (the contract the real tracker implements). */
function recordingTracker(): RunTracker & { artifacts: Array<[string, string | undefined]> } {
  const artifacts: Array<[string, string | undefined]> = [];
  return {
    runId: 'r1',
    experimentId: 'e1',
    artifacts,
    async logParams(_p: Record<string, ParamValue>) {},
    async logMetrics() {},
    async setTags() {},
    async logArtifact(path: string, artifactPath?: string) {
      artifacts.push([path, artifactPath]);
    },
    async finish() {},
  };
}

describe('figure export', () => {
  let renderer: PngRenderer;
  let browser: Browser;
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-export-'));

  beforeAll(async () => {
    renderer = await PngRenderer.launch();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await renderer?.close();
    await browser?.close();
  });

  it('renders a non-blank PNG of the requested size, reusing one page', async () => {
    const png = await renderer.render(line, { width: 640, height: 400 });
    expect(pngSize(png)).toEqual({ width: 640, height: 400 });
    const decoded = decodePng(png);
    expect(luminanceVariance(decoded)).toBeGreaterThan(50);
    const hd = await renderer.render(line, { width: 300, height: 200, scale: 2 });
    expect(pngSize(hd)).toEqual({ width: 600, height: 400 });
    // A blank figure has far less ink than a plotted one: the variance check can fail.
    const blank = decodePng(await renderer.render({ data: [], layout: { xaxis: { visible: false }, yaxis: { visible: false } } }, { width: 200, height: 100 }));
    expect(luminanceVariance(blank)).toBeLessThan(1);
  });

  it('writes HTML and PNG per figure and logs each file to the run', async () => {
    const tracker = recordingTracker();
    const out = join(dir, 'figs');
    const exported = await exportFigures({ coverage: line, 'coverage-2': line }, out, { renderer, tracker, png: { width: 500, height: 300 } });
    expect(exported.map((e) => e.files.map((f) => f.slice(out.length + 1)))).toEqual([
      ['coverage.html', 'coverage.png'],
      ['coverage-2.html', 'coverage-2.png'],
    ]);
    expect(pngSize(readFileSync(join(out, 'coverage.png')))).toEqual({ width: 500, height: 300 });
    expect(tracker.artifacts).toEqual(exported.flatMap((e) => e.files.map((f) => [f, 'figures'])));
    await expect(exportFigures({ '../evil': line }, out, { formats: ['html'] })).rejects.toThrow(/safe file name/);
  });

  it('embeds plotly once per page and draws every figure', async () => {
    const html = figurePageHtml([{ figure: line, title: 'one' }, { figure: line, title: 'two' }]);
    expect(html.split('plotly.js v').length - 1).toBe(1);
    const path = join(dir, 'two.html');
    writeFigureHtml(line, path);
    const page2 = join(dir, 'page.html');
    await import('node:fs').then((fs) => fs.writeFileSync(page2, html));
    const { page } = await browser.open(page2);
    await page.waitForFunction(() => document.querySelectorAll('.js-plotly-plot').length === 2, undefined, { timeout: 30_000 });
    expect(await page.locator('.js-plotly-plot .scatterlayer .trace').count()).toBe(4);
    expect(existsSync(path)).toBe(true);
  });

  it('keeps script in figure text from running', async () => {
    const evil: Figure = {
      data: INJECTIONS.map((s, i) => ({ type: 'scatter', name: s, x: [i], y: [i], text: [s], hovertext: [s] })),
      layout: { title: { text: INJECTIONS.join(' ') } },
    };
    const html = figurePageHtml([{ figure: evil, title: INJECTIONS[0], caption: INJECTIONS[1] }]);
    // Outside the plotly bundle, no raw tag from the data survives.
    const withoutBundle = html.replace(plotlyJs(), '');
    expect(withoutBundle.length).toBeLessThan(html.length);
    expect(withoutBundle).not.toContain('<img src=x');
    expect(withoutBundle).not.toContain('window.__pwned = "breakout"</script>');
    const path = join(dir, 'evil.html');
    await import('node:fs').then((fs) => fs.writeFileSync(path, html));
    const { page, dialogs } = await browser.open(path);
    await page.waitForSelector('.js-plotly-plot .legend', { timeout: 30_000 });
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    // The text is shown, as text.
    expect(await page.locator('h2').textContent()).toBe(INJECTIONS[0]);
  });

  it('escapes data for a script element', () => {
    const json = jsonForScript({ s: '</script><!-- & \u2028' });
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual({ s: '</script><!-- & \u2028' });
  });
});
