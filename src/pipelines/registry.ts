/**
 * Every pipeline by name: its options schema (zod, with defaults and ranges) and a factory.
 * The experiment runner validates `pipeline.options` against `pipelineOptionsSchemas[name]`
 * before any model call, then calls `createPipeline(name, options)`.
 */
import { formatIssues } from '../common/zod-issues';
import type { z } from 'zod';
import { AmbiqaError } from '../errors';
import type { PipelineName } from '../trace/types';
import { ClosedBookPipeline } from './baselines/closed-book';
import { CotPipeline } from './baselines/cot';
import { CotScPipeline } from './baselines/cot-sc';
import {
  closedBookOptionsSchema,
  cotOptionsSchema,
  cotScOptionsSchema,
  vanillaRagOptionsSchema,
} from './baselines/options';
import { VanillaRagPipeline } from './baselines/vanilla-rag';
import { ComboPipeline } from './combo';
import { comboOptionsSchema } from './combo/options';
import { DivaPipeline } from './diva';
import { divaOptionsSchema } from './diva/options';
import { TocPipeline } from './toc';
import { tocOptionsSchema } from './toc/options';
import type { Pipeline } from './types';
import { VerifyEditPipeline } from './verify-edit';
import { verifyEditOptionsSchema } from './verify-edit/options';

export const pipelineNames = [
  'closed-book',
  'vanilla-rag',
  'cot',
  'cot-sc',
  'toc',
  'verify-edit',
  'diva',
  'combo',
] as const satisfies readonly PipelineName[];

export const pipelineOptionsSchemas = {
  'closed-book': closedBookOptionsSchema,
  'vanilla-rag': vanillaRagOptionsSchema,
  cot: cotOptionsSchema,
  'cot-sc': cotScOptionsSchema,
  toc: tocOptionsSchema,
  'verify-edit': verifyEditOptionsSchema,
  diva: divaOptionsSchema,
  combo: comboOptionsSchema,
} satisfies Record<PipelineName, z.ZodType>;

type Schemas = typeof pipelineOptionsSchemas;
/** What a caller may pass (every field optional where it has a default). */
export type PipelineOptionsInput<N extends PipelineName> = z.input<Schemas[N]>;
/** The resolved options, every default filled in. */
export type PipelineOptions<N extends PipelineName> = z.output<Schemas[N]>;

export function isPipelineName(name: string): name is PipelineName {
  return (pipelineNames as readonly string[]).includes(name);
}

/** The options schema of a pipeline, or undefined for an unknown name. */
export function pipelineOptionsSchema(name: string): z.ZodType | undefined {
  return isPipelineName(name) ? pipelineOptionsSchemas[name] : undefined;
}

/** `maxNodes: must be ≥ 1` → `option maxNodes: must be ≥ 1`; unknown fields read as they are. */
function optionLine(line: string): string {
  return line.startsWith('(top level): ') ? line.slice('(top level): '.length) : `option ${line}`;
}

/** Validate and fill a pipeline's options; an AmbiqaError names every bad option. */
export function parsePipelineOptions<N extends PipelineName>(name: N, options: unknown = {}): PipelineOptions<N> {
  const schema = pipelineOptionsSchemas[name] as z.ZodType;
  const result = schema.safeParse(options ?? {});
  if (!result.success) {
    const allowed = Object.keys((schema as unknown as { shape: Record<string, unknown> }).shape ?? {}).join(', ');
    throw new AmbiqaError(
      `pipeline ${name}: ${formatIssues(result.error.issues, { schema, input: options ?? {} }).map(optionLine).join('; ')}`,
      `allowed options: ${allowed}`,
    );
  }
  return result.data as PipelineOptions<N>;
}

/** Build a pipeline from its name and (unvalidated) options. */
export function createPipeline<N extends PipelineName>(name: N, options?: PipelineOptionsInput<N> | Record<string, unknown>): Pipeline;
export function createPipeline(name: string, options?: unknown): Pipeline;
export function createPipeline(name: string, options: unknown = {}): Pipeline {
  if (!isPipelineName(name)) {
    throw new AmbiqaError(`unknown pipeline ${JSON.stringify(name)}`, `choose one of: ${pipelineNames.join(', ')}`);
  }
  switch (name) {
    case 'closed-book':
      return new ClosedBookPipeline(parsePipelineOptions(name, options));
    case 'vanilla-rag':
      return new VanillaRagPipeline(parsePipelineOptions(name, options));
    case 'cot':
      return new CotPipeline(parsePipelineOptions(name, options));
    case 'cot-sc':
      return new CotScPipeline(parsePipelineOptions(name, options));
    case 'toc':
      return new TocPipeline(parsePipelineOptions(name, options));
    case 'verify-edit':
      return new VerifyEditPipeline(parsePipelineOptions(name, options));
    case 'diva':
      return new DivaPipeline(parsePipelineOptions(name, options));
    case 'combo':
      return new ComboPipeline(parsePipelineOptions(name, options));
  }
}

/** Every option's default, for docs and `--help` output. */
export function defaultPipelineOptions(name: PipelineName): Record<string, unknown> {
  return parsePipelineOptions(name, {}) as Record<string, unknown>;
}
