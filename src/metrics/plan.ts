import type { DatasetName } from '../datasets/types';

/**
 * Which metrics a run computes and which of them need a reader, decided in one place for the
 * config check, the run's scorer and `ambiqa score`. Apart from the registry (registry.ts passes
 * its lists; the config check passes its `ConfigRegistry`'s), so that checking a config loads no
 * metric family.
 */

/** What a run computes: its metrics, and which of them need a reader or the sentence splitter. */
export interface MetricPlan<N extends string> {
  /** The metrics named, as named; else the dataset's defaults. */
  metrics: N[];
  /** Those that cannot be computed without a D-F1 reader: a run with any needs `reader:`. */
  needReader: N[];
  /** Whether any splits sentences (ROUGE-Lsum, DR): the run records `metric.sentence_splitter`. */
  usesSplitter: boolean;
}

/** The registry's lists that the decision reads. */
export interface MetricCatalog<N extends string> {
  /** Metrics computed when none are named. */
  defaultMetrics(dataset: DatasetName): readonly N[];
  /** Metrics that need a D-F1 reader (D-F1, and DR through it). */
  readerMetrics?: ReadonlySet<string>;
  /** Metrics that split sentences (ROUGE-Lsum, and DR through it). */
  splitterMetrics?: ReadonlySet<string>;
}

/**
 * The metrics named (as named: checking them is the caller's, with its own messages), else the
 * dataset's defaults — without those that need a reader when the reader is off (`reader: none`,
 * `--reader none`): a default is not worth failing a run for, while a metric asked for by name is.
 */
export function decideMetrics<N extends string>(
  dataset: DatasetName,
  options: { metrics?: readonly N[] | undefined; readerOff?: boolean },
  catalog: MetricCatalog<N>,
): MetricPlan<N> {
  const readers = catalog.readerMetrics ?? new Set<string>();
  const metrics = options.metrics ? [...options.metrics] : catalog.defaultMetrics(dataset).filter((m) => !options.readerOff || !readers.has(m));
  return {
    metrics,
    needReader: metrics.filter((m) => readers.has(m)),
    usesSplitter: metrics.some((m) => catalog.splitterMetrics?.has(m) ?? false),
  };
}
