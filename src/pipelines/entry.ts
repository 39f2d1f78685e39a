/**
 * One pipeline's registry entry: everything the rest of the code needs to know about it (its
 * name, a one-line description for `--help` and the docs, the options schema, what it needs from
 * the run, the factory, and its method's analysis: the judges, decision statistics and figures
 * its traces make). Each pipeline folder exports its entries; `registry.ts` lists them,
 * and config validation, the runner's retriever/embedder checks, CLI help and the `PipelineName`
 * type all derive from that list. A notebook or another project adds its own with
 * `registerPipeline(definePipeline({...}))`.
 */
import type { z } from 'zod';
import type { MethodAnalysis } from '../metrics/methods';
import type { MethodFigures } from '../plots/methods';
import type { Pipeline } from './types';

/** What a pipeline needs the runner to build before the first question (checked before any model loads). */
export interface PipelineNeeds {
  /** It retrieves passages: a config without `retriever:` is refused. */
  retriever: boolean;
  /** It compares sentences with MiniLM (kNN demos aside, which every pipeline with nShots > 0 needs). */
  embedder: boolean;
}

export interface PipelineEntry<N extends string = string, S extends z.ZodType = z.ZodType> {
  readonly name: N;
  /** One line, shown by `ambiqa run --help` and in docs/pipelines.md. */
  readonly description: string;
  /** Options with defaults and ranges; a config's `pipeline.options` is checked against it before any model call. */
  readonly optionsSchema: S;
  readonly needs: PipelineNeeds;
  /** Builds the pipeline from options already validated by `optionsSchema`. */
  create(options: z.output<S>): Pipeline;
  /** What its traces' decisions mean: judges, statistics, figures (absent: none of them). */
  readonly method?: MethodPlugin;
}

/**
 * What a method's traces mean to the rest of ambiqa, carried by its registry entry so that
 * metrics, judge diagnostics, the report and notebooks loop over entries instead of switching on
 * `decisions.kind`: the registry hands `analysis` to src/metrics/methods.ts and `figures` to
 * src/plots/methods.ts. A pipeline registered from a notebook with a `method` gets judge
 * diagnostics, decision statistics and figures like a built-in one.
 */
export interface MethodPlugin {
  /** The `decisions.kind` the pipeline's traces carry (pipelines may share one, e.g. the baselines). */
  readonly kind: string;
  /** The zod schema of its decisions (`kind` a literal): what its traces record, and their types. */
  readonly decisionsSchema?: z.ZodType<{ kind: string }>;
  /** Its graded judges, silver labeller, decision statistics and the confidence it ranks predictions by. */
  readonly analysis?: Omit<MethodAnalysis, 'kind'>;
  /** The figures its traces make, for one run and across a sweep. */
  readonly figures?: Omit<MethodFigures, 'kind'>;
}

/** Identity with inference: keeps the literal name and the schema's option type on the entry. */
export function definePipeline<const N extends string, S extends z.ZodType>(entry: PipelineEntry<N, S>): PipelineEntry<N, S> {
  return entry;
}
