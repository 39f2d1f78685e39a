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
import type { MethodDescription } from '../plots/methods';
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
 * metrics, judge diagnostics, the report and notebooks loop over methods instead of switching on
 * `decisions.kind`: `methodCatalog()` (registry.ts) collects every entry's method into the
 * `MethodCatalog` (src/plots/methods.ts) that those layers are handed. A pipeline registered from
 * a notebook with a `method` gets judge diagnostics, decision statistics and figures like a
 * built-in one. Its `kind`, `decisionsSchema` (what its traces record, and their types),
 * `analysis` (graded judges, silver labeller, decision statistics, signals read back from a
 * trace) and `figures` (for one run and across a sweep).
 */
export type MethodPlugin = MethodDescription;

/** Identity with inference: keeps the literal name and the schema's option type on the entry. */
export function definePipeline<const N extends string, S extends z.ZodType>(entry: PipelineEntry<N, S>): PipelineEntry<N, S> {
  return entry;
}
