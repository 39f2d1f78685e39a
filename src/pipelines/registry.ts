/**
 * Every pipeline by name. Each pipeline folder exports its entry (`definePipeline`, see
 * entry.ts); this file lists them, one line each, and everything else derives from the list:
 * `pipelineNames`, the options schemas, the `BuiltinPipelineName` type, what a pipeline needs
 * from the run (retriever, embedder: checked by the experiment config before any model loads),
 * `ambiqa run --help`, the docs' table and the method catalog (`methodCatalog()`: each method's
 * analysis, figures and decisions schema, which report, compare, merge and the notebook helpers
 * are handed as an argument). Pipelines defined outside this repository (a notebook,
 * another project) join with `registerPipeline(entry)`; the runner, `score` and the report then
 * accept them by name like the built-in ones.
 */
import { formatIssues } from '../common/zod-issues';
import { createMethodCatalog, type MethodCatalog } from '../plots/methods';
import type { z } from 'zod';
import { AmbiqaError } from '../errors';
import { closedBookEntry, cotEntry, cotScEntry, vanillaRagEntry } from './baselines/entry';
import { comboEntry } from './combo/entry';
import { divaEntry } from './diva/entry';
import type { PipelineEntry, PipelineNeeds } from './entry';
import { tocEntry } from './toc/entry';
import type { Pipeline } from './types';
import { verifyEditEntry } from './verify-edit/entry';

/** The pipelines shipped with ambiqa: adding one is its folder plus one line here. */
export const builtinPipelines = [
  closedBookEntry,
  vanillaRagEntry,
  cotEntry,
  cotScEntry,
  tocEntry,
  verifyEditEntry,
  divaEntry,
  comboEntry,
] as const;

type BuiltinEntry = (typeof builtinPipelines)[number];
export type BuiltinPipelineName = BuiltinEntry['name'];
type EntryNamed<N extends BuiltinPipelineName> = Extract<BuiltinEntry, { name: N }>;

/** The options schema of each built-in pipeline, by name (derived from the entries). */
export const pipelineOptionsSchemas = Object.fromEntries(builtinPipelines.map((e) => [e.name, e.optionsSchema])) as {
  [N in BuiltinPipelineName]: EntryNamed<N>['optionsSchema'];
};

/** What a caller may pass (every field optional where it has a default). */
export type PipelineOptionsInput<N extends BuiltinPipelineName> = z.input<EntryNamed<N>['optionsSchema']>;
/** The resolved options, every default filled in. */
export type PipelineOptions<N extends BuiltinPipelineName> = z.output<EntryNamed<N>['optionsSchema']>;

/**
 * Options of pipelines registered from outside, for typed configs. Augment it where the pipeline
 * is defined: `declare module 'ambiqa' { interface RegisteredPipelineOptions { toy: { shout?: boolean } } }`.
 * Without it, a registered pipeline still runs; its config is then checked at run time only.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface RegisteredPipelineOptions {}

const entries = new Map<string, PipelineEntry>(builtinPipelines.map((e) => [e.name, e as PipelineEntry]));
const names: string[] = builtinPipelines.map((e) => e.name);

/** Every registered name, built-in first, in registration order (a live list: registration appends). */
export const pipelineNames: readonly string[] = names;

const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/**
 * Add a pipeline defined outside src/pipelines. Registering a name again replaces the earlier
 * entry (re-running a notebook cell); a built-in name is refused, so a typo cannot silently
 * replace ToC in a run that is compared with published numbers.
 */
export function registerPipeline<N extends string, S extends z.ZodType>(entry: PipelineEntry<N, S>): PipelineEntry<N, S> {
  const name = entry.name;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new AmbiqaError(
      `registerPipeline: invalid pipeline name ${JSON.stringify(name)}`,
      'use lower-case letters, digits, ".", "_" or "-" (it becomes part of run directory names)',
    );
  }
  if (builtinPipelines.some((e) => e.name === name)) {
    throw new AmbiqaError(`registerPipeline: ${JSON.stringify(name)} is a built-in pipeline`, 'choose another name for your pipeline');
  }
  if (typeof entry.create !== 'function' || typeof entry.optionsSchema?.safeParse !== 'function') {
    throw new AmbiqaError(`registerPipeline: pipeline ${name} needs an optionsSchema (zod) and a create(options) function`);
  }
  if (!entries.has(name)) names.push(name);
  entries.set(name, entry as unknown as PipelineEntry);
  return entry;
}

/**
 * The methods of every registered pipeline (built-in first), by decisions kind: what the metrics,
 * report, figures and notebooks know of a method's traces. Built on each call, so a pipeline
 * registered since is in it; callers build it where a run, report or merge is put together and
 * pass it down.
 */
export function methodCatalog(): MethodCatalog {
  return createMethodCatalog(pipelineEntries().flatMap((e) => (e.method ? [e.method] : [])));
}

/** Every entry, built-in and registered, in `pipelineNames` order. */
export function pipelineEntries(): PipelineEntry[] {
  return names.map((n) => entries.get(n)!);
}

export function pipelineEntry(name: string): PipelineEntry | undefined {
  return entries.get(name);
}

export function isPipelineName(name: string): boolean {
  return entries.has(name);
}

/** What a pipeline needs from the run; undefined for an unknown name. */
export function pipelineNeeds(name: string): PipelineNeeds | undefined {
  return entries.get(name)?.needs;
}

/** The options schema of a pipeline, or undefined for an unknown name. */
export function pipelineOptionsSchema(name: string): z.ZodType | undefined {
  return entries.get(name)?.optionsSchema;
}

function requireEntry(name: string): PipelineEntry {
  const entry = entries.get(name);
  if (!entry) throw new AmbiqaError(`unknown pipeline ${JSON.stringify(name)}`, `choose one of: ${names.join(', ')}`);
  return entry;
}

/** `maxNodes: must be ≥ 1` → `option maxNodes: must be ≥ 1`; unknown fields read as they are. */
function optionLine(line: string): string {
  return line.startsWith('(top level): ') ? line.slice('(top level): '.length) : `option ${line}`;
}

/**
 * An option kept in a schema only to be refused with a line naming its replacement
 * (`z.never(...).optional()`, e.g. COMBO's `skipEvidentialBelow`): not offered as allowed.
 */
function isRetired(option: z.ZodType | undefined): boolean {
  const def = (option as unknown as { _zod?: { def: { type: string; innerType?: { _zod: { def: { type: string } } } } } })?._zod?.def;
  return def?.type === 'optional' && def.innerType?._zod.def.type === 'never';
}

/** Validate and fill a pipeline's options; an AmbiqaError names every bad option. */
export function parsePipelineOptions<N extends BuiltinPipelineName>(name: N, options?: unknown): PipelineOptions<N>;
export function parsePipelineOptions(name: string, options?: unknown): Record<string, unknown>;
export function parsePipelineOptions(name: string, options: unknown = {}): unknown {
  const schema = requireEntry(name).optionsSchema;
  const result = schema.safeParse(options ?? {});
  if (!result.success) {
    const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
    const allowed = Object.keys(shape)
      .filter((k) => !isRetired(shape[k]))
      .join(', ');
    throw new AmbiqaError(
      `pipeline ${name}: ${formatIssues(result.error.issues, { schema, input: options ?? {} }).map(optionLine).join('; ')}`,
      `allowed options: ${allowed}`,
    );
  }
  return result.data;
}

/** Build a pipeline from its name and (unvalidated) options. */
export function createPipeline<N extends BuiltinPipelineName>(name: N, options?: PipelineOptionsInput<N> | Record<string, unknown>): Pipeline;
export function createPipeline(name: string, options?: unknown): Pipeline;
export function createPipeline(name: string, options: unknown = {}): Pipeline {
  const entry = requireEntry(name);
  return entry.create(parsePipelineOptions(name, options));
}

/** Every option's default, for docs and `--help` output. */
export function defaultPipelineOptions(name: string): Record<string, unknown> {
  return parsePipelineOptions(name, {}) as Record<string, unknown>;
}

/** One line per pipeline (`name  description`), for `--help` and error hints. */
export function describePipelines(): string[] {
  const width = Math.max(...names.map((n) => n.length));
  return pipelineEntries().map((e) => `${e.name.padEnd(width)}  ${e.description}`);
}
