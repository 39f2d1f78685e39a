import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main';
import { CHROMIUM_ARGS, chromiumPath } from '../../src/plots/export';
import { readBundleManifest, type BundleManifest } from '../../src/report/bundle';
import { writeStudy, type Study } from './bundle-fixtures';

// The case: `ambiqa bundle` of a sweep, a comparison and two runs, opened from file:// in
// headless Chromium with every request intercepted. Each page of each kind renders and draws its
// plots from the bundle's one plotly.js, no request goes anywhere but a file of the bundle, every
// link of every page resolves to a file of the bundle, and script injected into model output
// never runs. Without plotly.js the figure's PNG shows instead.
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-bundle-browser-'));
const out = join(tmp, 'study');
const profile = mkdtempSync(join(tmpdir(), 'ambiqa-test-chromium-'));
let study: Study;
let manifest: BundleManifest;
let context: BrowserContext;
/** Every URL any page asked for, and the ones refused (outside the bundle). */
const requested: string[] = [];
const refused: string[] = [];
let blockPlotly = false;

beforeAll(async () => {
  study = writeStudy(tmp);
  expect(await main(['bundle', study.sweep, study.comparison, study.rag, study.toc, '--out', out])).toBe(0);
  manifest = readBundleManifest(out)!;
  context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  const inside = pathToFileURL(out).href + '/';
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    requested.push(url);
    if (!url.startsWith(inside) || (blockPlotly && url.endsWith('/assets/plotly.min.js'))) {
      if (!url.startsWith(inside)) refused.push(url);
      await route.abort();
    } else await route.continue();
  });
});

afterAll(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

async function open(relPath: string): Promise<{ page: Page; errors: string[]; dialogs: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(pathToFileURL(join(out, relPath)).href, { waitUntil: 'load', timeout: 60_000 });
  return { page, errors, dialogs };
}

/** Every figure div of the page drawn by plotly (it adds its SVG). */
async function plotsDrawn(page: Page): Promise<{ figures: number; drawn: number }> {
  const count = () => {
    const divs = Array.from(document.querySelectorAll('.ambiqa-figure'));
    return { figures: divs.length, drawn: divs.filter((d) => d.querySelector('.main-svg') !== null).length };
  };
  await page.waitForFunction(() => {
    const divs = Array.from(document.querySelectorAll('.ambiqa-figure'));
    return divs.every((d) => d.querySelector('.main-svg') !== null);
  }, null, { timeout: 30_000 }).catch(() => undefined);
  return page.evaluate(count);
}

/** The page's links that are not in-page anchors or http(s) (MLflow), as files. */
async function linkTargets(page: Page): Promise<string[]> {
  const hrefs = await page.evaluate(() => Array.from(document.querySelectorAll('a[href]')).map((a) => (a as HTMLAnchorElement).href));
  return hrefs.filter((h) => h.startsWith('file:')).map((h) => fileURLToPath(h.split('#')[0]!));
}

describe('a bundle in Chromium, from file://', () => {
  it('the index lists every page and its links all resolve to files of the bundle', async () => {
    const { page, errors } = await open('index.html');
    const links = await linkTargets(page);
    for (const e of manifest.entries) expect(links).toContain(join(out, e.page));
    for (const target of links) expect(existsSync(target) && statSync(target).isFile(), target).toBe(true);
    expect(await page.locator('table.study').count()).toBe(3);
    expect(errors).toEqual([]);
    await page.close();
  });

  for (const [kind, path] of [['run', 'runs/toc/index.html'], ['sweep', 'sweeps/ve-threshold/index.html'], ['comparison', 'comparisons/toc-vs-rag/index.html']] as const) {
    it(`a ${kind} page renders, draws its plots from the bundle’s plotly.js, and links only to files of the bundle`, async () => {
      const { page, errors } = await open(path);
      const { figures, drawn } = await plotsDrawn(page);
      expect(figures).toBeGreaterThan(0);
      expect(drawn).toBe(figures);
      expect(await page.locator('section.provenance').count()).toBe(1);
      // A sweep's examples are on its points' pages (linked from each point's section).
      if (kind === 'sweep') expect(await page.locator('p.point-page a').count()).toBe(2);
      else expect(await page.locator('table.examples tbody tr').count()).toBeGreaterThan(0);
      const links = await linkTargets(page);
      expect(links).toContain(join(out, 'index.html'));
      for (const target of links) expect(existsSync(target) && statSync(target).isFile(), `${path} → ${target}`).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    });
  }

  it('follows links: index → sweep → a point’s run page → its CSV; comparison → a run', async () => {
    const { page } = await open('index.html');
    await page.click('table.study a:text("ve-threshold")');
    await page.waitForLoadState('load');
    expect(await page.title()).toBe('ambiqa sweep: ve-threshold');
    await page.click('section.bundle-links a:text("threshold=3")');
    await page.waitForLoadState('load');
    expect(await page.title()).toBe('ambiqa run: ve.threshold=3');
    const csv = await page.getAttribute('nav.bundle a:text("results.csv")', 'href');
    expect(readFileSync(fileURLToPath(new URL(csv!, page.url())), 'utf8')).toMatch(/^id,question,output,str_em\r\n/);
    await page.goto(pathToFileURL(join(out, 'comparisons/toc-vs-rag/index.html')).href);
    await page.click('section.bundle-links a:text("toc")');
    await page.waitForLoadState('load');
    expect(await page.title()).toBe('ambiqa run: toc');
    await page.close();
  });

  it('runs no script from model output and asks nothing outside the bundle', async () => {
    const { page, dialogs, errors } = await open('runs/rag/index.html');
    await page.click('tr[data-id] button.trace-btn >> nth=0');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
    expect(requested.length).toBeGreaterThan(10);
    expect(refused).toEqual([]);
    expect(requested.filter((u) => u.endsWith('/assets/plotly.min.js')).length).toBeGreaterThan(0);
  });

  it('shows a figure’s PNG when plotly.js cannot load', async () => {
    blockPlotly = true;
    try {
      const { page } = await open('runs/toc/index.html');
      await page.waitForSelector('#fig-pruning-effect img', { timeout: 15_000 });
      const width = await page.evaluate(() => (document.querySelector('#fig-pruning-effect img') as HTMLImageElement).naturalWidth);
      expect(width).toBe(1);
      await page.close();
    } finally {
      blockPlotly = false;
    }
  });

  it('(control) the interception does see a request that leaves the page', async () => {
    const { page } = await open('index.html');
    const before = refused.length;
    await page.evaluate(() => fetch('https://example.invalid/beacon').catch(() => 0));
    expect(refused.slice(before)).toEqual(['https://example.invalid/beacon']);
    refused.length = before;
    await page.close();
  });

  it('with --png, renders the PNG of every figure the folders hold none of, beside its page', async () => {
    const pngOut = join(tmp, 'study-png');
    expect(await main(['bundle', study.sweep, '--out', pngOut, '--png', '--traces', 'none'])).toBe(0);
    const pngManifest = readBundleManifest(pngOut)!;
    let figures = 0;
    for (const e of pngManifest.entries) {
      const html = readFileSync(join(pngOut, e.page), 'utf8');
      const sections = [...html.matchAll(/<section class="figure" id="fig-([^"]+)">/g)].map((m) => m[1]!);
      for (const name of sections) {
        const png = join(pngOut, e.page, '..', 'figures', `${name}.png`);
        expect(html, `${e.page}: ${name}`).toContain(`<p class="note png-link"><a href="figures/${name}.png">PNG</a></p>`);
        const bytes = readFileSync(png);
        expect(bytes.subarray(1, 4).toString('latin1'), png).toBe('PNG');
        // A drawn figure, not a 1×1 placeholder: IHDR width and height.
        expect(bytes.readUInt32BE(16)).toBeGreaterThan(200);
        expect(bytes.readUInt32BE(20)).toBeGreaterThan(100);
        expect(e.files).toContain(`${e.page.replace(/\/index\.html$/, '')}/figures/${name}.png`);
        figures++;
      }
    }
    expect(figures).toBeGreaterThanOrEqual(3);
  });
});
