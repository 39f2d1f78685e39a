/**
 * One-line display for tslab notebooks: `show(figure)`, `showTable(rows or DataFrame)`,
 * `showTrace(trace)`, `showTree(trace)`.
 *
 * plotly.js (4.8 MB) is sent to the notebook page once per kernel session, with the first figure
 * (or by `setupPlotly()`), not once per figure; later figures wait for it. Everything that came
 * from a model or a dataset is HTML-escaped.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { projectRoot } from '../config/paths';
import { escapeHtml, figureDivHtml, inlineScript, plotlyJs } from '../plots/export';
import { clarificationTreeFigure } from '../plots/tree';
import type { Figure } from '../plots/types';
import { redactStandardStreams, redactText } from '../common/secrets';
import type { Trace } from '../trace/types';
import { frameRows, isDataFrame, type DataFrameLike } from './frame';
import { llmCallRows, tocNodeRows } from './records';

/** Where HTML goes: tslab's display in a kernel; tests and scripts can install their own. */
export interface DisplaySink {
  html(html: string): void;
}

// In a kernel, what the process prints is saved in the notebook: mask it as the CLI does.
if ((globalThis as { __tslab__?: unknown }).__tslab__ !== undefined) redactStandardStreams();

let sink: DisplaySink | undefined;
let plotlySent = false;

export function setDisplaySink(next: DisplaySink | undefined): void {
  sink = next;
  plotlySent = false;
}

function out(): DisplaySink {
  if (!sink) {
    // tslab exists only inside the kernel; resolve it from the project so that this module can be
    // imported (and tested) outside one.
    const tslab = createRequire(join(projectRoot, 'package.json'))('tslab') as { display: DisplaySink };
    sink = { html: (h) => tslab.display.html(h) };
  }
  const target = sink;
  // A notebook's outputs are saved in the .ipynb and shared: mask every known secret first.
  return { html: (h) => target.html(redactText(h)) };
}

/** Send plotly.js to the page (once per kernel session; later calls do nothing). */
export function setupPlotly(force = false): void {
  if (plotlySent && !force) return;
  out().html(`<div class="ambiqa-plotly-loader" style="display:none"></div>${inlineScript(plotlyJs())}`);
  plotlySent = true;
}

export interface ShowOptions {
  height?: number;
  title?: string;
}

/** Draw one or more figures inline. */
export function show(figure: Figure | Figure[], options: ShowOptions = {}): void {
  setupPlotly();
  const figures = Array.isArray(figure) ? figure : [figure];
  const title = options.title ? `<h4>${escapeHtml(options.title)}</h4>` : '';
  out().html(title + figures.map((f) => figureDivHtml(f, options.height ? { height: options.height } : {})).join(''));
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
