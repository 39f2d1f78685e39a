/**
 * One pipeline's registry entry: everything the rest of the code needs to know about it (its
 * name, a one-line description for `--help` and the docs, the options schema, what it needs from
 * the run, and the factory). Each pipeline folder exports its entries; `registry.ts` lists them,
 * and config validation, the runner's retriever/embedder checks, CLI help and the `PipelineName`
 * type all derive from that list. A notebook or another project adds its own with
 * `registerPipeline(definePipeline({...}))`.
 */
import type { z } from 'zod';
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
}

/** Identity with inference: keeps the literal name and the schema's option type on the entry. */
export function definePipeline<const N extends string, S extends z.ZodType>(entry: PipelineEntry<N, S>): PipelineEntry<N, S> {
  return entry;
}
