import type { GridAxis, GridPoint } from './grid';
import { formatValue } from './grid';
import type { MetricAggregate, RunMetrics } from '../run-files';
import type { PairedRow } from '../run-files/comparison';

/**
 * The table a sweep leaves on its parent run: one row per grid point, the swept values, each
 * metric's mean with its 95% CI, and the cost (calls, cache hits, tokens, seconds). Written as
 * Markdown (printed and attached), CSV (for spreadsheets and plots) and JSON.
 */
export interface SummaryRow {
  point: GridPoint;
  runDir: string;
  status: string;
  metrics: RunMetrics | null;
  /** This point's paired deltas against the sweep's reference point, one per metric. */
  paired?: PairedRow[];
  /** This point is the reference the others are compared with. */
  reference?: boolean;
  /** The point's exit status as `ambiqa run` would give it (docs/cli.md): 0 when every question was answered. */
  exitStatus?: number;
}

/** Metrics with a paired delta in any row, in first-seen order. */
export function pairedColumns(rows: SummaryRow[]): string[] {
  const names: string[] = [];
  for (const r of rows) for (const p of r.paired ?? []) if (!names.includes(p.metric)) names.push(p.metric);
  return names;
}

const fmtP = (p: number | null) => (p === null ? '' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

/** `+1.2 [−3.0, 5.1] p 0.62` (the reference point: `reference`). */
export function pairedCell(r: SummaryRow, metric: string): string {
  if (r.reference) return 'reference';
  const p = r.paired?.find((x) => x.metric === metric);
  if (!p || !Number.isFinite(p.meanDelta)) return '';
  return `${p.meanDelta > 0 ? '+' : ''}${p.meanDelta.toFixed(1)} [${p.ciLow.toFixed(1)}, ${p.ciHigh.toFixed(1)}] p ${fmtP(p.p)}${samplingNote(p)}`;
}

/** Under trials, the share of the per-question deltas' variance that is sampling: ` · sampling 84%`. */
function samplingNote(p: PairedRow): string {
  const share = p.trials?.samplingShare;
  return share === null || share === undefined ? '' : ` · sampling ${Math.round(100 * share)}%`;
}

/** A point's metric cell: `55.2 [50.1, 60.3]`, and under trials the pooled trial SD and the sampling share. */
function metricCell(a: MetricAggregate): string {
  const spread = a.trialSd !== undefined && Number.isFinite(a.trialSd) ? ` trial SD ${a.trialSd.toFixed(1)}` : '';
  const share = a.samplingShare !== undefined && Number.isFinite(a.samplingShare) ? ` sampling ${Math.round(100 * a.samplingShare)}%` : '';
  return `${a.mean.toFixed(1)} [${a.ciLow.toFixed(1)}, ${a.ciHigh.toFixed(1)}]${spread}${share}`;
}

/** Whether any point answered its questions several times (then the CSV has the trial columns). */
const anyTrials = (rows: SummaryRow[]): boolean => rows.some((r) => Object.values(r.metrics?.metrics ?? {}).some((a) => a.trials !== undefined) || (r.paired ?? []).some((p) => p.trials));

export function metricColumns(rows: SummaryRow[]): string[] {
  const names = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r.metrics?.metrics ?? {})) names.add(k);
  return [...names];
}

/** The decision statistics (`decision_*`) any row has, in first-seen order. */
export function decisionColumns(rows: SummaryRow[]): string[] {
  const names = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r.metrics?.decisions ?? {})) names.add(k);
  return [...names];
}

const baseUsageColumns = ['llm_calls', 'cache_hits', 'prompt_tokens', 'completion_tokens', 'wall_seconds'] as const;
type UsageColumn = keyof RunMetrics['usage'];

/** The usage columns; `cost_usd` when any row was priced. */
function usageColumnsOf(rows: SummaryRow[]): UsageColumn[] {
  return rows.some((r) => r.metrics?.usage.cost_usd !== undefined) ? [...baseUsageColumns, 'cost_usd'] : [...baseUsageColumns];
}

/** The graded judges any row has diagnostics for (`judges` in metrics.json), in first-seen order. */
export function judgeColumns(rows: SummaryRow[]): string[] {
  const names = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r.metrics?.judges ?? {})) names.add(k);
  return [...names];
}

export function summaryMarkdown(axes: GridAxis[], rows: SummaryRow[]): string {
  const metrics = metricColumns(rows);
  const decisions = decisionColumns(rows);
  const judges = judgeColumns(rows);
  const deltas = pairedColumns(rows);
  const usageColumns = usageColumnsOf(rows);
  const header = [...axes.map((a) => a.label), 'n', ...metrics, ...deltas.map((m) => `Δ ${m} vs reference [95% CI] p`), ...decisions, ...judges.map((j) => `judge ${j} AUC`), ...usageColumns, 'status'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const m = r.metrics;
    const cells = [
      ...axes.map((a) => formatValue(r.point.values[a.label])),
      m ? String(m.n) : '',
      ...metrics.map((name) => {
        const a = m?.metrics[name];
        return a ? metricCell(a) : '';
      }),
      ...deltas.map((name) => pairedCell(r, name)),
      ...decisions.map((name) => {
        const v = m?.decisions?.[name];
        return v === undefined ? '' : v.toFixed(3);
      }),
      // A judge's AUC with its CI; `*` marks a judge whose threshold sweep cannot show an effect.
      ...judges.map((name) => {
        const d = m?.judges?.[name];
        if (!d || d.auc === null) return d ? `n/a (${d.labelled} labelled)*` : '';
        const ci = d.aucCiLow !== null && d.aucCiHigh !== null ? ` [${d.aucCiLow.toFixed(2)}, ${d.aucCiHigh.toFixed(2)}]` : '';
        return `${d.auc.toFixed(2)}${ci}${d.separates ? '' : '*'}`;
      }),
      ...usageColumns.map((u) => (m && m.usage[u] !== undefined ? (u === 'cost_usd' ? m.usage[u]!.toFixed(4) : formatNumber(m.usage[u]!)) : '')),
      r.status,
    ];
    lines.push(`| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`);
  }
  if (judges.length > 0) lines.push('', '`*`: the judge does not separate right from wrong on that run (its AUC CI contains 0.5, or too few judgments are labelled): a threshold sweep of it cannot show an effect.');
  return lines.join('\n') + '\n';
}

const finiteOr = (x: number | undefined): number | string => (x !== undefined && Number.isFinite(x) ? x : '');

export function summaryCsv(axes: GridAxis[], rows: SummaryRow[]): string {
  const metrics = metricColumns(rows);
  const trials = anyTrials(rows);
  const decisions = decisionColumns(rows);
  const usageColumns = usageColumnsOf(rows);
  const header = [
    ...axes.map((a) => a.label),
    'n',
    ...metrics.flatMap((m) => [m, `${m}_ci_low`, `${m}_ci_high`, ...(trials ? [`${m}_trials`, `${m}_trial_sd`, `${m}_sampling_share`] : [])]),
    ...pairedColumns(rows).flatMap((m) => [`delta_${m}`, `delta_${m}_ci_low`, `delta_${m}_ci_high`, `p_${m}`, `p_holm_${m}`, `n_paired_${m}`, ...(trials ? [`delta_${m}_sampling_share`] : [])]),
    ...decisions,
    ...judgeColumns(rows).flatMap((j) => ['auc', 'auc_ci_low', 'auc_ci_high', 'labelled', 'separates'].map((f) => `judge.${j}.${f}`)),
    ...usageColumns,
    'status',
    'run_dir',
  ];
  const lines = [header.map(csvCell).join(',')];
  for (const r of rows) {
    const m = r.metrics;
    const cells: Array<string | number> = [
      ...axes.map((a) => formatValue(r.point.values[a.label])),
      m ? m.n : '',
      ...metrics.flatMap((name): Array<string | number> => {
        const a = m?.metrics[name];
        const cells = a ? [a.mean, a.ciLow, a.ciHigh] : ['', '', ''];
        return trials ? [...cells, a?.trials ?? '', finiteOr(a?.trialSd), finiteOr(a?.samplingShare)] : cells;
      }),
      ...pairedColumns(rows).flatMap((name): Array<string | number> => {
        if (r.reference) return [0, 0, 0, '', '', '', ...(trials ? [''] : [])];
        const p = r.paired?.find((x) => x.metric === name);
        const cells = p ? [p.meanDelta, p.ciLow, p.ciHigh, p.p ?? '', p.pHolm ?? '', p.n] : ['', '', '', '', '', ''];
        return trials ? [...cells, p?.trials?.samplingShare ?? ''] : cells;
      }),
      ...decisions.map((name) => m?.decisions?.[name] ?? ''),
      ...judgeColumns(rows).flatMap((name): Array<string | number> => {
        const d = m?.judges?.[name];
        return d ? [d.auc ?? '', d.aucCiLow ?? '', d.aucCiHigh ?? '', d.labelled, d.separates ? 1 : 0] : ['', '', '', '', ''];
      }),
      ...usageColumns.map((u) => (m ? (m.usage[u] ?? '') : '')),
      r.status,
      r.runDir,
    ];
    lines.push(cells.map(csvCell).join(','));
  }
  return lines.join('\n') + '\n';
}

function csvCell(value: string | number): string {
  const s = String(value);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function formatNumber(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2);
}
