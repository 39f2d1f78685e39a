import { formatIssues } from '../common/zod-issues';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultCatalog, findLlm } from '../config/catalog';
import { cacheDir } from '../config/paths';
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { defaultCachePath, type CacheOptions } from './cache';
import { LlmClient } from './client';
import { safeUrl } from './errors';
import type { RetryEvent } from './limiter';
import { BUILTIN_PRICES_AS_OF, builtinPrice, describePricing, pricingSchema, type PriceSource } from './pricing';
import { CREDENTIALS_HINT, OPENAI_DEFAULT_BASE_URL, OpenAICompatibleProvider } from './providers/openai-compatible';
import { DEFAULT_CONTEXT_SIZE, DEFAULT_SEQUENCES, DEFAULT_FLASH_ATTENTION, LlamaCppProvider, defaultThreads, embeddedModelFromManifest, machineLooksIdle, embeddedEngine, embeddedCpu } from './providers/llama-cpp';

/**
 * The `llm:` section of an experiment config, and the one factory that turns it into a client.
 * The API key itself never appears here: `apiKeyEnv` names the environment variable holding it.
 */
const cacheSchema = z.strictObject({
  /**
   * `use`: replay and store. `refresh`: recompute and overwrite. `replay`: replay only, a call not
   * stored is refused and never sent (what `ambiqa reproduce` uses for an endpoint run). `off`: no cache.
   */
  mode: z.enum(['use', 'refresh', 'replay', 'off']).default('use'),
  /** SQLite file; default `<cache dir>/llm-cache.sqlite`. */
  path: z.string().min(1).optional(),
});

export const llmConfigSchema = z.strictObject({
  /** `embedded`: the GGUF model of `ambiqa setup`, in-process. `openai-compatible`: an HTTP API. */
  provider: z.enum(['embedded', 'openai-compatible']).default('embedded'),
  /**
   * embedded: a .gguf file, or the name of a catalog model fetched by `ambiqa setup --llm <name>`
   * or `--fetch-llm <name>` (default: the setup manifest's). openai-compatible: the model name
   * (default OPENAI_MODEL).
   */
  model: z.string().min(1).optional(),
  /** openai-compatible: the API root, e.g. http://127.0.0.1:8080/v1 (default OPENAI_BASE_URL, else OpenAI). */
  baseUrl: z
    .string()
    .min(1)
    // A custom check whose message never echoes the URL (it holds a password).
    .refine((url) => !hasUrlCredentials(url), {
      message: `must not contain credentials (user:password@): ${CREDENTIALS_HINT}`,
    })
    .optional(),
  /** Name of the environment variable that holds the API key. */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name, e.g. OPENAI_API_KEY')
    .default('OPENAI_API_KEY'),
  // A custom issue (not zod's invalid_type) so that no error formatter echoes the value.
  apiKey: z
    .custom<never>(() => false, {
      error: 'API keys never go into config files: put the key in an environment variable and name it in `apiKeyEnv`',
    })
    .optional(),
  /** embedded: CPU threads (default: AMBIQA_LLM_THREADS, else all cores when the machine is idle at start, one fewer when busy). */
  threads: z.int().min(1).optional(),
  /** embedded: context window in tokens. */
  contextSize: z.int().min(256).default(DEFAULT_CONTEXT_SIZE),
  /** embedded: context sequences (slots) — samples decoded in one batch and prompt prefixes kept evaluated (default 8). */
  sequences: z.int().min(1).max(64).optional(),
  /** embedded: reuse the evaluated prompt prefix a slot already holds (false re-reads every prompt). */
  prefixReuse: z.boolean().optional(),
  /**
   * embedded: decode the n samples of a request as parallel slots in one batch (default true);
   * false decodes them one by one, each resuming the evaluated prompt. node-llama-cpp 3.21.1
   * garbled batched samples (fixed in 3.22); docs/llm.md.
   */
  batchSamples: z.boolean().optional(),
  /**
   * embedded: llama.cpp's flash-attention kernel (default true, which is what node-llama-cpp's
   * `auto` chose on CPU). False reads prompts about 1.2× slower here; like the thread count it
   * changes floating-point order, so it is logged.
   */
  flashAttention: z.boolean().optional(),
  /**
   * How yes/no judgments are read: `probability` (default) from the next-token distribution where
   * the provider gives one (else a counted text fallback); `text` always from a short greedy
   * reply, P ∈ {0, 1} — the text-verdict baseline, for ablations of graded judging.
   */
  judgeMode: z.enum(['probability', 'text']).default('probability'),
  /** Calls in flight at once (default: 1 embedded, 4 openai-compatible). */
  maxConcurrency: z.int().min(1).max(256).optional(),
  /**
   * A fixed cap on retries per call of transient failures (429, 5xx, timeouts, resets, malformed
   * replies). Unset (the default): adaptive to the run's failure rate, with a circuit breaker
   * (docs/llm.md, "Retries").
   */
  maxRetries: z.int().min(0).max(100).optional(),
  /** First wait before a retry, doubled per retry of a call (a server's Retry-After wins). Default 0.5 s. */
  backoffSeconds: z.number().positive().max(60).optional(),
  /** Longest computed wait between retries. Default 30 s. */
  maxBackoffSeconds: z.number().positive().max(600).optional(),
  /**
   * Refuse a request whose messages hold more than this many characters before it is sent
   * (default 1,000,000: past any context window; src/llm/client.ts).
   */
  maxPromptChars: z.int().min(1).optional(),
  /** Per-call timeout (default: 600 s embedded, 120 s openai-compatible). */
  timeoutSeconds: z.number().positive().optional(),
  /**
   * USD per million tokens: `{prompt, completion, cachedPrompt?}`. Default: the built-in table for
   * common hosted models (src/llm/pricing.ts, dated), 0 for the embedded model, else unknown.
   */
  pricing: pricingSchema.optional(),
  /**
   * Stop the run cleanly before a live call would take its spend (all sessions of the run, the
   * `judge:` model's calls included) past this many US dollars; `--resume` with a higher cap
   * finishes it. Needs a price. Only in `llm:`: a run has one cap (`judge.maxCostUsd` is refused).
   */
  maxCostUsd: z.number().positive().optional(),
  /** The persistent cache: `{mode, path}`; a string is shorthand for `{path}`. */
  cache: z.preprocess((v) => (typeof v === 'string' ? { path: v } : v), cacheSchema).prefault({}),
});

function hasUrlCredentials(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== '' || u.password !== '';
  } catch {
    return /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*@/i.test(url);
  }
}

export type LlmConfig = z.infer<typeof llmConfigSchema>;
export type LlmConfigInput = z.input<typeof llmConfigSchema>;

/** Values that depend on the provider, filled in. */
export interface ResolvedLlmConfig extends LlmConfig {
  maxConcurrency: number;
  timeoutSeconds: number;
  threads: number;
  sequences: number;
  prefixReuse: boolean;
  batchSamples: boolean;
  flashAttention: boolean;
  cache: { mode: 'use' | 'refresh' | 'replay' | 'off'; path: string };
  /** The price calls are charged at, and where it came from; undefined when unknown. */
  price?: PriceSource;
}

/**
 * The price of a config's model: `llm.pricing`, else free for the embedded model, else the
 * built-in table by model name (OPENAI_MODEL when the config names none), else unknown.
 */
export function resolvePrice(
  c: Pick<LlmConfig, 'provider' | 'model' | 'pricing'>,
  env: NodeJS.ProcessEnv = process.env,
  section: LlmSection = 'llm',
): PriceSource | undefined {
  if (c.pricing) return { pricing: c.pricing, source: `${section}.pricing: ${describePricing(c.pricing)}` };
  if (c.provider === 'embedded') return { pricing: { prompt: 0, completion: 0 }, source: 'embedded model: free (runs on this machine)', free: true };
  const model = c.model ?? env.OPENAI_MODEL;
  const known = model ? builtinPrice(model) : undefined;
  if (known) return { pricing: known.pricing, source: `built-in table (${BUILTIN_PRICES_AS_OF}) for ${known.name}: ${describePricing(known.pricing)}` };
  return undefined;
}

/**
 * The config section a model serves: `llm` (the run's model) or `judge` (the model of its yes/no
 * judgments). Only error messages use it, so that they name the field to fix.
 */
export type LlmSection = 'llm' | 'judge';

/**
 * An embedded model named by the catalog (`qwen2.5-coder-1.5b-instruct-q4_k_m`) rather than by a
 * file: where `ambiqa setup` unpacks it, and its pinned checksum (so it is not hashed again).
 * Undefined when `model` is not a catalog name (then it is a file path).
 */
export function catalogModelFile(model: string): { name: string; path: string; sha256: string } | undefined {
  if (/[\\/]/.test(model) || /\.gguf$/i.test(model)) return undefined;
  const entry = findLlm(defaultCatalog, model);
  if (!entry) return undefined;
  return { name: entry.name, path: join(cacheDir(), 'models', 'llm', entry.file), sha256: entry.sha256 };
}

/**
 * The embedded model file a config names, checked before anything loads: a catalog name that is
 * not fetched, or a file that does not exist, is one error naming `<section>.model` and the fix.
 */
export function embeddedModelFile(model: string | undefined, section?: LlmSection): { path: string; sha256?: string; name?: string } | undefined {
  if (model === undefined) return undefined;
  // Named by field when the caller says which section it checks (a reader's model has none).
  const field = section ? `${section}.model: ` : '';
  const fromCatalog = catalogModelFile(model);
  if (fromCatalog) {
    if (!existsSync(fromCatalog.path)) {
      throw new AmbiqaError(
        `${field}catalog model '${model}' is not fetched (${fromCatalog.path} is missing)`,
        `fetch it with \`npx ambiqa setup --fetch-llm ${model}\` (it stays beside the run's LLM; docs/models.md)`,
      );
    }
    return fromCatalog;
  }
  const path = resolve(model);
  if (!existsSync(path)) {
    throw new AmbiqaError(
      `${field}embedded model file not found: ${path}`,
      `give a .gguf file or a catalog model name (${defaultCatalog.llms.map((e) => e.name).join(', ')}; \`npx ambiqa setup --list\`)`,
    );
  }
  return { path };
}

/** Parse (if needed) and fill provider-dependent defaults. Errors name the field and the fix. */
export function resolveLlmConfig(config: LlmConfigInput | LlmConfig = {}, section: LlmSection = 'llm'): ResolvedLlmConfig {
  const parsed = llmConfigSchema.safeParse(config);
  if (!parsed.success) {
    const lines = formatIssues(parsed.error.issues, { prefix: [section], schema: llmConfigSchema, input: config });
    throw new AmbiqaError(`invalid ${section} config:\n  ${lines.join('\n  ')}`, `fix the \`${section}:\` section (see docs/llm.md)`);
  }
  const c = parsed.data;
  const embedded = c.provider === 'embedded';
  const price = resolvePrice(c, process.env, section);
  // The run's one cap is llm.maxCostUsd and counts the judge's spend too (experiments/config.ts).
  if (c.maxCostUsd !== undefined && section === 'judge') {
    throw new AmbiqaError(
      'invalid judge config: judge.maxCostUsd: a run has one cost cap, on what llm: and judge: spend together',
      'set llm.maxCostUsd (or --max-cost) instead',
    );
  }
  if (c.maxCostUsd !== undefined && !price) {
    throw new AmbiqaError(
      `invalid llm config: llm.maxCostUsd is set, but no price is known for model "${c.model ?? process.env.OPENAI_MODEL ?? '(unset)'}"`,
      'add `pricing: {prompt: <USD per M tokens>, completion: <USD per M tokens>}` to the `llm:` section',
    );
  }
  return {
    ...c,
    maxConcurrency: c.maxConcurrency ?? (embedded ? 1 : 4),
    timeoutSeconds: c.timeoutSeconds ?? (embedded ? 600 : 120),
    // Only the embedded model runs threads: a server config must not pay for the idle check.
    threads: c.threads ?? defaultThreads(process.env, embedded ? machineLooksIdle : () => false),
    sequences: c.sequences ?? DEFAULT_SEQUENCES,
    prefixReuse: c.prefixReuse ?? true,
    batchSamples: c.batchSamples ?? true,
    flashAttention: c.flashAttention ?? DEFAULT_FLASH_ATTENTION,
    cache: { mode: c.cache.mode, path: resolve(c.cache.path ?? defaultCachePath()) },
    ...(price ? { price } : {}),
  };
}

/**
 * Build the client for a config: provider, cache and limiter. Embedded models load lazily on
 * the first call (or eagerly with `(client.backend as LlamaCppProvider).load()`).
 */
export interface CreateLanguageModelOptions {
  /** Where OPENAI_* and the `apiKeyEnv` variable are read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Told about each retry (e.g. to print "HTTP 429, retrying in 2 s"); messages hold no key. */
  onRetry?: (event: RetryEvent) => void;
  /** Which config section this is, for error messages (`judge.model: …`). Default `llm`. */
  section?: LlmSection;
}

export async function createLanguageModel(
  config: LlmConfigInput | LlmConfig = {},
  options: CreateLanguageModelOptions = {},
): Promise<LlmClient> {
  const env = options.env ?? process.env;
  const c = resolveLlmConfig(config, options.section);
  const file = c.provider === 'embedded' ? embeddedModelFile(c.model, options.section) : undefined;
  const provider =
    c.provider === 'embedded'
      ? new LlamaCppProvider({
          ...(file ? { modelPath: file.path, ...(file.sha256 ? { sha256: file.sha256 } : {}) } : {}),
          threads: c.threads,
          contextSize: c.contextSize,
          sequences: c.sequences,
          prefixReuse: c.prefixReuse,
          batchSamples: c.batchSamples,
          flashAttention: c.flashAttention,
        })
      : new OpenAICompatibleProvider(
          {
            ...(c.baseUrl ? { baseUrl: c.baseUrl } : {}),
            ...(c.model ? { model: c.model } : {}),
            apiKeyEnv: c.apiKeyEnv,
          },
          env,
        );
  const cache: CacheOptions | null = c.cache.mode === 'off' ? null : { mode: c.cache.mode, path: c.cache.path };
  return new LlmClient(provider, {
    cache,
    judgeMode: c.judgeMode,
    pricing: c.price?.pricing ?? null,
    ...(c.maxPromptChars !== undefined ? { maxPromptChars: c.maxPromptChars } : {}),
    limiter: {
      maxConcurrency: c.maxConcurrency,
      ...(c.maxRetries !== undefined ? { maxRetries: c.maxRetries } : {}),
      ...(c.backoffSeconds !== undefined ? { baseDelayMs: c.backoffSeconds * 1000 } : {}),
      ...(c.maxBackoffSeconds !== undefined ? { maxDelayMs: c.maxBackoffSeconds * 1000 } : {}),
      timeoutMs: c.timeoutSeconds * 1000,
      ...(options.onRetry ? { onRetry: options.onRetry } : {}),
    },
  });
}

/**
 * A flat, secret-free description of a config for logs and MLflow params: the key's variable
 * name and whether it is set, never the key; URLs without credentials.
 */
export function describeLlmConfig(
  config: LlmConfigInput | LlmConfig = {},
  env: NodeJS.ProcessEnv = process.env,
  section: LlmSection = 'llm',
): Record<string, string | number | boolean> {
  const c = resolveLlmConfig(config, section);
  const out: Record<string, string | number | boolean> = { provider: c.provider, judgeMode: c.judgeMode };
  if (c.provider === 'embedded') {
    const fromCatalog = c.model ? catalogModelFile(c.model) : undefined;
    let model = fromCatalog ? fromCatalog.name : c.model ? resolve(c.model) : '(setup manifest)';
    if (fromCatalog) out.modelSha256 = fromCatalog.sha256;
    if (!c.model) {
      try {
        const m = embeddedModelFromManifest();
        model = m.name;
        out.modelSha256 = m.sha256;
      } catch {
        model = '(setup manifest missing)';
      }
    }
    out.model = model;
    out.threads = c.threads;
    out.contextSize = c.contextSize;
    out.sequences = c.sequences;
    out.prefixReuse = c.prefixReuse;
    out.batchSamples = c.batchSamples;
    out.flashAttention = c.flashAttention;
    out.engine = embeddedEngine();
    out.cpu = embeddedCpu();
  } else {
    out.model = c.model ?? env.OPENAI_MODEL ?? '(unset)';
    out.baseUrl = safeUrl(c.baseUrl ?? env.OPENAI_BASE_URL ?? OPENAI_DEFAULT_BASE_URL);
    out.apiKeyEnv = c.apiKeyEnv;
    out.apiKeySet = Boolean(env[c.apiKeyEnv]);
  }
  out.maxConcurrency = c.maxConcurrency;
  out.maxRetries = c.maxRetries ?? 'adaptive';
  out.timeoutSeconds = c.timeoutSeconds;
  out.pricing = c.price ? c.price.source : 'unknown (no price known for this model: set pricing for cost_usd)';
  if (c.maxCostUsd !== undefined) out.maxCostUsd = c.maxCostUsd;
  out.cacheMode = c.cache.mode;
  if (c.cache.mode !== 'off') out.cachePath = c.cache.path;
  return out;
}
