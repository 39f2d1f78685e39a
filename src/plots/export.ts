/**
 * Figures out of the process: self-contained HTML (plotly.js embedded once per page) and PNG
 * rendered by Debian's chromium through playwright-core. One browser page serves many figures:
 * loading plotly.min.js is the slow part (seconds here), each further figure is a fraction of a
 * second. Every written file can be logged to MLflow through the `RunTracker` contract.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { requireTool } from '../config/tools';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { RunTracker } from '../tracking/types';
import type { Figure } from './types';

// Resolve ambiqa's own dependencies from its package, whatever the working directory.
const requireFromPackage = createRequire(join(packageRoot, 'package.json'));

/**
 * playwright-core: an optional peer of ambiqa (a development checkout has it), else the copy
 * `ambiqa setup` installs with the notebook kernel into the tool folder (src/config/tools.ts).
 */
function requirePlaywright(): unknown {
  try {
    return requireFromPackage('playwright-core');
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error;
    return requireTool('notebook', 'playwright-core');
  }
}

let plotlySource: string | undefined;

/** The plotly.js bundle as text (about 4.8 MB), read once per process. */
export function plotlyJs(): string {
  if (plotlySource === undefined) {
    const path = requireFromPackage.resolve('plotly.js-dist-min/plotly.min.js');
    plotlySource = readFileSync(path, 'utf8');
  }
  return plotlySource;
}

/** HTML-escape text for element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * JSON that is safe inside a `<script>` element: `<`, `>` and `&` become \u escapes, so no string
 * in the data can close the script (`</script>`) or open a comment; U+2028/9 are escaped for old
 * parsers. JSON.parse and JavaScript read the escapes back as the same characters.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** `</script` inside the bundle would end the element early; plotly.min.js has none, but check. */
export function inlineScript(source: string): string {
  return `<script>${source.replace(/<\/(script)/gi, '<\\/$1')}</script>`;
}

export const PLOTLY_CONFIG = { responsive: true, displaylogo: false } as const;

let divCounter = 0;

/** A `<div>` plus the script that draws the figure into it; Plotly must be loaded on the page. */
export function figureDivHtml(figure: Figure, options: { id?: string; height?: number } = {}): string {
  const id = options.id ?? `ambiqa-fig-${Date.now().toString(36)}-${(divCounter++).toString(36)}`;
  const height = options.height ?? (typeof figure.layout.height === 'number' ? figure.layout.height : 460);
  // Retry until Plotly exists: in a notebook the bundle may still be loading from an earlier output.
  return (
    `<div id="${escapeHtml(id)}" class="ambiqa-figure" style="width:100%;height:${height}px"></div>` +
    `<script>(function(){var spec=${jsonForScript({ data: figure.data, layout: figure.layout })};var tries=0;` +
    `function draw(){if(window.Plotly){window.Plotly.newPlot(${jsonForScript(id)},spec.data,spec.layout,${jsonForScript(PLOTLY_CONFIG)});}` +
    `else if(tries++<200){setTimeout(draw,50);}else{var el=document.getElementById(${jsonForScript(id)});if(el)el.textContent='plotly.js is not loaded on this page';}}draw();})();</script>`
  );
}

export interface PageFigure {
  figure: Figure;
  title?: string;
  caption?: string;
}

/** A self-contained HTML page with one or more figures and plotly.js embedded once. */
export function figurePageHtml(figures: readonly PageFigure[], options: { title?: string } = {}): string {
  const title = options.title ?? 'ambiqa figure';
  const body = figures
    .map(
      (f) =>
        `<section>${f.title ? `<h2>${escapeHtml(f.title)}</h2>` : ''}${figureDivHtml(f.figure)}` +
        `${f.caption ? `<p class="caption">${escapeHtml(f.caption)}</p>` : ''}</section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:24px;color:#222}.caption{color:#555;font-size:90%}</style>
${inlineScript(plotlyJs())}
</head><body>
${body}
</body></html>
`;
}

export function writeFigureHtml(figure: Figure, path: string, options: { title?: string } = {}): void {
  writeFileSync(path, figurePageHtml([{ figure }], options));
}

/** Flags for Debian's chromium in containers and CI: no sandbox, no GPU, no network side traffic. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--hide-scrollbars',
];

export function chromiumPath(): string {
  return process.env.AMBIQA_CHROMIUM ?? '/usr/bin/chromium';
}

export interface PngOptions {
  width?: number;
  height?: number;
  /** Device pixels per CSS pixel (2 for sharp slides). The PNG is width·scale × height·scale. */
  scale?: number;
}

interface PlaywrightPage {
  setContent(html: string): Promise<void>;
  addScriptTag(options: { content: string }): Promise<unknown>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
}
interface PlaywrightContext {
  pages(): PlaywrightPage[];
  newPage(): Promise<PlaywrightPage>;
  close(): Promise<void>;
}

/**
 * One headless chromium with plotly loaded, reused for every figure. Use `PngRenderer.launch()`,
 * `render()` any number of times, then `close()` (or `withPngRenderer`).
 */
export class PngRenderer {
  private constructor(
    private readonly context: PlaywrightContext,
    private readonly page: PlaywrightPage,
    private readonly userDataDir: string,
  ) {}

  static async launch(options: { executablePath?: string } = {}): Promise<PngRenderer> {
    const executablePath = options.executablePath ?? chromiumPath();
    const { chromium } = requirePlaywright() as {
      chromium: { launchPersistentContext(dir: string, options: Record<string, unknown>): Promise<PlaywrightContext> };
    };
    // A fresh profile per launch: nothing carries over between runs, and parallel renderers
    // never share a profile lock.
    const userDataDir = mkdtempSync(join(tmpdir(), 'ambiqa-chromium-'));
    let context: PlaywrightContext;
    try {
      context = await chromium.launchPersistentContext(userDataDir, {
        executablePath,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 1000, height: 700 },
      });
    } catch (error) {
      rmSync(userDataDir, { recursive: true, force: true });
      throw new AmbiqaError(
        `cannot start chromium at ${executablePath}: ${(error as Error).message.split('\n')[0]}`,
        'install it (`apt-get install -y --no-install-recommends chromium fonts-dejavu-core`, done by `ambiqa setup`) or set AMBIQA_CHROMIUM to a chromium binary',
        { cause: error },
      );
    }
    const page = context.pages()[0] ?? (await context.newPage());
    await page.setContent('<!doctype html><html><head><meta charset="utf-8"></head><body></body></html>');
    await page.addScriptTag({ content: plotlyJs() });
    return new PngRenderer(context, page, userDataDir);
  }

  /** PNG bytes of the figure at the requested size. */
  async render(figure: Figure, options: PngOptions = {}): Promise<Buffer> {
    const width = options.width ?? 900;
    const height = options.height ?? 520;
    const scale = options.scale ?? 1;
    const dataUrl = await this.page.evaluate(
      async (arg: { data: unknown; layout: unknown; width: number; height: number; scale: number }) => {
        const Plotly = (globalThis as unknown as { Plotly: { toImage(fig: unknown, opts: unknown): Promise<string> } }).Plotly;
        return Plotly.toImage({ data: arg.data, layout: arg.layout }, { format: 'png', width: arg.width, height: arg.height, scale: arg.scale });
      },
      // Round-trip through JSON: only plain data crosses into the page.
      JSON.parse(JSON.stringify({ data: figure.data, layout: figure.layout, width, height, scale })),
    );
    const prefix = 'data:image/png;base64,';
    if (!dataUrl.startsWith(prefix)) throw new Error('chromium returned no PNG');
    return Buffer.from(dataUrl.slice(prefix.length), 'base64');
  }

  async close(): Promise<void> {
    try {
      await this.context.close();
    } finally {
      rmSync(this.userDataDir, { recursive: true, force: true });
    }
  }
}

export async function withPngRenderer<T>(fn: (renderer: PngRenderer) => Promise<T>): Promise<T> {
  const renderer = await PngRenderer.launch();
  try {
    return await fn(renderer);
  } finally {
    await renderer.close();
  }
}

export interface ExportOptions {
  formats?: Array<'html' | 'png'>;
  png?: PngOptions;
  /** Reuse a running renderer (otherwise one is launched and closed for this call). */
  renderer?: PngRenderer;
  /** Log every written file to this MLflow run, under `artifactPath` (default `figures`). */
  tracker?: RunTracker;
  artifactPath?: string;
}

export interface ExportedFigure {
  name: string;
  files: string[];
}

/** Write `<outDir>/<name>.html` and `<name>.png` for every figure; optionally log them to MLflow. */
export async function exportFigures(
  figures: Record<string, Figure>,
  outDir: string,
  options: ExportOptions = {},
): Promise<ExportedFigure[]> {
  const formats = options.formats ?? ['html', 'png'];
  for (const name of Object.keys(figures)) {
    if (!/^[\w.-]+$/.test(name)) throw new AmbiqaError(`figure name '${name}' is not a safe file name`, 'use letters, digits, `.`, `_` and `-`');
  }
  mkdirSync(outDir, { recursive: true });
  const exported: ExportedFigure[] = [];
  const render = async (renderer: PngRenderer | undefined) => {
    for (const [name, figure] of Object.entries(figures)) {
      const files: string[] = [];
      if (formats.includes('html')) {
        const path = join(outDir, `${name}.html`);
        writeFigureHtml(figure, path, { title: name });
        files.push(path);
      }
      if (renderer) {
        const path = join(outDir, `${name}.png`);
        writeFileSync(path, await renderer.render(figure, options.png));
        files.push(path);
      }
      exported.push({ name, files });
    }
  };
  if (formats.includes('png') && Object.keys(figures).length > 0) {
    if (options.renderer) await render(options.renderer);
    else await withPngRenderer(render);
  } else await render(undefined);
  if (options.tracker) {
    for (const e of exported) for (const file of e.files) await options.tracker.logArtifact(file, options.artifactPath ?? 'figures');
  }
  return exported;
}
