/**
 * Metrics by group (`groupBy`, issue 46): a run's metrics over each group of its questions (e.g.
 * `kind: ambiguous | disambiguated` under ASQA `questions: mixed`), each with its bootstrap CI
 * over that group's questions, and a comparison's paired deltas per group with Holm's adjustment
 * across the groups of a field.
 *
 * A row records its groups when it is built (`ExampleResult.groups`). For rows recorded before
 * `groupBy` existed, the fields a row itself determines are derived from it: `kind` from its
 * target (`sourceId` marks an ASQA disambiguated question; rows without a target, from the
 * `<aq id>.dq<k>` id a DQ is given) and `label` from its target. Any other field needs the rows
 * to have been recorded with it, and a field no row has is refused naming it.
 */
import { NO_GROUP, questionKind } from '../datasets/groups';
import { AmbiqaError } from '../errors';
import { scoreValues, type ExampleResult, type MetricAggregate, type RunMetrics } from '../run-files';
import type { GroupPairedRow } from '../run-files/comparison';
import { holm, pairedDelta, type PairedTestOptions } from './paired';

export type GroupMetrics = NonNullable<RunMetrics['groups']>;
type Aggregate = (rows: ExampleResult[]) => Record<string, MetricAggregate>;

/** A DQ's id as the ASQA loader gives it (src/datasets/asqa.ts). */
const DQ_ID = /\.dq\d+$/;

/** The fields derivable from any row (see the module note). */
export const DERIVED_GROUP_FIELDS: readonly string[] = ['kind', 'label'];

/**
 * The row's group under `field`: the one it recorded, else one derived from the row, else
 * undefined (the row cannot say). `dataset` is the run's dataset name (its config's).
 */
export function rowGroup(row: ExampleResult, field: string, dataset: string | undefined): string | undefined {
  const own = row.groups?.[field];
  if (own !== undefined) return own;
  if (field === 'kind') {
    const t = row.target;
    // AmbigNQ's kind is in its gold pairs, which only a format-3 row carries.
    if (!t && dataset === 'ambignq') return undefined;
    const sourceId = t?.sourceId ?? (DQ_ID.test(row.id) ? row.id.replace(DQ_ID, '') : undefined);
    return questionKind({ dataset, sourceId, qaPairs: t?.qaPairs ?? [] });
  }
  if (field === 'label') return row.target?.label;
  return undefined;
}

/** The fields the rows recorded (`groups`) plus the derivable ones, for messages. */
function fieldsOfRows(rows: readonly ExampleResult[], dataset: string | undefined): string[] {
  const names = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r.groups ?? {})) names.add(k);
  for (const f of DERIVED_GROUP_FIELDS) if (rows.some((r) => rowGroup(r, f, dataset) !== undefined)) names.add(f);
  return [...names];
}

/**
 * Each row's group under `field` (`NO_GROUP` for a row without it), refusing a field that no row
 * has: `where` names the option (`--group-by`) and the run.
 */
export function rowGroups(rows: readonly ExampleResult[], field: string, dataset: string | undefined, where: string): string[] {
  const values = rows.map((r) => rowGroup(r, field, dataset));
  if (rows.length > 0 && values.every((v) => v === undefined)) {
    const available = fieldsOfRows(rows, dataset);
    throw new AmbiqaError(
      `${where}: the rows carry no '${field}' group (recorded without groupBy: [${field}]) and it cannot be derived from them; available: ${available.join(', ') || 'none'}`,
      `a run records a field of its questions with --group-by ${field} (groupBy: [${field}] in its config); kind (ASQA, AmbigNQ) and label (FEVER) are read from any run's rows`,
    );
  }
  return values.map((v) => v ?? NO_GROUP);
}

/** Group values in a stable order: alphabetical, `NO_GROUP` last. */
function ordered(values: Iterable<string>): string[] {
  return [...new Set(values)].sort((a, b) => (a === NO_GROUP ? 1 : b === NO_GROUP ? -1 : a.localeCompare(b)));
}

/**
 * The metrics of each group: field → value → metric → aggregate, with `aggregate` the run's own
 * (so the groups' figures are computed exactly as the run's, trials included). `rows`: the
 * answered rows (a failed question has no metric, as in the run's figures).
 */
export function groupMetrics(rows: readonly ExampleResult[], fields: readonly string[], aggregate: Aggregate, dataset?: string, where = 'groupBy'): GroupMetrics {
  const out: GroupMetrics = {};
  for (const field of fields) {
    const values = rowGroups(rows, field, dataset, where);
    const byValue: Record<string, Record<string, MetricAggregate>> = {};
    for (const value of ordered(values)) {
      const members = rows.filter((_, i) => values[i] === value);
      byValue[value] = aggregate(members);
    }
    out[field] = byValue;
  }
  return out;
}

const isScore = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The mean of each metric over a question's rows (its trials; one row without trials). */
function perQuestion(rows: readonly ExampleResult[]): Map<string, { row: ExampleResult; values: Record<string, number> }> {
  const byId = new Map<string, ExampleResult[]>();
  for (const r of rows) if (!r.error) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
  const out = new Map<string, { row: ExampleResult; values: Record<string, number> }>();
  for (const [id, list] of byId) {
    const sums = new Map<string, { sum: number; n: number }>();
    for (const r of list) {
      for (const [k, v] of Object.entries(scoreValues(r))) {
        if (!isScore(v)) continue;
        const s = sums.get(k) ?? { sum: 0, n: 0 };
        sums.set(k, { sum: s.sum + v, n: s.n + 1 });
      }
    }
    out.set(id, { row: list[0], values: Object.fromEntries([...sums].map(([k, s]) => [k, s.sum / s.n])) });
  }
  return out;
}

export interface GroupCompareRun {
  name: string;
  results: readonly ExampleResult[];
  /** The run's dataset name (its config's), for groups derived from rows. */
  dataset?: string;
}

/**
 * Paired deltas per group: for each compared run, metric, field and group, the questions of that
 * group both runs answered (the group read from the baseline's row, else the run's), their mean
 * delta with its paired bootstrap CI, the sign-flip p, and that p Holm-adjusted across the groups
 * of the field (one family per run, metric and field). A question answered over several trials
 * counts once, with its mean over them.
 */
export function groupPairedRows(
  runs: readonly GroupCompareRun[],
  baseline: GroupCompareRun,
  metrics: readonly string[],
  fields: readonly string[],
  options: PairedTestOptions = {},
): GroupPairedRow[] {
  const base = perQuestion(baseline.results);
  const rows: GroupPairedRow[] = [];
  // Check every field against every run first, so a field no run has is refused before any work.
  const groupOf = new Map<string, Map<string, string>>();
  for (const field of fields) {
    const map = new Map<string, string>();
    for (const run of [baseline, ...runs.filter((r) => r.name !== baseline.name)]) {
      const values = rowGroups(run.results, field, run.dataset, `--group-by ${field} (run ${run.name})`);
      run.results.forEach((r, i) => {
        if (!map.has(r.id) || map.get(r.id) === NO_GROUP) map.set(r.id, values[i]);
      });
    }
    groupOf.set(field, map);
  }
  for (const run of runs) {
    if (run.name === baseline.name) continue;
    const other = perQuestion(run.results);
    const paired = [...base].filter(([id]) => other.has(id)).map(([id, b]) => ({ id, b: b.values, r: other.get(id)!.values }));
    for (const metric of metrics) {
      for (const field of fields) {
        const groups = groupOf.get(field)!;
        const family: GroupPairedRow[] = [];
        for (const value of ordered(paired.map((q) => groups.get(q.id) ?? NO_GROUP))) {
          const deltas: number[] = [];
          let sumBase = 0;
          let sumRun = 0;
          for (const q of paired) {
            if ((groups.get(q.id) ?? NO_GROUP) !== value) continue;
            const [vb, vr] = [q.b[metric], q.r[metric]];
            if (!isScore(vb) || !isScore(vr)) continue;
            deltas.push(vr - vb);
            sumBase += vb;
            sumRun += vr;
          }
          // A metric no question of the group has (ROUGE of a DQ, which has no long answer) has no row.
          if (deltas.length === 0) continue;
          const stats = pairedDelta(deltas, options);
          family.push({
            field,
            value,
            run: run.name,
            baseline: baseline.name,
            metric,
            n: stats.n,
            baselineMean: deltas.length ? sumBase / deltas.length : NaN,
            runMean: deltas.length ? sumRun / deltas.length : NaN,
            meanDelta: stats.meanDelta,
            ciLow: stats.ciLow,
            ciHigh: stats.ciHigh,
            p: Number.isNaN(stats.p) ? null : stats.p,
            pMethod: stats.pMethod,
            pHolm: null,
            questionsFor80Power: stats.questionsFor80Power,
          });
        }
        const adjusted = holm(family.map((r) => r.p ?? NaN));
        family.forEach((r, i) => (r.pHolm = Number.isNaN(adjusted[i]) ? null : adjusted[i]));
        rows.push(...family);
      }
    }
  }
  return rows;
}

/**
 * The fields a comparison groups by when not told: those every compared run's rows recorded
 * (`groups`), in the baseline's order; none for runs recorded without `groupBy`.
 */
export function recordedGroupFields(runs: readonly GroupCompareRun[]): string[] {
  const fieldsOf = (run: GroupCompareRun) => {
    const names: string[] = [];
    for (const r of run.results) for (const k of Object.keys(r.groups ?? {})) if (!names.includes(k)) names.push(k);
    return names;
  };
  const [first, ...rest] = runs.map(fieldsOf);
  return (first ?? []).filter((f) => rest.every((names) => names.includes(f)));
}

/** A compared run as `comparisonGroups` reads it (src/metrics/compare.ts's input). */
interface ComparedInput {
  name: string;
  config: Record<string, unknown>;
  results: readonly ExampleResult[];
}

/** The dataset name of a run's config (`dataset.name`), which groups derived from rows need. */
export function configDataset(config: Record<string, unknown>): string | undefined {
  const d = config.dataset;
  if (typeof d === 'string') return d;
  const name = (d as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}

/**
 * A comparison's `groupBy` and `groups` (spread into it): the fields asked for, else those every
 * run's rows recorded; nothing when there are none.
 */
export function comparisonGroups(
  runs: readonly ComparedInput[],
  baseline: ComparedInput,
  metrics: readonly string[],
  groupBy: readonly string[] | undefined,
  options: PairedTestOptions,
): { groupBy?: string[]; groups?: GroupPairedRow[] } {
  const inputs = runs.map((r) => ({ name: r.name, results: r.results, dataset: configDataset(r.config) }));
  const fields = groupBy && groupBy.length > 0 ? [...groupBy] : recordedGroupFields(inputs);
  if (fields.length === 0) return {};
  const base = inputs[runs.indexOf(baseline)];
  return { groupBy: fields, groups: groupPairedRows(inputs, base, metrics, fields, options) };
}
