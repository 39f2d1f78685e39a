import type { DatasetName, Example } from '../datasets/types';
import {
  aggregate,
  defaultMetrics as metricDefaults,
  metricNames as allMetricNames,
  metricsFor,
  planMetrics,
  readerMetricNames,
  scoreExample,
  type DisambigReader,
  type ScoreOptions,
} from '../metrics/index';
import { defaultSentenceSplitter, type SentenceSplitter } from '../metrics/sentences';
import {
  createPipeline as createRegisteredPipeline,
  pipelineNames as registeredPipelineNames,
  pipelineNeeds,
  pipelineOptionsSchema as registeredOptionsSchema,
} from '../pipelines/registry';
import type { Pipeline } from '../pipelines/types';
import type { PipelineName, Trace } from '../trace/types';
import { methodAnalysis } from '../metrics/methods';
import { scoreValues, type ExampleResult, type MetricAggregate, type QuestionScores } from '../run-files';

/**
 * What the runner needs from the pipeline and metric modules, in one narrow place: pipeline
 * names, option schemas and the factory; metric names per dataset, per-example scores and
 * aggregates with bootstrap confidence intervals.
 */

export const pipelineNames: readonly PipelineName[] = registeredPipelineNames;
export const pipelineOptionsSchema = registeredOptionsSchema;

export function createPipeline(name: PipelineName, options: Record<string, unknown>): Pipeline {
  return createRegisteredPipeline(name, options);
}

/** A pipeline that cannot run without a retriever (its registry entry's `needs`; checked before any model loads). */
export const requiresRetriever = (name: PipelineName): boolean => pipelineNeeds(name)?.retriever ?? false;
/** A pipeline that compares sentences with the MiniLM embedder (its registry entry's `needs`). */
export const requiresEmbedder = (name: PipelineName): boolean => pipelineNeeds(name)?.embedder ?? false;

export const metricNames: readonly string[] = allMetricNames;
export const defaultMetrics = (dataset: DatasetName): string[] => metricDefaults(dataset);
export const allowedMetrics = (dataset: DatasetName): string[] => metricsFor(dataset);

/** Metrics that need a reading-comprehension model (config `reader:`), from the metric registry. */
export const readerMetrics: ReadonlySet<string> = readerMetricNames;

/** Which of a run's metrics need the D-F1 reader (metrics/registry.ts decides). */
export const metricsNeedingReader = (dataset: DatasetName, names: readonly string[]): string[] => planMetrics(dataset, { metrics: names }).needReader;

/**
 * The confidence a prediction is ranked by for the accuracy–coverage AUC (e.g. a self-consistency
 * method's majority votes / n), as its method's registered analysis defines it.
 */
function consistencyOf(trace: Trace | undefined): number | undefined {
  return trace ? methodAnalysis(trace.decisions.kind)?.confidence?.(trace) : undefined;
}

/** The final answer's log-probability (`auc_logprob`'s ranking), as its method's registered analysis gives it. */
function answerLogprobOf(trace: Trace | undefined): number | undefined {
  return trace ? methodAnalysis(trace.decisions.kind)?.answerLogprob?.(trace) : undefined;
}

export interface RunScorer {
  /** Every score of the question with its reason and metadata (a row's `scores`). */
  score(example: Example, output: { output: string; answer?: string; trace?: Trace }): Promise<QuestionScores>;
  /** `metric.reader` and `metric.sentence_splitter` where the metrics use them (MLflow params). */
  settings: Record<string, string>;
}

export function createScorer(dataset: DatasetName, names: string[], options: { reader?: DisambigReader; splitter?: SentenceSplitter } = {}): RunScorer {
  const plan = planMetrics(dataset, { metrics: names });
  const splitter = plan.usesSplitter ? (options.splitter ?? defaultSentenceSplitter()) : undefined;
  const settings: Record<string, string> = {};
  if (plan.needReader.length > 0 && options.reader) settings['metric.reader'] = options.reader.name;
  if (splitter) settings['metric.sentence_splitter'] = splitter.name;
  return {
    settings,
    async score(example, out) {
      const consistency = consistencyOf(out.trace);
      const answerLogprob = answerLogprobOf(out.trace);
      const scoreOptions: ScoreOptions = { ...(splitter ? { splitter } : {}), ...(options.reader ? { reader: options.reader } : {}) };
      const scored = await scoreExample(
        dataset,
        example,
        {
          output: out.output,
          ...(out.answer !== undefined ? { answer: out.answer } : {}),
          ...(consistency !== undefined ? { consistency } : {}),
          ...(answerLogprob !== undefined ? { answerLogprob } : {}),
        },
        names,
        scoreOptions,
      );
      return scored.scores;
    },
  };
}

/** Means with seeded bootstrap 95% CIs (the same results always give the same intervals). */
export function aggregateResults(results: readonly ExampleResult[]): Record<string, MetricAggregate> {
  return aggregate(results.map((r) => ({ metrics: scoreValues(r), usage: r.usage }))).metrics;
}
