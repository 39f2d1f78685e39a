import type { DatasetName, Example } from '../datasets/types';
import {
  aggregate,
  calibrationFamily,
  checkMetrics,
  defaultMetrics as metricDefaults,
  metricNames as allMetricNames,
  metricsFor,
  planMetrics,
  readerMetricNames,
  scoreExample,
  withRequirements,
  type DisambigReader,
  type ScoreOptions,
} from '../metrics/index';
import { defaultSentenceSplitter, type SentenceSplitter } from '../metrics/sentences';
import {
  createPipeline as createRegisteredPipeline,
  methodCatalog,
  pipelineNames as registeredPipelineNames,
  pipelineNeeds,
  pipelineOptionsSchema as registeredOptionsSchema,
} from '../pipelines/registry';
import type { Pipeline } from '../pipelines/types';
import type { PipelineName, Trace } from '../trace/types';
import type { MethodAnalyses } from '../metrics/methods';
import { scoreValues, type ExampleResult, type MetricAggregate, type QuestionScores } from '../run-files';

/**
 * What the runner needs from the pipeline and metric modules, in one narrow place: pipeline
 * names, option schemas and the factory; metric names per dataset, per-example scores and
 * aggregates with bootstrap confidence intervals.
 */

export const pipelineNames: readonly PipelineName[] = registeredPipelineNames;
/** The method catalog of every registered pipeline (analysis, figures, decisions schemas), passed down where it is needed. */
export { methodCatalog };
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

/** Check metric names for a dataset: an AmbiqaError naming `option`, the bad name and the allowed ones. */
export const checkMetricNames = (dataset: DatasetName, names: readonly string[], option: string): string[] => checkMetrics(dataset, names, option);

/** `metric` and the metrics it reads (DR reads D-F1 and ROUGE-Lsum), requirements first. */
export const metricWithRequirements = (metric: string): string[] => withRequirements([metric]);

/** Metrics that rank by a method's signal (`confidence`, `answerLogprob`): the only ones that read traces. */
export const signalMetrics: ReadonlySet<string> = new Set<string>(calibrationFamily.metrics);

/** What a question's answer gives the scorer: its text, short answer and the method's signals (`PipelineOutput`). */
export interface ScoredOutput {
  output: string;
  answer?: string;
  /** The confidence the accuracy–coverage AUC (`auc`) ranks by, in [0, 1] (e.g. a self-consistency method's vote share). */
  confidence?: number;
  /** The final answer's log-probability, `auc_logprob`'s ranking. */
  answerLogprob?: number;
}

/**
 * A stored row's signals: its own `confidence` / `answerLogprob`, else (rows written before rows
 * carried them) read back from its trace by its method's analysis in `methods`.
 */
export function storedSignals(row: Pick<ExampleResult, 'confidence' | 'answerLogprob'>, trace: Trace | undefined, methods: MethodAnalyses): Pick<ScoredOutput, 'confidence' | 'answerLogprob'> {
  const analysis = trace ? methods.analysis(trace.decisions.kind) : undefined;
  const confidence = row.confidence ?? (trace ? analysis?.confidence?.(trace) : undefined);
  const answerLogprob = row.answerLogprob ?? (trace ? analysis?.answerLogprob?.(trace) : undefined);
  return { ...(confidence !== undefined ? { confidence } : {}), ...(answerLogprob !== undefined ? { answerLogprob } : {}) };
}

export interface RunScorer {
  /** Every score of the question with its reason and metadata (a row's `scores`). */
  score(example: Example, output: ScoredOutput): Promise<QuestionScores>;
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
      // The method's signals come with its output (PipelineOutput), not from a registry.
      const consistency = out.confidence;
      const answerLogprob = out.answerLogprob;
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

/**
 * Means with seeded bootstrap 95% CIs (the same results always give the same intervals). Pass
 * every row of the run: under `trials: k` the rows of a question (same id, `trial` 0 … k−1) are
 * one question — per-question means, a two-level bootstrap, `trials`/`trialSd`/`samplingShare`
 * (src/metrics/trials.ts); rows without trials give the same numbers as ever.
 */
export function aggregateResults(results: readonly ExampleResult[]): Record<string, MetricAggregate> {
  return aggregate(results.map((r) => ({ id: r.id, ...(r.trial !== undefined ? { trial: r.trial } : {}), metrics: scoreValues(r), usage: r.usage }))).metrics;
}
