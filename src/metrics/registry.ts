/**
 * The metric registry: one entry per metric family, each exported by its family's file (which
 * cites the family's reference). Scoring an example (`scoreExample`), run aggregates, config
 * validation, the experiment bindings and `ambiqa score` all derive from this list; adding a
 * family is its file plus one line here. Order matters: it is the report order, and a family may
 * read the values of the families before it (DR reads D-F1 and ROUGE-Lsum).
 */
import type { DatasetName } from '../datasets/types';
import { AmbiqaError } from '../errors';
import { alternativeAnswersFamily } from './alternative-answers';
import { calibrationFamily } from './calibration';
import { disambigF1Family } from './disambig-f1';
import { drFamily } from './dr';
import { feverFamily } from './fever';
import { rougeFamily } from './rouge';
import { decideMetrics, type MetricCatalog, type MetricPlan } from './plan';
import type { MetricFamily } from './score';
import { squadFamily } from './squad';
import { strEmFamily } from './str-em';

const families = [squadFamily, alternativeAnswersFamily, strEmFamily, rougeFamily, disambigF1Family, drFamily, feverFamily, calibrationFamily] as const;

/** A metric's name, e.g. `str_em`: one of the names the registered families produce. */
export type MetricName = (typeof families)[number] extends infer F ? (F extends MetricFamily<infer N> ? N : never) : never;

// Each family names its metrics in its type (`MetricFamily<'em' | 'f1'>`). One declared as a
// plain `MetricFamily` would widen `MetricName` to `string`, and every check on it with it: that
// fails to compile here instead.
const metricNameIsLiteral: string extends MetricName ? never : true = true;
void metricNameIsLiteral;

export const metricFamilies: readonly MetricFamily<MetricName>[] = families;

/** Every metric name, in report order. */
export const metricNames: readonly MetricName[] = metricFamilies.flatMap((f) => f.metrics);

/** The family that produces `metric`. */
export function familyOf(metric: string): MetricFamily<MetricName> | undefined {
  return metricFamilies.find((f) => (f.metrics as readonly string[]).includes(metric));
}

export function isMetricName(name: string): name is MetricName {
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
export function withRequirements<N extends string>(metrics: readonly N[]): Array<N | MetricName> {
  const out: Array<N | MetricName> = [];
  const visit = (m: N | MetricName): void => {
    if (out.includes(m)) return;
    for (const r of familyOf(m)?.requires ?? []) if (isMetricName(r)) visit(r);
    out.push(m);
  };
  metrics.forEach(visit);
  return out;
}

/** Metrics that cannot be computed without a D-F1 reader (D-F1, and DR through it). */
export const readerMetricNames: ReadonlySet<string> = new Set<MetricName>(metricNames.filter((m) => withRequirements([m]).some((r) => familyOf(r)?.needsReader)));

/** Metrics that use the ROUGE-Lsum sentence splitter (ROUGE-Lsum, and DR through it). */
export const splitterMetricNames: ReadonlySet<string> = new Set<MetricName>(
  metricNames.filter((m) => withRequirements([m]).some((r) => (familyOf(r)?.splitsSentences as readonly string[] | undefined)?.includes(r))),
);

const registryCatalog: MetricCatalog<MetricName> = { defaultMetrics: (dataset) => defaultMetrics(dataset), readerMetrics: readerMetricNames, splitterMetrics: splitterMetricNames };

/** `decideMetrics` (plan.ts) with this registry's lists: what a run or `ambiqa score` computes. */
export function planMetrics<N extends string = MetricName>(dataset: DatasetName, options: { metrics?: readonly N[] | undefined; readerOff?: boolean } = {}): MetricPlan<N | MetricName> {
  return decideMetrics<N | MetricName>(dataset, options, registryCatalog);
}

/** Check a metric list for a dataset; throws an AmbiqaError naming the bad one and the allowed ones. */
export function checkMetrics(dataset: DatasetName, names: readonly string[], option = '--metrics'): MetricName[] {
  const allowed: readonly string[] = metricsFor(dataset);
  for (const name of names) {
    if (!allowed.includes(name)) {
      throw new AmbiqaError(`${option}: metric "${name}" is not available for ${dataset}`, `use some of: ${allowed.join(', ')}`);
    }
  }
  return [...new Set(names as readonly MetricName[])];
}
