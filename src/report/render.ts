/**
 * The shareable report: one self-contained HTML file (plotly.js and all data inline, no network)
 * with the config, metrics and their confidence intervals, usage, figures and a browsable table
 * of examples. Everything that came from a model, a dataset or a passage is HTML-escaped on the
 * server side, and the embedded trace data is JSON escaped for a script element and only ever
 * shown through `textContent`.
 */
import { llmDisplayName } from '../config/catalog';
import { stringify as toYaml } from 'yaml';
import { rowKey, scoreValues, traceKey, type ExampleResult, type RunMetrics } from '../run-files';
import { escapeHtml, figureDivHtml, inlineScript, jsonForScript, plotlyJs } from '../plots/export';
import { metricOf, perQuestionUsage, pipelineOf } from '../plots/runs';
import type { RunData } from '../plots/types';
import { judgesOf } from '../plots/judges';
import type { Trace } from '../trace/types';
import { summaryUsage } from '../trace/usage';
import { decisionStatistics } from '../metrics/decisions';
import type { MethodCatalog } from '../plots/methods';
import { formatUsd } from '../llm/pricing';
import { tokensOf } from '../llm/usage';
import { REPORT_CSS, REPORT_JS } from './assets';
import type { FigureChoice } from './figures';
import type { LoadedRun, LoadedSweep } from './load';
import { groupsSection } from './groups';

/** What the report shows as an example's gold: any of these the dataset has. */
export interface GoldInfo {
  answers?: string[];
  qaPairs?: Array<{ question: string; shortAnswers: string[] }>;
  longAnswers?: string[];
  label?: string;
}

export interface ReportOptions {
  figures?: FigureChoice;
  gold?: ReadonlyMap<string, GoldInfo>;
  /**
   * `compact` (default) embeds every trace with each prompt and completion cut to
   * `maxMessageChars`; `full` embeds them whole; `none` leaves traces out.
   */
  traces?: 'compact' | 'full' | 'none';
  maxMessageChars?: number;
  title?: string;
  /** Shown in the header; default: now. */
  generatedAt?: string;
  /** How the page is framed: plotly.js by reference and a preface (a study bundle, src/report/bundle.ts). */
  page?: PageOptions;
  /** A sweep's point `i` has a page of its own at this relative URL (a bundle): its examples are left to it. */
  pointPage?: (index: number) => string | undefined;
  /** A figure's PNG (a relative URL), where one was rendered: shown when plotly.js cannot draw. */
  figurePng?: (name: string) => string | undefined;
}

/**
 * A page inlines plotly.js (4.8 MB) unless `plotlySrc` names a copy beside it, which a bundle of
 * many pages writes once; `preface` is trusted HTML put first in the body (navigation, provenance).
 */
export interface PageOptions {
  plotlySrc?: string;
  preface?: string;
  /** Trusted HTML put right after the page's header (its title and facts line). */
  afterHeader?: string;
}

/** `body` with `html` after its header (`header()`'s facts line, the first `<div class="meta">`; its text is escaped, so it holds no `</div>`). */
function insertAfterHeader(body: string, html: string | undefined): string {
  if (!html) return body;
  const start = body.indexOf('<div class="meta">');
  const end = start < 0 ? -1 : body.indexOf('</div>', start);
  return end < 0 ? html + body : body.slice(0, end + 6) + html + body.slice(end + 6);
}

const fmt = (x: number | undefined, digits = 1) => (x === undefined || Number.isNaN(x) ? '' : x.toFixed(digits));
const fmtInt = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n… [${text.length - max} characters left out of the report] …\n${text.slice(text.length - tail)}`;
}

/** A copy of the trace with long prompts and completions shortened (the report stays openable). */
export function compactTrace(trace: Trace, maxChars: number): Trace {
  return {
    ...trace,
    llmCalls: trace.llmCalls.map((c) => ({
      ...c,
      messages: c.messages.map((m) => ({ ...m, content: cut(m.content, maxChars) })),
      completions: c.completions.map((x) => ({ ...x, text: cut(x.text, maxChars) })),
    })),
  };
}

function metricNames(results: readonly ExampleResult[], metrics?: RunMetrics): string[] {
  const names = new Set(Object.keys(metrics?.metrics ?? {}));
  for (const r of results) for (const k of Object.keys(scoreValues(r))) names.add(k);
  return [...names];
}

function metricsTable(run: RunData): string {
  const names = metricNames(run.results, run.metrics);
  if (names.length === 0) return '<p class="note">No metrics recorded.</p>';
  const rows = names.map((name) => {
    const m = metricOf(run, name);
    const ci = m && m.ciLow !== m.ciHigh ? `[${fmt(m.ciLow)}, ${fmt(m.ciHigh)}]` : '';
    return `<tr><td>${escapeHtml(name)}</td><td class="num">${fmt(m?.mean)}</td><td class="num">${ci}${trialNote(m)}</td><td class="num">${m?.n ?? ''}</td></tr>`;
  });
  return `<table class="metrics"><thead><tr><th>metric</th><th class="num">mean</th><th class="num">95% CI (bootstrap)</th><th class="num">n</th></tr></thead><tbody>${rows.join('')}</tbody></table>${settingsNote(run)}${scoringNote(run)}`;
}

/** Under trials (docs/metrics.md, "Trials"): the pooled trial SD and the sampling share beside a CI; '' otherwise. */
function trialNote(a: { trials?: number; trialSd?: number; samplingShare?: number } | undefined): string {
  if (!a || a.trials === undefined) return '';
  const parts = [`${a.trials} trials`];
  if (a.trialSd !== undefined && Number.isFinite(a.trialSd)) parts.push(`trial SD ${fmt(a.trialSd)}`);
  if (a.samplingShare !== undefined && Number.isFinite(a.samplingShare)) parts.push(`sampling ${Math.round(100 * a.samplingShare)}%`);
  return ` <span class="note trials">${parts.join(', ')}</span>`;
}

/** How the metrics were measured (`metrics.json` settings: the D-F1 reader, the ROUGE-Lsum splitter). */
function settingsNote(run: RunData): string {
  const settings = Object.entries(run.metrics?.settings ?? {});
  if (settings.length === 0) return '';
  return `<p class="note settings">Measured with: ${settings.map(([k, v]) => `<code>${escapeHtml(k)}</code> = ${escapeHtml(v)}`).join('; ')}</p>`;
}

/** The run's re-scorings (`ambiqa score --run`, metrics.json `scoring`): what, when, which reader, which ambiqa. */
function scoringNote(run: RunData): string {
  const entries = run.metrics?.scoring ?? [];
  if (entries.length === 0) return '';
  const items = entries.map(
    (e) =>
      `<li><code>${escapeHtml(e.id)}</code> ${escapeHtml(e.at)}: ${escapeHtml(e.metrics.join(', '))}${e.reader ? ` (reader ${escapeHtml(e.reader)})` : ''}; ambiqa ${escapeHtml(e.version)}${e.commit ? ` at ${escapeHtml(e.commit.slice(0, 12))}` : ''}</li>`,
  );
  return `<p class="note scoring">Re-scored in place (the values replaced are in each row's <code>scoreHistory</code>):</p><ul class="note scoring">${items.join('')}</ul>`;
}

/** A run's decision statistics: from metrics.json, else computed from its traces (older runs). */
function decisionsOf(run: RunData, methods: MethodCatalog): Record<string, number> {
  if (run.metrics?.decisions) return run.metrics.decisions;
  return run.traces.length > 0 ? decisionStatistics(run.traces, methods).metrics : {};
}

/** What the pipeline decided (src/metrics/decisions.ts): prune, route, edit rates, mean P(yes)… */
function decisionsTable(run: RunData, methods: MethodCatalog): string {
  const entries = Object.entries(decisionsOf(run, methods));
  if (entries.length === 0) return '<p class="note">No decision statistics (no traces).</p>';
  const rows = entries.map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td class="num">${fmt(v, 3)}</td></tr>`);
  return (
    `<table class="decisions"><thead><tr><th>decision statistic</th><th class="num">value</th></tr></thead><tbody>${rows.join('')}</tbody></table>` +
    '<p class="note">Computed from the traces: rates and shares in [0, 1]; <code>decision_p_yes_*</code> is the mean raw P(yes) of each judge, <code>decision_p_cal_*</code> its mean calibrated P (with <code>judgeCalibration</code>; <code>*_prior</code>: the content-free prior).</p>'
  );
}

/** Judge quality per graded judge (src/metrics/judge-quality.ts), with each judge's verdict sentence. */
function judgesTable(run: RunData, methods: MethodCatalog): string {
  const judges = Object.values(judgesOf(run, methods.judges));
  if (judges.length === 0) return '';
  const f = (x: number | null, digits = 3) => (x === null ? '' : fmt(x, digits));
  const rows = judges.map(
    (d) =>
      `<tr><td><code>${escapeHtml(d.purpose)}</code></td><td class="num">${d.judgments}</td><td class="num">${d.labelled}</td>` +
      `<td class="num">${d.positives} / ${d.negatives}</td>` +
      `<td class="num">${f(d.auc, 2)}${d.aucCiLow !== null && d.aucCiHigh !== null ? ` [${fmt(d.aucCiLow, 2)}, ${fmt(d.aucCiHigh, 2)}]` : ''}</td>` +
      `<td class="num">${f(d.brier)}</td><td class="num">${f(d.meanPPositive)}</td><td class="num">${f(d.meanPNegative)}</td><td class="num">${f(d.shareAtLeastHalf, 2)}</td>` +
      `<td>${d.separates ? 'yes' : 'no'}</td></tr>`,
  );
  return (
    '<h2>Judges</h2>' +
    `<table class="judges"><thead><tr><th>judge</th><th class="num">judgments</th><th class="num">labelled</th><th class="num">right / wrong</th><th class="num">AUC [95% CI]</th><th class="num">Brier</th><th class="num">mean P right</th><th class="num">mean P wrong</th><th class="num">share P ≥ 0.5</th><th>separates</th></tr></thead><tbody>${rows.join('')}</tbody></table>` +
    `<ul class="verdicts">${judges.map((d) => `<li class="verdict">${escapeHtml(d.verdict)} <span class="note">Silver label: ${escapeHtml(d.silverLabel)}.</span></li>`).join('')}</ul>` +
    '<p class="note">P against a silver label from the gold data (docs/metrics.md, "Judge diagnostics"); the CI resamples questions. A judge separates when each label has enough labelled judgments and the CI excludes 0.5.</p>'
  );
}

function usageTable(run: RunData): string {
  const per = perQuestionUsage(run);
  const total = run.metrics?.usage;
  const row = (label: string, t: number | undefined, p: number | undefined, digits = 1) =>
    `<tr><td>${label}</td><td class="num">${t === undefined ? '' : fmtInt(t)}</td><td class="num">${fmt(p, digits)}</td></tr>`;
  return (
    `<table class="usage"><thead><tr><th>usage</th><th class="num">total</th><th class="num">per question</th></tr></thead><tbody>` +
    row('LLM calls', total?.llm_calls, per.llmCalls) +
    row('prompt tokens', total?.prompt_tokens, per.promptTokens, 0) +
    row('completion tokens', total?.completion_tokens, per.completionTokens, 0) +
    row('cache hits', total?.cache_hits, run.results.length ? run.results.reduce((a, r) => a + (r.usage?.cacheHits ?? 0), 0) / run.results.length : 0) +
    row('seconds', total?.wall_seconds, per.seconds, 2) +
    costRow(run) +
    `</tbody></table><p class="note">Per-question seconds are each question's own wall time; the run total overlaps them when questions run concurrently.</p>` +
    costNote(run)
  );
}

/** Dollars, total and per answered question, when the run had a price (replays cost 0). */
function costRow(run: RunData): string {
  const total = run.metrics?.usage.cost_usd;
  if (total === undefined) return '';
  const priced = run.results.filter((r) => r.usage?.costUsd !== undefined);
  const per = priced.length > 0 ? priced.reduce((a, r) => a + (r.usage.costUsd ?? 0), 0) / priced.length : 0;
  return `<tr><td>cost (USD)</td><td class="num">${escapeHtml(formatUsd(total))}</td><td class="num">${escapeHtml(formatUsd(per))}</td></tr>`;
}

function costNote(run: RunData): string {
  const source = run.metrics?.settings?.['llm.pricing'];
  if (run.metrics?.usage.cost_usd === undefined) return source ? `<p class="note">No cost: ${escapeHtml(source)}.</p>` : '';
  return `<p class="note">Cost priced at ${escapeHtml(source ?? 'the run\'s price')}; calls replayed from ambiqa's cache cost 0.</p>`;
}

/** A figure's PNG shown when plotly.js does not draw (no script, or the bundle's asset missing), and a link to it. */
export function pngFallbackHtml(src: string | undefined, title: string): string {
  if (!src) return '';
  const img = `<img class="png-fallback" src="${escapeHtml(src)}" alt="${escapeHtml(title)}" style="max-width:100%">`;
  return `<noscript>${img}</noscript><p class="note png-link"><a href="${escapeHtml(src)}">PNG</a></p>`;
}

function figuresHtml(choice: FigureChoice | undefined, png?: (name: string) => string | undefined): string {
  if (!choice || (choice.figures.length === 0 && choice.skipped.length === 0)) return '<p class="note">No figures for this run.</p>';
  const parts = choice.figures.map(
    (f) => `<section class="figure" id="fig-${escapeHtml(f.name)}"><h3>${escapeHtml(f.title)}</h3>${figureDivHtml(f.figure)}${pngFallbackHtml(png?.(f.name), f.title)}${f.caption ? `<p class="caption">${escapeHtml(f.caption)}</p>` : ''}</section>`,
  );
  if (choice.skipped.length > 0) {
    parts.push(`<ul class="skipped">${choice.skipped.map((s) => `<li>${escapeHtml(s.name)} not drawn: ${escapeHtml(s.reason)}</li>`).join('')}</ul>`);
  }
  return parts.join('\n');
}

function goldHtml(gold: GoldInfo | undefined): string {
  if (!gold) return '';
  const parts: string[] = [];
  if (gold.label) parts.push(`<b>label:</b> ${escapeHtml(gold.label)}`);
  if (gold.qaPairs && gold.qaPairs.length > 0) {
    parts.push(gold.qaPairs.map((q) => `• ${escapeHtml(q.question)} → ${escapeHtml(q.shortAnswers.join(' | '))}`).join('\n'));
  } else if (gold.answers && gold.answers.length > 0) parts.push(escapeHtml(gold.answers.join(' | ')));
  return parts.join('\n');
}

function goldText(gold: GoldInfo | undefined): string {
  if (!gold) return '';
  return [gold.label ?? '', ...(gold.qaPairs ?? []).flatMap((q) => [q.question, ...q.shortAnswers]), ...(gold.answers ?? [])].join(' ');
}

/** The sortable, filterable table of examples. `tableId` keeps ids unique when a page holds several. */
export function examplesTable(run: RunData, options: ReportOptions & { tableId?: string } = {}): string {
  const names = metricNames(run.results, run.metrics);
  const hasGold = options.gold !== undefined && run.results.some((r) => options.gold!.has(r.id));
  const hasTraces = (options.traces ?? 'compact') !== 'none' && run.traces.length > 0;
  const prefix = options.tableId ? `${options.tableId}-` : '';
  const head = [
    '<th>id</th><th>question</th><th>output</th>',
    hasGold ? '<th>gold</th>' : '',
    ...names.map((n) => `<th class="num">${escapeHtml(n)}</th>`),
    '<th class="num">LLM calls</th><th class="num">tokens</th><th class="num">seconds</th>',
    hasTraces ? '<th>trace</th>' : '',
  ].join('');
  const rows = run.results.map((r) => {
    const gold = options.gold?.get(r.id);
    const tokens = r.usage ? (tokensOf(summaryUsage(r.usage)) ?? '') : 0;
    const output = r.error ? `[error] ${r.error}` : r.output + (r.answer !== undefined && r.answer !== r.output ? `\n(short answer: ${r.answer})` : '');
    return (
      // Keyed by `rowKey`: under `trials: k` each trial of a question is its own row and trace.
      `<tr id="ex-${escapeHtml(prefix + rowKey(r))}" data-id="${escapeHtml(prefix + rowKey(r))}"${r.error ? ' class="error"' : ''}>` +
      `<td>${escapeHtml(r.id)}${r.trial !== undefined ? ` <span class="note">trial ${r.trial}</span>` : ''}</td><td class="text">${escapeHtml(r.question)}</td><td class="text">${escapeHtml(output)}</td>` +
      (hasGold ? `<td class="text" data-v="${escapeHtml(goldText(gold))}">${goldHtml(gold)}</td>` : '') +
      names.map((n) => {
        const v = scoreValues(r)[n];
        return typeof v === 'number' ? `<td class="num" data-v="${v}">${fmt(v)}</td>` : '<td class="num" data-v=""></td>';
      }).join('') +
      `<td class="num">${r.usage?.llmCalls ?? ''}</td><td class="num">${tokens}</td><td class="num">${fmt(r.usage?.seconds, 2)}</td>` +
      (hasTraces ? `<td><button class="trace-btn" type="button">trace</button> <a href="#ex-${escapeHtml(encodeURIComponent(prefix + rowKey(r)))}">link</a></td>` : '') +
      `</tr>`
    );
  });
  return (
    `<div class="examples-block"><div class="controls"><input type="search" placeholder="filter examples (any column)" aria-label="filter examples">` +
    `<label><input type="checkbox" class="errors-only"> errors only</label><span class="count"></span></div>` +
    `<table class="examples"><thead><tr>${head}</tr></thead><tbody>${rows.join('\n')}</tbody></table></div>`
  );
}

function tracesData(runs: ReadonlyArray<{ run: RunData; prefix: string }>, options: ReportOptions): string {
  const mode = options.traces ?? 'compact';
  if (mode === 'none') return '';
  const max = options.maxMessageChars ?? 4000;
  const data: Record<string, Trace> = {};
  for (const { run, prefix } of runs) {
    for (const t of run.traces) data[prefix + traceKey(t)] = mode === 'full' ? t : compactTrace(t, max);
  }
  return `<script type="application/json" id="ambiqa-traces">${jsonForScript(data)}</script>`;
}

export function page(title: string, body: string, scripts: string, options: PageOptions = {}): string {
  const plotly = options.plotlySrc ? `<script src="${escapeHtml(options.plotlySrc)}"></script>` : inlineScript(plotlyJs());
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_CSS}</style>
${plotly}
</head><body>
${options.preface ?? ''}
${insertAfterHeader(body, options.afterHeader)}
${scripts}
<script>${REPORT_JS}</script>
</body></html>
`;
}

function configYaml(config: Record<string, unknown>): string {
  return Object.keys(config).length > 0 ? `<pre>${escapeHtml(toYaml(config))}</pre>` : '<p class="note">No config.yaml in the run directory.</p>';
}

export function header(title: string, facts: Array<[string, string | undefined]>, generatedAt: string): string {
  const spans = facts.filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => `<span><b>${escapeHtml(k)}:</b> ${escapeHtml(v!)}</span>`);
  return `<h1>${escapeHtml(title)}</h1><div class="meta">${spans.join('')}<span><b>report:</b> ${escapeHtml(generatedAt)}</span></div>`;
}

export function mlflowLink(run: { mlflow?: { runUrl?: string; runUrlNote?: string } }): string {
  const url = run.mlflow?.runUrl;
  if (!url || !/^https?:\/\//.test(url)) return '';
  const note = run.mlflow?.runUrlNote ? ` <span class="note">(${escapeHtml(run.mlflow.runUrlNote)})</span>` : '';
  return `<p>MLflow run: <a href="${escapeHtml(url)}">${escapeHtml(url)}</a>${note}</p>`;
}

/** The LLM by name: a catalog model's name rather than its file hash (which the trace records). */
function llmOf(run: RunData): string | undefined {
  const t = run.traces[0];
  return t ? `${t.llm.provider}/${llmDisplayName(t.llm.model)}` : undefined;
}

function datasetOf(run: RunData): string | undefined {
  const d = run.config.dataset;
  if (typeof d === 'string') return d;
  if (d && typeof d === 'object') {
    const o = d as Record<string, unknown>;
    return [o.name, o.split].filter((x) => typeof x === 'string').join(' / ') || undefined;
  }
  return undefined;
}

/** A run's report; `methods` (the method catalog) gives its decision statistics and judges where metrics.json lacks them. */
export function renderRunReport(run: RunData & Partial<Pick<LoadedRun, 'mlflow' | 'state'>>, methods: MethodCatalog, options: ReportOptions = {}): string {
  const title = options.title ?? `ambiqa run: ${run.name}`;
  const generatedAt = options.generatedAt ?? new Date().toISOString();
  const errors = run.results.filter((r) => r.error).length;
  const body = [
    header(title, [
      ['pipeline', pipelineOf(run)],
      ['dataset', datasetOf(run)],
      ['LLM', llmOf(run)],
      ['examples', String(run.results.length)],
      ['errors', errors ? String(errors) : undefined],
      ['status', run.state?.status],
    ], generatedAt),
    mlflowLink(run),
    '<h2>Metrics</h2>', metricsTable(run),
    groupsSection(run.metrics?.groups),
    '<h2>Decisions</h2>', decisionsTable(run, methods),
    judgesTable(run, methods),
    '<h2>Usage</h2>', usageTable(run),
    '<h2>Figures</h2>', figuresHtml(options.figures, options.figurePng),
    '<h2>Examples</h2>', examplesTable(run, options),
    '<h2>Config</h2>', configYaml(run.config),
  ].join('\n');
  return page(title, body, tracesData([{ run, prefix: '' }], options), options.page);
}

function sweepTable(sweep: LoadedSweep, methods: MethodCatalog): string {
  const metricSet = new Set<string>();
  for (const r of sweep.runs) for (const n of metricNames(r.results, r.metrics)) metricSet.add(n);
  const metrics = [...metricSet];
  const decisionSet = new Set<string>();
  for (const r of sweep.runs) for (const k of Object.keys(decisionsOf(r, methods))) decisionSet.add(k);
  const decisions = [...decisionSet];
  const axes = sweep.axes.length > 0 ? sweep.axes : [];
  const paired: string[] = [];
  for (const r of sweep.runs) for (const p of r.sweepPaired ?? []) if (!paired.includes(p.metric)) paired.push(p.metric);
  const head = ['<th>run</th>', ...axes.map((a) => `<th>${escapeHtml(a)}</th>`), '<th class="num">n</th>',
    ...metrics.map((m) => `<th class="num">${escapeHtml(m)}</th>`),
    ...paired.map((m) => `<th class="num">Δ ${escapeHtml(m)} vs reference</th>`),
    ...decisions.map((d) => `<th class="num">${escapeHtml(d)}</th>`),
    '<th class="num">LLM calls / q</th><th class="num">tokens / q</th><th class="num">seconds / q</th>'].join('');
  const rows = sweep.runs.map((run, i) => {
    const per = perQuestionUsage(run);
    return `<tr><td><a href="#run-${i}">${escapeHtml(run.name)}</a></td>` +
      axes.map((a) => `<td>${escapeHtml(JSON.stringify(run.sweepValues?.[a] ?? ''))}</td>`).join('') +
      `<td class="num">${new Set(run.results.map((r) => r.id)).size}</td>` +
      metrics.map((m) => {
        const a = metricOf(run, m);
        return `<td class="num">${a ? `${fmt(a.mean)}${a.ciLow !== a.ciHigh ? ` <span class="note">[${fmt(a.ciLow)}, ${fmt(a.ciHigh)}]</span>` : ''}${trialNote(a)}` : ''}</td>`;
      }).join('') +
      paired.map((m) => {
        if (run.sweepReference) return '<td class="num note">reference</td>';
        const p = run.sweepPaired?.find((x) => x.metric === m);
        if (!p || !Number.isFinite(p.meanDelta)) return '<td class="num"></td>';
        const pText = p.p === null ? '' : p.p < 0.001 ? p.p.toExponential(1) : p.p.toFixed(3);
        const sampling = p.trials?.samplingShare != null ? `, sampling ${Math.round(100 * p.trials.samplingShare)}%` : '';
        return `<td class="num">${p.meanDelta > 0 ? '+' : ''}${fmt(p.meanDelta)} <span class="note">[${fmt(p.ciLow)}, ${fmt(p.ciHigh)}] p ${pText}${sampling}</span></td>`;
      }).join('') +
      ((d) => decisions.map((k) => `<td class="num">${d[k] === undefined ? '' : fmt(d[k], 3)}</td>`).join(''))(decisionsOf(run, methods)) +
      `<td class="num">${fmt(per.llmCalls)}</td><td class="num">${fmt(per.tokens, 0)}</td><td class="num">${fmt(per.seconds, 2)}</td></tr>`;
  });
  const note = paired.length > 0
    ? '<p class="note">Δ vs reference: each point minus the sweep\'s reference point (<code>sweep.reference</code>, default the first) on the questions both answered, paired bootstrap 95% CI and two-sided sign-flip p (docs/compare.md); the side-by-side view is <code>comparison.html</code> in the sweep folder.</p>'
    : '';
  return `<table class="sweep"><thead><tr>${head}</tr></thead><tbody>${rows.join('\n')}</tbody></table>${note}`;
}

/** A sweep point's examples: its table, or a link to its own page where it has one (a bundle: the table is there, once). */
function pointExamples(run: LoadedRun, i: number, options: ReportOptions): string {
  const href = options.pointPage?.(i);
  if (href) return `<p class="point-page">Examples and traces: <a href="${escapeHtml(href)}">the point's page</a>.</p>`;
  return examplesTable(run, { ...options, tableId: `r${i}` });
}

/** A sweep's report. Traces are left out unless asked for (`traces: 'compact'`): a sweep has many. */
export function renderSweepReport(sweep: LoadedSweep, methods: MethodCatalog, options: ReportOptions = {}): string {
  options = { ...options, traces: options.traces ?? 'none' };
  const title = options.title ?? `ambiqa sweep: ${sweep.name}`;
  const generatedAt = options.generatedAt ?? new Date().toISOString();
  const children = sweep.runs.map((run, i) =>
    `<details class="run" id="run-${i}"><summary><b>${escapeHtml(run.name)}</b> · ${run.results.length} examples</summary>` +
    mlflowLink(run) + metricsTable(run) + groupsSection(run.metrics?.groups, '<h4>Metrics by group</h4>') + decisionsTable(run, methods) + usageTable(run) + pointExamples(run, i, options) +
    `<h4>Config</h4>${configYaml(run.config)}</details>`,
  );
  const body = [
    header(title, [
      ['runs', String(sweep.runs.length)],
      ['axes', sweep.axes.join(', ')],
      ['pipelines', [...new Set(sweep.runs.map(pipelineOf))].join(', ')],
    ], generatedAt),
    mlflowLink(sweep),
    '<h2>Summary</h2>', sweepTable(sweep, methods),
    '<h2>Figures</h2>', figuresHtml(options.figures, options.figurePng),
    '<h2>Runs</h2>', children.join('\n'),
  ].join('\n');
  return page(title, body, tracesData(sweep.runs.map((run, i) => ({ run, prefix: `r${i}-` })), options), options.page);
}
