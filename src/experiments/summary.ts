import type { GridAxis, GridPoint } from './grid';
import { formatValue } from './grid';
import type { RunMetrics } from '../run-files';

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
}

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

const usageColumns = ['llm_calls', 'cache_hits', 'prompt_tokens', 'completion_tokens', 'wall_seconds'] as const;

export function summaryMarkdown(axes: GridAxis[], rows: SummaryRow[]): string {
  const metrics = metricColumns(rows);
  const decisions = decisionColumns(rows);
  const header = [...axes.map((a) => a.label), 'n', ...metrics, ...decisions, ...usageColumns, 'status'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const m = r.metrics;
    const cells = [
      ...axes.map((a) => formatValue(r.point.values[a.label])),
      m ? String(m.n) : '',
      ...metrics.map((name) => {
        const a = m?.metrics[name];
        return a ? `${a.mean.toFixed(1)} [${a.ciLow.toFixed(1)}, ${a.ciHigh.toFixed(1)}]` : '';
      }),
      ...decisions.map((name) => {
        const v = m?.decisions?.[name];
        return v === undefined ? '' : v.toFixed(3);
      }),
      ...usageColumns.map((u) => (m ? formatNumber(m.usage[u]) : '')),
      r.status,
    ];
    lines.push(`| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

export function summaryCsv(axes: GridAxis[], rows: SummaryRow[]): string {
  const metrics = metricColumns(rows);
  const decisions = decisionColumns(rows);
  const header = [
    ...axes.map((a) => a.label),
    'n',
    ...metrics.flatMap((m) => [m, `${m}_ci_low`, `${m}_ci_high`]),
    ...decisions,
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
        return a ? [a.mean, a.ciLow, a.ciHigh] : ['', '', ''];
      }),
      ...decisions.map((name) => m?.decisions?.[name] ?? ''),
      ...usageColumns.map((u) => (m ? m.usage[u] : '')),
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
