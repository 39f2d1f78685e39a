import type {
  ChatMessage,
  Completion,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  LanguageModelProvider,
  NormalisedRequest,
  UsageTotals,
} from './types';
import { AmbiqaError } from '../errors';
import { LlmCache, cacheKey, openCache, type CacheMode, type CacheOptions } from './cache';
import { Limiter, type LimiterOptions } from './limiter';
import { UsageMeter } from './usage';

/**
 * The one place every model call goes through: request normalisation, the persistent cache
 * (with in-process single-flight), the limiter (concurrency, retries, timeouts) and usage
 * accounting. No pipeline calls a provider directly.
 */
export interface LlmClientOptions {
  /**
   * The persistent cache: an open `LlmCache`, options to open one, or null/undefined for none.
   * Default none, so that unit tests with the scripted provider never touch a shared file;
   * `createLanguageModel` (config.ts) turns it on for real runs.
   */
  cache?: LlmCache | CacheOptions | null;
  /** A shared `Limiter` or options for this client's own. */
  limiter?: Limiter | LimiterOptions;
}

export const DEFAULT_MAX_TOKENS = 256;

export function normaliseRequest(request: GenerateRequest): NormalisedRequest {
  const messages: ChatMessage[] =
    request.messages ?? (request.prompt !== undefined ? [{ role: 'user', content: request.prompt }] : []);
  if (messages.length === 0) {
    throw new AmbiqaError('LLM request has neither `messages` nor `prompt`', 'pass a prompt string or chat messages');
  }
  for (const [i, m] of messages.entries()) {
    if (!m || !['system', 'user', 'assistant'].includes(m.role) || typeof m.content !== 'string') {
      throw new AmbiqaError(
        `LLM request message ${i} is not {role: system|user|assistant, content: string}`,
        'fix the messages passed to generate()',
      );
    }
  }
  const n = request.n ?? 1;
  if (!Number.isInteger(n) || n < 1) throw new AmbiqaError(`LLM request option n=${n} must be a positive integer`);
  const normalised: NormalisedRequest = {
    messages,
    temperature: request.temperature ?? 0,
    topP: request.topP ?? 1,
    maxTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    stop: request.stop ?? [],
    n,
    seed: request.seed ?? null,
    purpose: request.purpose ?? 'unspecified',
  };
  const { temperature, topP, maxTokens, stop, seed } = normalised;
  if (!(Number.isFinite(temperature) && temperature >= 0)) {
    throw new AmbiqaError(`LLM request option temperature=${temperature} must be a number ≥ 0`);
  }
  if (!(Number.isFinite(topP) && topP > 0 && topP <= 1)) {
    throw new AmbiqaError(`LLM request option topP=${topP} must be in (0, 1]`);
  }
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new AmbiqaError(`LLM request option maxTokens=${maxTokens} must be a positive integer`);
  }
  if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new AmbiqaError('LLM request option stop must be a list of non-empty strings');
  }
  if (seed !== null && !Number.isInteger(seed)) {
    throw new AmbiqaError(`LLM request option seed=${seed} must be an integer`);
  }
  return normalised;
}

export class LlmClient implements LanguageModel {
  readonly cache: LlmCache | null;
  readonly limiter: Limiter;
  /** Run-level usage: every `generate` of this client. */
  readonly meter = new UsageMeter();
  private readonly ownsCache: boolean;
  /** Samples being computed now, by cache key: identical concurrent requests share one call. */
  private readonly inflight = new Map<string, Promise<Completion>>();
  private warnedCacheWrite = false;

  constructor(
    readonly backend: LanguageModelProvider,
    readonly options: LlmClientOptions = {},
  ) {
    if (options.cache instanceof LlmCache) {
      this.cache = options.cache;
      this.ownsCache = false;
    } else {
      this.cache = openCache(options.cache ?? undefined);
      this.ownsCache = this.cache !== null;
    }
    this.limiter = options.limiter instanceof Limiter ? options.limiter : new Limiter(options.limiter ?? {});
  }

  get provider(): string {
    return this.backend.provider;
  }

  get model(): string {
    return this.backend.model;
  }

  get cacheMode(): CacheMode {
    return this.cache?.mode ?? 'off';
  }

  /** Totals since construction or the last `resetUsage()`; a copy. */
  get usage(): UsageTotals {
    return this.meter.snapshot();
  }

  /** Return the totals so far and start counting from zero. */
  resetUsage(): UsageTotals {
    return this.meter.reset();
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const started = performance.now();
    const normalised = normaliseRequest(request);
    // Samples run concurrently; the limiter decides how many reach the provider at once.
    const completions = await Promise.all(
      Array.from({ length: normalised.n }, (_, i) => this.sample(normalised, i, request.signal)),
    );
    const result: GenerateResult = {
      request: normalised,
      completions,
      usage: {
        promptTokens: completions.reduce((s, c) => s + c.usage.promptTokens, 0),
        completionTokens: completions.reduce((s, c) => s + c.usage.completionTokens, 0),
      },
      wallSeconds: (performance.now() - started) / 1000,
    };
    this.meter.add(result);
    return result;
  }

  /** Close the cache this client opened (a cache passed in stays open for its owner). */
  close(): void {
    if (this.ownsCache) this.cache?.close();
  }

  private async sample(request: NormalisedRequest, sampleIndex: number, signal?: AbortSignal): Promise<Completion> {
    if (!this.cache) return this.live(request, sampleIndex, signal);
    const keyInput = { provider: this.provider, model: this.model, request, sampleIndex };
    const key = cacheKey(keyInput);
    const stored = this.cache.get(key);
    if (stored) {
      return {
        text: stored.text,
        finishReason: stored.finishReason,
        usage: { ...stored.usage },
        latencySeconds: 0,
        cacheHit: true,
        sampleIndex,
      };
    }
    const pending = this.inflight.get(key);
    if (pending) {
      // Served by an identical call already running: costs nothing live, so it counts as a hit.
      const shared = await pending;
      return { ...shared, usage: { ...shared.usage }, latencySeconds: 0, cacheHit: true, sampleIndex };
    }
    const flight = this.live(request, sampleIndex, signal).then((completion) => {
      this.store(key, keyInput, completion);
      return completion;
    });
    this.inflight.set(key, flight);
    try {
      return await flight;
    } finally {
      this.inflight.delete(key);
    }
  }

  private async live(request: NormalisedRequest, sampleIndex: number, signal?: AbortSignal): Promise<Completion> {
    return this.limiter.run(
      async (attemptSignal) => {
        const t0 = performance.now();
        const c = await this.backend.doGenerate(request, sampleIndex, {
          signal: attemptSignal,
          ...(this.limiter.timeoutMs > 0 ? { timeoutMs: this.limiter.timeoutMs } : {}),
        });
        return {
          text: c.text,
          finishReason: c.finishReason,
          usage: { promptTokens: c.usage.promptTokens, completionTokens: c.usage.completionTokens },
          latencySeconds: (performance.now() - t0) / 1000,
          cacheHit: false,
          sampleIndex,
        };
      },
      signal ? { signal } : {},
    );
  }

  private store(key: string, keyInput: { provider: string; model: string; sampleIndex: number }, c: Completion): void {
    try {
      this.cache!.put(key, keyInput, c);
    } catch (error) {
      // A cache that cannot be written must not throw away a completion already paid for.
      if (!this.warnedCacheWrite) {
        this.warnedCacheWrite = true;
        process.emitWarning(`LLM cache write to ${this.cache!.path} failed: ${(error as Error).message}`, 'AmbiqaCacheWarning');
      }
    }
  }
}
