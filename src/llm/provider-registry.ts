/**
 * Every LLM provider a config's `llm:` or `judge:` section may name, one entry each: the fields
 * of its section (a strict object whose `provider` is the entry's name), the factory of its
 * client, the price of its calls and the check of the files it names. The experiment config is a
 * union of these schemas keyed on `provider` (src/experiments/config.ts), so a section carries
 * only its own provider's fields, and the composer builds clients through `create` without
 * knowing which provider it holds.
 *
 * The embedded and OpenAI-compatible sections are cut from `llmConfigSchema` (config.ts, the flat
 * schema `createLanguageModel` takes), so each field is described and defaulted in one place.
 */
import { z } from 'zod';
import { describeError } from '../errors';
import { defaultCachePath } from './cache';
import type { LlmClient } from './client';
import { createLanguageModel, embeddedModelFile, llmConfigSchema, resolvePrice, type LlmSection } from './config';
import type { PriceSource } from './pricing';
import { createScriptedLanguageModel, scriptedLlmSchema } from './providers/scripted-config';

export interface LlmProviderEntry<N extends string = string, S extends z.ZodType = z.ZodType> {
  readonly name: N;
  /** Offered as an allowed value in error messages; false for the test double. */
  readonly listed: boolean;
  /** The section's fields: a strict object whose `provider` is the literal `name`. */
  readonly schema: S;
  /**
   * The client of a section already checked by `schema` (its cache, limiter and price). `section`
   * names the config field in error messages; absent for a model no section names (the D-F1
   * reader, `reader: embedded` / `openai:<model>`).
   */
  create(config: z.output<S>, section?: LlmSection): Promise<LlmClient>;
  /**
   * The price its calls are charged at, undefined when unknown. Absent for a provider whose calls
   * are never priced (the test double), so that a cost cap has nothing of it to count.
   */
  price?(config: z.output<S>, section: LlmSection): PriceSource | undefined;
  /**
   * A model file the section names that is not there (a catalog model not fetched, a missing
   * .gguf): the field and the problem with its fix, in one line; undefined when all is there.
   * Checked with the config, before anything loads.
   */
  checkFiles?(config: z.output<S>): { field: string; message: string } | undefined;
}

/** Identity with inference: keeps the literal name and the schema's type on the entry. */
export function defineLlmProvider<const N extends string, S extends z.ZodType>(entry: LlmProviderEntry<N, S>): LlmProviderEntry<N, S> {
  return entry;
}

type FlatField = keyof typeof llmConfigSchema.shape;

/** Fields of the flat schema that only the embedded model reads. */
const EMBEDDED_ONLY = ['threads', 'contextSize', 'sequences', 'prefixReuse', 'batchSamples', 'flashAttention'] as const satisfies readonly FlatField[];
/** Fields of the flat schema that only an HTTP endpoint reads. */
const HTTP_ONLY = ['baseUrl', 'apiKeyEnv'] as const satisfies readonly FlatField[];

/** The flat schema's field schemas less `provider` and `drop`, in their documented order. */
function fieldsWithout<const D extends readonly FlatField[]>(drop: D): Omit<typeof llmConfigSchema.shape, 'provider' | D[number]> {
  const fields: Record<string, z.ZodType> = { ...llmConfigSchema.shape };
  for (const key of ['provider', ...drop]) delete fields[key];
  return fields as Omit<typeof llmConfigSchema.shape, 'provider' | D[number]>;
}

/** The one-line form of a thrown problem, for a config check's list. */
function problemLine(error: unknown): string {
  return describeError(error).replace(/\n\s*/g, ' — ');
}

export const embeddedProvider = defineLlmProvider({
  name: 'embedded',
  listed: true,
  // The default provider: a section without `provider` is the embedded model's.
  schema: z.strictObject({ provider: z.literal('embedded').default('embedded'), ...fieldsWithout(HTTP_ONLY) }),
  create: (config, section) => createLanguageModel(config, section ? { section } : {}),
  price: (config, section) => resolvePrice(config, process.env, section),
  checkFiles(config) {
    try {
      embeddedModelFile(config.model);
      return undefined;
    } catch (error) {
      return { field: 'model', message: problemLine(error) };
    }
  },
});

export const openAICompatibleProvider = defineLlmProvider({
  name: 'openai-compatible',
  listed: true,
  schema: z.strictObject({ provider: z.literal('openai-compatible'), ...fieldsWithout(EMBEDDED_ONLY) }),
  create: (config, section) => createLanguageModel(config, section ? { section } : {}),
  price: (config, section) => resolvePrice(config, process.env, section),
});

export const scriptedProvider = defineLlmProvider({
  name: 'scripted',
  // A test double: accepted, never offered.
  listed: false,
  schema: scriptedLlmSchema,
  create: async (config) => createScriptedLanguageModel(config, defaultCachePath()),
});

/** The providers, in the order error messages list them. */
export const llmProviders = [embeddedProvider, openAICompatibleProvider, scriptedProvider] as const;

type SchemasOf<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends LlmProviderEntry<string, infer S> ? S : never };

/** Their schemas, in the same order (the members of the config's union keyed on `provider`). */
export const llmProviderSchemas = llmProviders.map((p) => p.schema) as SchemasOf<typeof llmProviders>;

/** A checked `llm:` or `judge:` section: one provider's fields. */
export type LlmSectionConfig = z.output<(typeof llmProviders)[number]['schema']>;
/** What a user writes there (`provider` may be left out for the embedded model). */
export type LlmSectionInput = z.input<(typeof llmProviders)[number]['schema']>;

/** The names a user is offered (the test double left out). */
export const listedLlmProviders: readonly string[] = llmProviders.filter((p) => p.listed).map((p) => p.name);

/** The entry of a checked section's provider. */
export function llmProviderOf(config: LlmSectionConfig): LlmProviderEntry<string, z.ZodType<LlmSectionConfig>> {
  const entry = llmProviders.find((p) => p.name === config.provider);
  // A checked section names one of these; anything else is a caller bypassing the schema.
  if (!entry) throw new Error(`unknown LLM provider ${JSON.stringify(config.provider)}`);
  return entry as unknown as LlmProviderEntry<string, z.ZodType<LlmSectionConfig>>;
}

/** The client of a checked section, through its provider's factory (`section` as in `LlmProviderEntry.create`). */
export function createSectionClient(config: LlmSectionConfig, section?: LlmSection): Promise<LlmClient> {
  return llmProviderOf(config).create(config, section);
}

/**
 * The client of a section given as a plain object (checked here by its provider's schema): for
 * models no config section names, such as the D-F1 reader, so that every provider is still
 * made through this registry.
 */
export async function createClientFor(input: LlmSectionInput): Promise<LlmClient> {
  const entry = llmProviders.find((p) => p.name === (input.provider ?? 'embedded'));
  if (!entry) throw new Error(`unknown LLM provider ${JSON.stringify(input.provider)}`);
  return createSectionClient(entry.schema.parse(input) as LlmSectionConfig);
}

/** The price of a checked section's calls: undefined when unknown or never priced. */
export function sectionPrice(config: LlmSectionConfig, section: LlmSection = 'llm'): PriceSource | undefined {
  return llmProviderOf(config).price?.(config, section);
}
