/**
 * The report's view of metrics by group (`groupBy`, issue 46): a table per field, one row per
 * group with its questions and each metric's mean and 95% CI over that group's questions. The
 * figures are metrics.json's `groups`; `ambiqa report --group-by` computes those a run did not
 * record from its rows (src/metrics/groups.ts: `kind` and `label` derive from any row; other
 * fields need rows recorded with them), with the aggregate the run itself used.
 */
import { aggregate as aggregateRows } from '../metrics/example';
import { configDataset, groupMetrics, type GroupMetrics } from '../metrics/groups';
import { escapeHtml } from '../plots/export';
import type { RunData } from '../plots/types';
import { scoreValues, type ExampleResult, type MetricAggregate } from '../run-files';

export type RowsAggregate = (rows: ExampleResult[]) => Record<string, MetricAggregate>;

/** The metrics module's aggregate over rows (what `aggregateResults` of src/experiments does). */
export const defaultAggregate: RowsAggregate = (rows) => aggregateRows(rows.map((r) => ({ metrics: scoreValues(r), usage: r.usage }))).metrics;

/**
 * Fill in each run's `metrics.groups` for the `groupBy` fields it lacks, from its answered rows
 * (in memory: the run's files are not changed). Returns notes for runs that cannot show them.
 */
export function addReportGroups(runs: readonly RunData[], groupBy: readonly string[], aggregate: RowsAggregate = defaultAggregate): string[] {
  const notes: string[] = [];
  for (const run of runs) {
    if (!run.metrics) {
      notes.push(`${run.name}: no metrics.json, so no metrics by group`);
      continue;
    }
    const missing = groupBy.filter((f) => !run.metrics!.groups?.[f]);
    if (missing.length === 0) continue;
    const answered = run.results.filter((r) => r.error === undefined);
    if (answered.length === 0) continue;
    const computed = groupMetrics(answered, missing, aggregate, configDataset(run.config), `--group-by (run ${run.name})`);
    run.metrics.groups = { ...run.metrics.groups, ...computed };
  }
  return notes;
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '');

/** The tables of a run's metrics by group; empty when it has none. */
export function groupsSection(groups: GroupMetrics | undefined, heading = '<h2>Metrics by group</h2>'): string {
  const fields = Object.entries(groups ?? {});
  if (fields.length === 0) return '';
  const tables = fields.map(([field, byValue]) => {
    const metrics: string[] = [];
    for (const m of Object.values(byValue)) for (const name of Object.keys(m)) if (!metrics.includes(name)) metrics.push(name);
    const rows = Object.entries(byValue).map(([value, m]) => {
      const n = Math.max(0, ...Object.values(m).map((a) => a.n));
      const cells = metrics.map((name) => {
        const a = m[name];
        if (!a) return '<td class="num"></td>';
        const ci = a.ciLow !== a.ciHigh ? ` <span class="note">[${fmt(a.ciLow)}, ${fmt(a.ciHigh)}]</span>` : '';
        return `<td class="num">${fmt(a.mean)}${ci}</td>`;
      });
      return `<tr><td>${escapeHtml(value)}</td><td class="num">${n}</td>${cells.join('')}</tr>`;
    });
    const head = `<th>${escapeHtml(field)}</th><th class="num">n</th>${metrics.map((m) => `<th class="num">${escapeHtml(m)}</th>`).join('')}`;
    return `<table class="metrics groups" data-field="${escapeHtml(field)}"><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
  });
  return (
    heading +
    tables.join('\n') +
    '<p class="note">Each group\'s mean with its bootstrap 95% CI over that group\'s questions (the run\'s aggregate applied to the group); n: the group\'s answered questions. <code>(none)</code>: questions without the field.</p>'
  );
}
