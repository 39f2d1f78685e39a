/**
 * One-line display for tslab notebooks: `show(figure)`, `showTable(rows or DataFrame)`,
 * `showTrace(trace)`, `showTree(trace)`.
 *
 * A figure goes out as one Jupyter MIME bundle, the convention JupyterLab, Notebook 7, VS Code,
 * nbviewer and code hosts follow: `application/vnd.plotly.v1+json` (the figure's JSON, drawn
 * interactively wherever a plotly renderer is installed, with no script in the notebook), a static
 * `image/png` rendered by the project's Chromium for every other viewer, and a short
 * `text/plain`. No copy of plotly.js goes into the notebook, so a notebook opened later, untrusted,
 * on another machine or on a code host still shows its figures. Everything that came from a model
 * or a dataset is HTML-escaped; every known secret is masked before anything is sent.
 */
import { escapeHtml, PLOTLY_CONFIG } from '../plots/export';
import { clarificationTreeFigure } from '../pipelines/toc/tree-figure';
import type { Figure } from '../plots/types';
import { redactDeep, redactStandardStreams, redactText } from '../common/secrets';
import type { Trace } from '../trace/types';
import { chromiumPngSync, type PngSize, type SyncPngRenderer } from './figure-png';
import { frameRows, isDataFrame, type DataFrameLike } from './frame';
import { llmCallRows, tocNodeRows } from './records';
import { requireTslab } from './tslab';

/** The MIME type of a plotly figure's JSON in Jupyter outputs. */
export const PLOTLY_MIME = 'application/vnd.plotly.v1+json';

/** One Jupyter display: the same content in several MIME types; the front-end picks the richest it can draw. */
export interface MimeBundle {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** Where outputs go: the kernel's display channel in tslab; tests and scripts can install their own. */
export interface DisplaySink {
  html(html: string): void;
  bundle(bundle: MimeBundle): void;
}

// In a kernel, what the process prints is saved in the notebook: mask it as the CLI does.
if ((globalThis as { __tslab__?: unknown }).__tslab__ !== undefined) redactStandardStreams();

let sink: DisplaySink | undefined;
let renderPng: SyncPngRenderer = chromiumPngSync;

/** Install another sink (and optionally another PNG renderer); `undefined` restores the defaults. */
export function setDisplaySink(next: DisplaySink | undefined, options: { renderPng?: SyncPngRenderer } = {}): void {
  sink = next;
  renderPng = options.renderPng ?? chromiumPngSync;
}

interface TslabDisplayData {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  transient: Record<string, unknown>;
}

/**
 * tslab's public `display` sends one MIME type per display (`display.raw(type, value)`), which
 * would split a figure into outputs that every front-end shows side by side. Underneath,
 * `display.raw` hands a complete display_data content (`{data, metadata, transient}`) to the
 * function the kernel installs for the running cell, `lastWriteDisplayData` in tslab's `jupyter`
 * module (typed in its jupyter.d.ts). Giving it several types at once is the kernel protocol's
 * display_data message as Jupyter defines it.
 */
function tslabSink(): DisplaySink {
  const tslab = requireTslab('tslab') as { display: { html(h: string): void } };
  const jupyter = requireTslab('tslab/dist/jupyter') as { lastWriteDisplayData: ((d: TslabDisplayData, update: boolean) => void) | null };
  return {
    html: (h) => tslab.display.html(h),
    bundle: (b) => {
      const write = jupyter.lastWriteDisplayData;
      if (typeof write !== 'function') throw new Error('tslab is not ready to display (no cell is running)');
      write({ data: b.data, metadata: b.metadata, transient: {} }, false);
    },
  };
}

function out(): DisplaySink {
  // tslab exists only inside the kernel; resolve it lazily so that this module can be imported
  // (and tested) outside one.
  sink ??= tslabSink();
  const target = sink;
  // A notebook's outputs are saved in the .ipynb and shared: mask every known secret first.
  return {
    html: (h) => target.html(redactText(h)),
    bundle: (b) => target.bundle(redactDeep(b)),
  };
}

export interface ShowOptions {
  /** Height in pixels (default: the figure's own layout height, else 460). */
  height?: number;
  /** Width of the PNG fallback in pixels (default 900; the interactive figure fills the cell). */
  width?: number;
  title?: string;
}

const DEFAULT_WIDTH = 900;
const DEFAULT_HEIGHT = 460;

function figureTitle(figure: Figure): string {
  const title = figure.layout.title;
  const text = typeof title === 'string' ? title : (title as { text?: unknown } | undefined)?.text;
  return typeof text === 'string' ? text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim() : '';
}

/**
 * The MIME bundle of one figure. `png` is the static image (base64 in the bundle); without it
 * the bundle still has the figure's JSON and the text.
 */
export function figureBundle(figure: Figure, size: PngSize, png?: Buffer, pngError?: string): MimeBundle {
  const layout = { ...figure.layout, height: size.height };
  const title = figureTitle(figure) || 'figure';
  const data: Record<string, unknown> = {
    [PLOTLY_MIME]: { data: figure.data, layout, config: { ...PLOTLY_CONFIG } },
    'text/plain': `<ambiqa figure: ${title} — ${figure.data.length} trace(s)${png ? '' : `; no PNG: ${pngError ?? 'not rendered'}`}>`,
  };
  const metadata: Record<string, unknown> = {};
  if (png) {
    data['image/png'] = png.toString('base64');
    metadata['image/png'] = { width: size.width, height: size.height };
  }
  return { data, metadata };
}

/**
 * Draw one or more figures inline: one display per figure (see the module comment). If Chromium
 * cannot render the PNG, the figure is still shown where a plotly renderer exists, and the
 * reason is printed on stderr and kept in the text/plain part.
 */
export function show(figure: Figure | Figure[], options: ShowOptions = {}): void {
  const figures = Array.isArray(figure) ? figure : [figure];
  const target = out();
  if (options.title) target.html(`<h4>${escapeHtml(options.title)}</h4>`);
  for (const f of figures) {
    const size = {
      width: options.width ?? DEFAULT_WIDTH,
      height: options.height ?? (typeof f.layout.height === 'number' ? f.layout.height : DEFAULT_HEIGHT),
    };
    let png: Buffer | undefined;
    let pngError: string | undefined;
    try {
      png = renderPng({ data: f.data, layout: { ...f.layout, width: size.width, height: size.height } }, size);
    } catch (error) {
      pngError = (error as Error).message;
      process.stderr.write(`show: no PNG fallback for this figure (${pngError}); it draws only where a plotly renderer is installed\n`);
    }
    target.bundle(figureBundle(f, size, png, pngError));
  }
}

function cell(value: unknown): string {
  if (value === null || value === undefined || (typeof value === 'number' && Number.isNaN(value))) return '';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(3).replace(/\.?0+$/, '');
  if (typeof value === 'object') return escapeHtml(JSON.stringify(value));
  return escapeHtml(String(value));
}

/** An HTML table of records or a danfojs DataFrame (first `maxRows` rows). */
export function tableHtml(data: readonly object[] | DataFrameLike, options: { maxRows?: number; title?: string } = {}): string {
  const rows: Array<Record<string, unknown>> = isDataFrame(data) ? frameRows(data) : [...(data as ReadonlyArray<Record<string, unknown>>)];
  const max = options.maxRows ?? 50;
  const columns: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!columns.includes(k)) columns.push(k);
  const head = columns.map((c) => `<th style="text-align:left">${escapeHtml(c)}</th>`).join('');
  const body = rows
    .slice(0, max)
    .map((r) => `<tr>${columns.map((c) => `<td style="text-align:left;vertical-align:top;max-width:420px">${cell(r[c])}</td>`).join('')}</tr>`)
    .join('');
  const more = rows.length > max ? `<p style="color:#666">${rows.length - max} more rows not shown</p>` : '';
  const title = options.title ? `<h4>${escapeHtml(options.title)}</h4>` : '';
  return `${title}<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>${more}`;
}

export function showTable(data: readonly object[] | DataFrameLike, options: { maxRows?: number; title?: string } = {}): void {
  out().html(tableHtml(data, options));
}

/** An HTML summary of one trace: usage, method decisions, LLM calls with prompts and completions. */
export function traceHtml(trace: Trace, options: { maxMessageChars?: number } = {}): string {
  const max = options.maxMessageChars ?? 2000;
  const clip = (s: string) => (s.length > max ? `${s.slice(0, max)}… [${s.length - max} more characters]` : s);
  const s = trace.summary;
  const pre = (text: string) => `<pre style="white-space:pre-wrap;max-height:320px;overflow:auto">${escapeHtml(text)}</pre>`;
  const calls = trace.llmCalls
    .map((c) => {
      const messages = c.messages.map((m) => `${m.role}: ${clip(m.content)}`).join('\n\n');
      const completions = c.completions.map((x, i) => `completion ${i}${x.cacheHit ? ' (cached)' : ''}: ${clip(x.text)}`).join('\n\n');
      return `<details><summary>#${c.index} ${escapeHtml(c.purpose)} · T=${c.params.temperature} · ${c.completions.length} sample(s)</summary>${pre(messages)}${pre(completions)}</details>`;
    })
    .join('');
  const nodes = tocNodeRows(trace);
  return (
    `<div><b>${escapeHtml(trace.pipeline)}</b> · ${escapeHtml(trace.questionId)}: ${escapeHtml(trace.question)}<br>` +
    `${s.llmCalls} LLM calls · ${s.promptTokens} prompt + ${s.completionTokens} completion tokens · ${s.cacheHits} cache hits · ${s.seconds.toFixed(2)} s` +
    (s.parseFailures ? ` · ${s.parseFailures} parse failures` : '') +
    `<h4>Output</h4>${pre(trace.output)}` +
    (nodes.length > 0 ? `<h4>Clarification nodes</h4>${tableHtml(nodes)}` : `<h4>Decisions</h4>${pre(JSON.stringify(trace.decisions, null, 2))}`) +
    `<h4>LLM calls</h4>${tableHtml(llmCallRows(trace))}${calls}</div>`
  );
}

export function showTrace(trace: Trace, options: { maxMessageChars?: number } = {}): void {
  out().html(traceHtml(trace, options));
}

/** Draw a ToC trace's clarification tree. */
export function showTree(trace: Trace, options: ShowOptions = {}): void {
  show(clarificationTreeFigure(trace), { height: options.height ?? 520, ...(options.title ? { title: options.title } : {}) });
}
