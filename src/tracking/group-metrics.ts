/**
 * Metrics by group (`metrics.json` `groups`, src/metrics/groups.ts) as MLflow metrics:
 * `group.<field>.<value>.<metric>` with `_ci_low` / `_ci_high`, and `group.<field>.<value>.n`
 * (the group's questions), e.g. `group.kind.disambiguated.str_em`. Field and value are made safe
 * for a key and kept apart by the dots: characters other than letters, digits, `_` and `-`
 * become `_` (a value `1.5` → `1_5`, `(none)` → `_none_`), each cut to 60 characters, and values
 * of one field that collide after that get `_2`, `_3`, … in their order. Values a group could not
 * compute (NaN) are left out, as the run's own are.
 */
import type { MetricAggregate } from '../run-files';
import type { Comparison } from '../run-files/comparison';

const MAX_SEGMENT = 60;

export function groupKeySegment(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, MAX_SEGMENT) || '_';
}

/** The safe key segment of each value of one field, distinct (see the module note). */
export function groupValueKeys(values: readonly string[]): string[] {
  const used = new Set<string>();
  return values.map((value) => {
    const base = groupKeySegment(value);
    let key = base;
    for (let i = 2; used.has(key); i++) key = `${base}_${i}`;
    used.add(key);
    return key;
  });
}

export function groupMetricsForMlflow(groups: Record<string, Record<string, Record<string, MetricAggregate>>> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  const put = (key: string, value: number) => {
    if (Number.isFinite(value)) out[key] = value;
  };
  for (const [field, byValue] of Object.entries(groups ?? {})) {
    const values = Object.keys(byValue);
    const keys = groupValueKeys(values);
    values.forEach((value, i) => {
      const prefix = `group.${groupKeySegment(field)}.${keys[i]}`;
      const metrics = Object.entries(byValue[value]);
      for (const [metric, a] of metrics) {
        put(`${prefix}.${metric}`, a.mean);
        put(`${prefix}.${metric}_ci_low`, a.ciLow);
        put(`${prefix}.${metric}_ci_high`, a.ciHigh);
      }
      if (metrics.length > 0) put(`${prefix}.n`, Math.max(...metrics.map(([, a]) => a.n)));
    });
  }
  return out;
}

/**
 * A comparison's per-group deltas as MLflow metrics of the comparison's run:
 * `group.<field>.<value>.delta.<metric>.<run>` with `.ci_low` / `.ci_high`, and
 * `group.<field>.<value>.p_holm.<metric>.<run>` (Holm across the field's groups), `<run>` the
 * run's metric-safe key as in the comparison's other metrics.
 */
export function groupComparisonMetrics(c: Comparison): Record<string, number> {
  const out: Record<string, number> = {};
  const runKey = new Map(c.runs.map((r) => [r.name, r.key]));
  const valueKeys = new Map<string, Map<string, string>>();
  for (const field of c.groupBy ?? []) {
    const values = [...new Set((c.groups ?? []).filter((g) => g.field === field).map((g) => g.value))];
    const keys = groupValueKeys(values);
    valueKeys.set(field, new Map(values.map((v, i) => [v, keys[i]])));
  }
  const put = (key: string, value: number | null) => {
    if (value !== null && Number.isFinite(value)) out[key] = value;
  };
  for (const g of c.groups ?? []) {
    const prefix = `group.${groupKeySegment(g.field)}.${valueKeys.get(g.field)?.get(g.value) ?? groupKeySegment(g.value)}`;
    const k = `${g.metric}.${runKey.get(g.run) ?? g.run}`;
    put(`${prefix}.delta.${k}`, g.meanDelta);
    put(`${prefix}.delta.${k}.ci_low`, g.ciLow);
    put(`${prefix}.delta.${k}.ci_high`, g.ciHigh);
    put(`${prefix}.p_holm.${k}`, g.pHolm);
    put(`${prefix}.n.${k}`, g.n);
  }
  return out;
}
