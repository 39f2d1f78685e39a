/**
 * Comparisons: build one from run and sweep directories (`compareDirs`), read and write its JSON
 * file, and render its side-by-side report — the runs with their usage, the paired table, the
 * delta figure, then one row per question with each run's answer, its STR-EM hit per gold
 * disambiguation, its metrics and the deltas, sortable by delta and filterable to "answer
 * changed"; each answer opens its trace in the page and links to its MLflow trace where the run
 * was tracked. The security rules of every report hold: whatever came from a model or a dataset
 * is escaped, traces are embedded with `jsonForScript` and shown through `textContent` only, and
 * every known secret is masked in the page.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AmbiqaError, describeError } from '../errors';
import type { QaPair } from '../datasets/types';
import { compareRuns, type CompareOptions, type CompareRunInput } from '../metrics/compare';
import { tokensOf } from '../llm/usage';
import { comparisonFigure } from '../plots/compare';
import { escapeHtml, figureDivHtml, jsonForScript } from '../plots/export';
import { comparisonSchema, isComparisonValue, type Comparison, type ComparedRun } from '../run-files/comparison';
import { mlflowTraceId, traceIdFor } from '../tracking/otel-export';
import { followBrowsingServer } from '../tracking/server';
import type { Trace } from '../trace/types';
import { redactHtml } from './build';
import { goldForRows } from './gold';
import { loadRunOrSweep, type LoadedRun } from './load';
import { compactTrace, header, page } from './render';
import { trialsAnswerHtml, trialsSectionHtml } from './compare-trials';

export interface CompareDirsOptions extends CompareOptions {
  /** Dataset file with the gold of rows written before format 3, which carry none (default: the baseline's config dataset.path). */
  dataPath?: string;
}

export interface ComparedDirs {
  comparison: Comparison;
  runs: LoadedRun[];
  notes: string[];
}

/** Load run and sweep directories (a sweep counts as its points' runs) and compare them. */
export function compareDirs(dirs: readonly string[], options: CompareDirsOptions = {}): ComparedDirs {
  if (dirs.length === 0) throw new AmbiqaError('compare needs run or sweep directories', 'e.g. `ambiqa compare artifacts/runs/rag artifacts/runs/toc`');
  const runs: LoadedRun[] = [];
  for (const dir of dirs) {
    const loaded = loadRunOrSweep(dir);
    if (loaded.kind === 'run') runs.push(loaded.run);
    else runs.push(...loaded.sweep.runs);
  }
  for (const run of runs) {
    if (run.mlflow?.runUrl) {
      const { url, note } = followBrowsingServer(run.mlflow.runUrl);
      run.mlflow = { ...run.mlflow, runUrl: url, ...(note ? { runUrlNote: note } : {}) };
    }
  }
  const notes: string[] = [];
  let gold: Map<string, readonly QaPair[]> | undefined;
  if (options.gold === undefined && runs.length > 0) {
    const loadedGold = goldForRows(runs.flatMap((r) => r.results), runs[0].config, options.dataPath);
    if (loadedGold.error) notes.push(`per-disambiguation hits not shown: ${loadedGold.error}`);
    if (loadedGold.gold) gold = new Map([...loadedGold.gold.dqs].map(([id, qa]) => [id, qa]));
  }
  const comparison = compareRuns(runs.map(toInput), { ...options, ...(gold ? { gold } : {}) });
  return { comparison, runs, notes };
}

function toInput(run: LoadedRun): CompareRunInput {
  return {
    name: run.name,
    dir: run.dir,
    config: run.config,
    results: run.results,
    ...(run.metrics ? { metrics: run.metrics } : {}),
    ...(run.mlflow ? { mlflow: { runId: run.mlflow.runId, experimentId: run.mlflow.experimentId, ...(run.mlflow.runUrl ? { runUrl: run.mlflow.runUrl } : {}) } } : {}),
    ...(run.sweepValues ? { sweepValues: run.sweepValues } : {}),
  };
}

/** Read a comparison file; one clear line when it is not one. */
export function readComparison(path: string): Comparison {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new AmbiqaError(`${abs} does not exist`, 'pass the file `ambiqa compare --out` wrote');
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(abs, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${abs} is not JSON: ${describeError(error)}`);
  }
  if (!isComparisonValue(value)) throw new AmbiqaError(`${abs} is not a comparison file (no "kind": "ambiqa.comparison")`, 'pass the file `ambiqa compare --out` wrote');
  const parsed = comparisonSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AmbiqaError(`${abs}: ${issue.path.join('.') || '(root)'}: ${issue.message}`, 'the file was changed or written by another version; run `ambiqa compare` again');
  }
  return parsed.data;
}

/** Whether a path is a comparison file (a JSON file with the comparison kind), for `ambiqa report`. */
export function isComparisonFile(path: string): boolean {
  if (!path.endsWith('.json') || !existsSync(path)) return false;
  try {
    return isComparisonValue(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    return false;
  }
}

export function writeComparison(comparison: Comparison, path: string): string {
  const abs = resolve(path);
  mkdirSync(dirname(abs), { recursive: true });
  // NaN (a metric with no paired question) is not JSON: written as null and read back as such.
  writeFileSync(abs, JSON.stringify(comparison, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n');
  return abs;
}

// ------------------------------------------------------------------------------- rendering

const fmt = (x: number | null | undefined, digits = 1) => (x === null || x === undefined || !Number.isFinite(x) ? '' : x.toFixed(digits));
const fmtP = (p: number | null) => (p === null ? '' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));
const signed = (x: number) => (x > 0 ? `+${x.toFixed(1)}` : x.toFixed(1));

/** The traces of the compared runs, read from their run directories where those still exist. */
export function loadComparisonTraces(comparison: Comparison): Map<string, Trace[]> {
  const traces = new Map<string, Trace[]>();
  for (const run of comparison.runs) {
    if (!run.dir || !existsSync(run.dir)) continue;
    try {
      const loaded = loadRunOrSweep(run.dir);
      if (loaded.kind === 'run') traces.set(run.name, loaded.run.traces);
    } catch {
      /* a run dir that cannot be read only loses its trace buttons */
    }
  }
  return traces;
}

export interface ComparisonReportOptions {
  traces?: ReadonlyMap<string, readonly Trace[]>;
  traceMode?: 'compact' | 'full' | 'none';
  maxMessageChars?: number;
  title?: string;
  generatedAt?: string;
}

function mlflowBase(url: string | undefined): string | undefined {
  if (!url || !/^https?:\/\//.test(url)) return undefined;
  return url.split('#')[0].replace(/\/$/, '');
}

/** The MLflow UI address of a question's trace (the id is derived from run id and question id). */
export function mlflowTraceUrl(run: ComparedRun, questionId: string): string | undefined {
  const base = mlflowBase(run.mlflow?.runUrl);
  if (!base || !run.mlflow) return undefined;
  const traceId = mlflowTraceId(traceIdFor(run.mlflow.runId, questionId));
  return `${base}/#/experiments/${encodeURIComponent(run.mlflow.experimentId)}/traces?selectedEvaluationId=${encodeURIComponent(traceId)}`;
}

function runsTable(c: Comparison): string {
  const head = ['run', 'pipeline', 'questions', 'failed', ...c.metrics.map((m) => `${m} (mean)`), 'LLM calls', 'tokens', 'cost (USD)', 'seconds', 'MLflow'];
  const rows = c.runs.map((r) => {
    const u = r.usage;
    const link = mlflowBase(r.mlflow?.runUrl) ? `<a href="${escapeHtml(r.mlflow!.runUrl!)}">run</a>` : '';
    return (
      `<tr><td>${escapeHtml(r.name)}${r.name === c.baseline ? ' <span class="note">(baseline)</span>' : ''}</td><td>${escapeHtml(r.pipeline ?? '')}</td>` +
      `<td class="num">${r.questions}</td><td class="num">${r.failed}</td>` +
      c.metrics.map((m) => `<td class="num">${fmt(r.means[m])}</td>`).join('') +
      `<td class="num">${u ? u.llm_calls : ''}</td><td class="num">${u ? (tokensOf({ promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens }) ?? '') : ''}</td>` +
      `<td class="num">${u?.cost_usd !== undefined ? u.cost_usd.toFixed(4) : ''}</td><td class="num">${u ? fmt(u.wall_seconds) : ''}</td><td>${link}</td></tr>`
    );
  });
  return `<table class="runs"><thead><tr>${head.map((h, i) => `<th${i >= 2 && i < head.length - 1 ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>` +
    '<p class="note">Usage from each run\'s metrics.json (cost where a price was known for its calls); means are each run\'s own, over all the questions it answered.</p>';
}

function pairedTable(c: Comparison): string {
  const head = ['run', 'metric', 'n', 'baseline', 'run', 'Δ', '95% CI', 'p', 'p (Holm)', 'questions for 80% power', 'answer changed', 'left out'];
  const rows = c.rows.map((r) => {
    const leftOut = r.failedInRun + r.failedInBaseline + r.onlyInRun + r.onlyInBaseline;
    const resolved = r.ciLow > 0 || r.ciHigh < 0;
    return (
      `<tr${resolved ? ' class="resolved"' : ''}><td>${escapeHtml(r.run)}</td><td>${escapeHtml(r.metric)}</td><td class="num">${r.n}</td>` +
      `<td class="num">${fmt(r.baselineMean)}</td><td class="num">${fmt(r.runMean)}</td>` +
      `<td class="num ${r.meanDelta > 0 ? 'pos' : r.meanDelta < 0 ? 'neg' : ''}">${Number.isFinite(r.meanDelta) ? signed(r.meanDelta) : ''}</td>` +
      `<td class="num">[${fmt(r.ciLow)}, ${fmt(r.ciHigh)}]</td><td class="num">${fmtP(r.p)}${r.pMethod === 'monte-carlo' ? '<span class="note"> (MC)</span>' : ''}</td>` +
      `<td class="num">${fmtP(r.pHolm)}</td><td class="num">${r.questionsFor80Power ?? '–'}</td>` +
      `<td class="num">${r.answerChanged}</td><td class="num">${leftOut}</td></tr>`
    );
  });
  return (
    `<table class="paired"><thead><tr>${head.map((h, i) => `<th${i >= 2 ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>` +
    `<p class="note">Δ = run − ${escapeHtml(c.baseline)} on the questions both answered (metric points, 0–100). 95% CI: paired bootstrap, questions resampled jointly (${c.method.resamples} resamples, seed ${c.method.seed}). ` +
    `p: two-sided paired sign-flip randomisation test (exact up to ${c.method.exactLimit} non-zero deltas, else ${c.method.permutations} seeded flips, marked MC); Holm-adjusted over the ${c.rows.length} rows of this comparison. ` +
    'Questions for 80% power: how many paired questions a test at two-sided α = 0.05 would need to detect the observed Δ, from the SD of the per-question deltas (normal approximation, at least 6); – when Δ = 0 or there is no spread. ' +
    '"Answer changed": paired questions whose output text differs (whitespace aside). "Left out": questions failed in one run or present in only one.</p>'
  );
}

/** The per-group paired deltas (`--group-by`): one table per field, Holm across its groups. */
function groupsSection(c: Comparison): string {
  if (!c.groups || !c.groupBy) return '';
  const head = ['run', 'metric', 'group', 'n', 'baseline', 'run', 'Δ', '95% CI', 'p', 'p (Holm, across groups)'];
  const tables = c.groupBy.map((field) => {
    const rows = c.groups!.filter((g) => g.field === field).map((r) => {
      const resolved = r.ciLow > 0 || r.ciHigh < 0;
      return (
        `<tr${resolved ? ' class="resolved"' : ''}><td>${escapeHtml(r.run)}</td><td>${escapeHtml(r.metric)}</td><td>${escapeHtml(r.value)}</td><td class="num">${r.n}</td>` +
        `<td class="num">${fmt(r.baselineMean)}</td><td class="num">${fmt(r.runMean)}</td>` +
        `<td class="num ${r.meanDelta > 0 ? 'pos' : r.meanDelta < 0 ? 'neg' : ''}">${Number.isFinite(r.meanDelta) ? signed(r.meanDelta) : ''}</td>` +
        `<td class="num">[${fmt(r.ciLow)}, ${fmt(r.ciHigh)}]</td><td class="num">${fmtP(r.p)}${r.pMethod === 'monte-carlo' ? '<span class="note"> (MC)</span>' : ''}</td><td class="num">${fmtP(r.pHolm)}</td></tr>`
      );
    });
    return `<h3>By ${escapeHtml(field)}</h3><table class="paired groups" data-field="${escapeHtml(field)}"><thead><tr>${head.map((h, i) => `<th${i >= 3 ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
  });
  return (
    '<h2>Paired deltas by group</h2>' + tables.join('\n') +
    '<p class="note">The paired table restricted to each group\'s questions (a question\'s group as its row recorded it with <code>groupBy</code>, or derived from the row for <code>kind</code> and <code>label</code>). p (Holm): adjusted across the groups of the field, separately for each run and metric. A metric no question of a group has is left out of that group.</p>'
  );
}

function answerCell(c: Comparison, run: ComparedRun, q: Comparison['questions'][number], traceKey: string | undefined): string {
  const a = q.answers[run.name];
  if (!a) return '<td class="answer note">not in this run</td>';
  const text = a.error ? `[error] ${a.error}` : a.output + (a.answer !== undefined && a.answer !== a.output ? `\n(short answer: ${a.answer})` : '');
  const hits = a.hits && a.hits.length > 0
    ? `<span class="scores">DQ hits ${a.hits.filter(Boolean).length}/${a.hits.length}: ${a.hits.map((h, i) => `<span class="${h ? 'hit' : 'miss'}" title="${escapeHtml(q.dqs?.[i]?.question ?? '')}">${h ? '✓' : '✗'}</span>`).join(' ')}</span>`
    : '';
  const scores = `<span class="scores">${c.metrics.map((m) => `${escapeHtml(m)} ${fmt(a.metrics[m])}`).join(' · ')}</span>`;
  const traceUrl = mlflowTraceUrl(run, q.id);
  const links = [
    traceKey ? `<button class="trace-btn" type="button" data-trace="${escapeHtml(traceKey)}">trace</button>` : '',
    traceUrl ? `<a href="${escapeHtml(traceUrl)}">MLflow trace</a>` : '',
  ].filter(Boolean).join(' ');
  return `<td class="answer${a.error ? ' error' : ''}">${escapeHtml(text)}${hits}${scores}${trialsAnswerHtml(a, c.metrics)}${links ? `<span class="scores">${links}</span>` : ''}</td>`;
}

function sideBySideTable(c: Comparison, traceKeys: ReadonlyMap<string, ReadonlySet<string>>): string {
  const others = c.runs.filter((r) => r.name !== c.baseline);
  const ordered = [c.runs.find((r) => r.name === c.baseline)!, ...others];
  const deltaCols = others.flatMap((run) => c.metrics.map((metric) => ({ run, metric })));
  const head = [
    '<th>id</th><th>question</th>',
    c.questions.some((q) => q.dqs) ? '<th>gold disambiguations</th>' : '',
    ...ordered.map((r) => `<th>${escapeHtml(r.name)}${r.name === c.baseline ? ' (baseline)' : ''}</th>`),
    ...deltaCols.map(({ run, metric }) => `<th class="num">Δ ${escapeHtml(metric)}${others.length > 1 ? ` ${escapeHtml(run.name)}` : ''}</th>`),
  ].join('');
  const hasGold = c.questions.some((q) => q.dqs);
  const rows = c.questions.map((q) => {
    const base = q.answers[c.baseline];
    const deltas = deltaCols.map(({ run, metric }) => {
      const a = q.answers[run.name];
      const vb = base && !base.error ? base.metrics[metric] : undefined;
      const vr = a && !a.error ? a.metrics[metric] : undefined;
      if (vb === undefined || vr === undefined) return '<td class="num" data-v=""></td>';
      const d = vr - vb;
      return `<td class="num ${d > 0 ? 'pos' : d < 0 ? 'neg' : ''}" data-v="${d}">${signed(d)}</td>`;
    });
    const gold = q.dqs ? q.dqs.map((d) => `• ${escapeHtml(d.question)} → ${escapeHtml(d.shortAnswers.join(' | '))}`).join('\n') : '';
    const classes = [q.answerChanged ? 'changed' : '', ordered.some((r) => q.answers[r.name]?.error) ? 'error' : ''].filter(Boolean).join(' ');
    return (
      `<tr id="ex-${escapeHtml(q.id)}" data-id="${escapeHtml(q.id)}"${classes ? ` class="${classes}"` : ''}>` +
      `<td>${escapeHtml(q.id)}</td><td class="text">${escapeHtml(q.question)}</td>` +
      (hasGold ? `<td class="text">${gold}</td>` : '') +
      ordered.map((r) => answerCell(c, r, q, traceKeys.get(r.name)?.has(q.id) ? `${r.key}/${q.id}` : undefined)).join('') +
      deltas.join('') +
      '</tr>'
    );
  });
  const changed = c.questions.filter((q) => q.answerChanged).length;
  return (
    `<div class="examples-block"><div class="controls"><input type="search" placeholder="filter questions (any column)" aria-label="filter questions">` +
    `<label><input type="checkbox" class="changed-only"> answer changed (${changed})</label>` +
    `<label><input type="checkbox" class="errors-only"> errors</label><span class="count"></span></div>` +
    `<table class="examples side-by-side"><thead><tr>${head}</tr></thead><tbody>${rows.join('\n')}</tbody></table></div>` +
    '<p class="note">Click a Δ column to sort by it. ✓/✗: STR-EM hit per gold disambiguation (a short answer found in the output, SQuAD-normalised).</p>'
  );
}

export function renderComparisonReport(c: Comparison, options: ComparisonReportOptions = {}): string {
  const title = options.title ?? `ambiqa comparison: ${c.runs.filter((r) => r.name !== c.baseline).map((r) => r.name).join(', ')} vs ${c.baseline}`;
  const generatedAt = options.generatedAt ?? new Date().toISOString();
  const mode = options.traceMode ?? 'compact';
  const max = options.maxMessageChars ?? 4000;
  const data: Record<string, Trace> = {};
  const traceKeys = new Map<string, Set<string>>();
  if (mode !== 'none' && options.traces) {
    for (const run of c.runs) {
      const keys = new Set<string>();
      for (const t of options.traces.get(run.name) ?? []) {
        data[`${run.key}/${t.questionId}`] = mode === 'full' ? t : compactTrace(t, max);
        keys.add(t.questionId);
      }
      traceKeys.set(run.name, keys);
    }
  }
  const notes = c.notes.length > 0 ? `<ul class="notes">${c.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : '';
  const comparisonLink = mlflowBase(c.mlflow?.runUrl) ? `<p>MLflow run of this comparison: <a href="${escapeHtml(c.mlflow!.runUrl!)}">${escapeHtml(c.mlflow!.runUrl!)}</a></p>` : '';
  const body = [
    header(title, [
      ['dataset', c.dataset],
      ['baseline', c.baseline],
      ['runs', String(c.runs.length)],
      ['questions', String(c.questions.length)],
      ['compared', c.createdAt],
    ], generatedAt),
    comparisonLink,
    '<h2>Runs</h2>', runsTable(c),
    '<h2>Paired deltas</h2>', pairedTable(c), notes,
    trialsSectionHtml(c),
    groupsSection(c),
    `<section class="figure" id="fig-paired-deltas">${figureDivHtml(comparisonFigure(c))}</section>`,
    '<h2>Question by question</h2>', sideBySideTable(c, traceKeys),
  ].join('\n');
  const scripts = Object.keys(data).length > 0 ? `<script type="application/json" id="ambiqa-traces">${jsonForScript(data)}</script>` : '';
  return redactHtml(page(title, body, scripts));
}

/** Render a comparison's report with the traces its runs' directories still hold, and write it. */
export function writeComparisonReport(c: Comparison, out: string, options: Omit<ComparisonReportOptions, 'traces'> = {}): string {
  const html = renderComparisonReport(c, { ...options, traces: options.traceMode === 'none' ? new Map() : loadComparisonTraces(c) });
  const abs = resolve(out);
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, html);
  return abs;
}
