/**
 * The metric registry: one entry per metric family, each exported by its family's file (which
 * cites the family's reference). Scoring an example (`scoreExample`), run aggregates, config
 * validation, the experiment bindings and `ambiqa score` all derive from this list; adding a
 * family is its file plus one line here. Order matters: it is the report order, and a family may
 * read the values of the families before it (DR reads D-F1 and ROUGE-Lsum).
 */
import type { DatasetName } from '../datasets/types';
import { AmbiqaError } from '../errors';
import { calibrationFamily } from './calibration';
import { disambigF1Family } from './disambig-f1';
import { drFamily } from './dr';
import { feverFamily } from './fever';
import { rougeFamily } from './rouge';
import type { MetricFamily } from './score';
import { squadFamily } from './squad';
import { strEmFamily } from './str-em';

export const metricFamilies: readonly MetricFamily[] = [squadFamily, strEmFamily, rougeFamily, disambigF1Family, drFamily, feverFamily, calibrationFamily];

/** A metric's name, e.g. `str_em`; checked against the registry (`isMetricName`). */
export type MetricName = string;

/** Every metric name, in report order. */
export const metricNames: readonly MetricName[] = metricFamilies.flatMap((f) => f.metrics);

/** The family that produces `metric`. */
export function familyOf(metric: string): MetricFamily | undefined {
  return metricFamilies.find((f) => f.metrics.includes(metric));
}

export function isMetricName(name: string): boolean {
  return familyOf(name) !== undefined;
}

/** Metrics that make sense for a dataset, in report order. */
export function metricsFor(dataset: DatasetName): MetricName[] {
  return metricFamilies.filter((f) => f.datasets.includes(dataset)).flatMap((f) => f.metrics);
}

/** Metrics computed when a run or `ambiqa score` names none. */
export function defaultMetrics(dataset: DatasetName): MetricName[] {
  return metricFamilies.filter((f) => f.datasets.includes(dataset)).flatMap((f) => f.defaults);
}

/** `metric` and, transitively, the metrics it requires, each once, requirements first. */
export function withRequirements(metrics: readonly string[]): string[] {
  const out: string[] = [];
  const visit = (m: string): void => {
    if (out.includes(m)) return;
    for (const r of familyOf(m)?.requires ?? []) visit(r);
    out.push(m);
  };
  metrics.forEach(visit);
  return out;
}

/** Metrics that cannot be computed without a D-F1 reader (D-F1, and DR through it). */
export const readerMetricNames: ReadonlySet<MetricName> = new Set(metricNames.filter((m) => withRequirements([m]).some((r) => familyOf(r)?.needsReader)));

/** Metrics that use the ROUGE-Lsum sentence splitter (ROUGE-Lsum, and DR through it). */
export const splitterMetricNames: ReadonlySet<MetricName> = new Set(metricNames.filter((m) => withRequirements([m]).some((r) => familyOf(r)?.splitsSentences?.includes(r))));

/** Check a metric list for a dataset; throws an AmbiqaError naming the bad one and the allowed ones. */
export function checkMetrics(dataset: DatasetName, names: readonly string[], option = '--metrics'): MetricName[] {
  const allowed = metricsFor(dataset);
  for (const name of names) {
    if (!allowed.includes(name)) {
      throw new AmbiqaError(`${option}: metric "${name}" is not available for ${dataset}`, `use some of: ${allowed.join(', ')}`);
    }
  }
  return [...new Set(names)];
}
