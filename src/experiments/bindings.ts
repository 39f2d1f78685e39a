import type { DatasetName, Example } from '../datasets/types';
import type { LanguageModel } from '../llm/types';
import { AmbiqaError } from '../errors';
import { aggregate, defaultMetrics as metricDefaults, metricNames as allMetricNames, metricsFor, scoreExample, type DisambigReader, type ScoreOptions } from '../metrics/index';
import { LlmSpanReader } from '../metrics/disambig-f1';
import { defaultSentenceSplitter, type SentenceSplitter } from '../metrics/sentences';
import { createPipeline as createRegisteredPipeline, pipelineNames as registeredPipelineNames, pipelineOptionsSchema as registeredOptionsSchema } from '../pipelines/registry';
import type { Pipeline } from '../pipelines/types';
import type { MethodDecisions, PipelineName, Trace } from '../trace/types';
import type { ExampleResult, MetricAggregate } from './results';

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

/** Pipelines that cannot run without a retriever (checked before any model loads). */
export const retrievalPipelines: ReadonlySet<PipelineName> = new Set(['vanilla-rag', 'toc', 'verify-edit', 'diva', 'combo']);

export const metricNames: readonly string[] = allMetricNames;
export const defaultMetrics = (dataset: DatasetName): string[] => metricDefaults(dataset);
export const allowedMetrics = (dataset: DatasetName): string[] => metricsFor(dataset);

/** Metrics that need a reading-comprehension model (config `reader:`). */
export const readerMetrics: ReadonlySet<string> = new Set(['d_f1', 'dr']);

/** `reader: llm` (the run's model) or `reader: qa-onnx:<folder>` (an extractive QA model). */
export async function createReader(spec: string, llm: LanguageModel): Promise<DisambigReader> {
  if (spec === 'llm') return new LlmSpanReader(llm);
  if (spec.startsWith('qa-onnx:') && spec.length > 'qa-onnx:'.length) {
    const { OnnxQaReader } = await import('../metrics/qa-onnx-reader');
    return new OnnxQaReader(spec.slice('qa-onnx:'.length));
  }
  throw new AmbiqaError(`reader: ${JSON.stringify(spec)} is not a reader`, 'use `llm` or `qa-onnx:<folder>`');
}

/** Majority votes / n, for the accuracy–coverage AUC, from the trace of a self-consistency method. */
function consistencyOf(decisions: MethodDecisions | undefined): number | undefined {
  if (decisions && (decisions.kind === 'verify-edit' || decisions.kind === 'cot-sc')) return decisions.consistency;
  return undefined;
}

export function createScorer(
  dataset: DatasetName,
  names: string[],
  options: { reader?: DisambigReader } = {},
): (example: Example, output: { output: string; answer?: string; trace?: Trace }) => Promise<Record<string, number>> {
  let splitter: SentenceSplitter | undefined;
  return async (example, out) => {
    splitter ??= defaultSentenceSplitter();
    const consistency = consistencyOf(out.trace?.decisions);
    const scoreOptions: ScoreOptions = { splitter, ...(options.reader ? { reader: options.reader } : {}) };
    const scored = await scoreExample(
      dataset,
      example,
      { output: out.output, ...(out.answer !== undefined ? { answer: out.answer } : {}), ...(consistency !== undefined ? { consistency } : {}) },
      names,
      scoreOptions,
    );
    return scored.metrics;
  };
}

/** Means with seeded bootstrap 95% CIs (the same results always give the same intervals). */
export function aggregateResults(results: ExampleResult[]): Record<string, MetricAggregate> {
  return aggregate(results).metrics;
}
