import type {
  ChatMessage,
  Completion,
  GenerateRequest,
  GenerateResult,
  JudgeRequest,
  JudgeResult,
  LanguageModel,
  LanguageModelProvider,
  NormalisedJudgeRequest,
  NormalisedRequest,
  ProviderJudgement,
  SpendGuard,
  TokenUsage,
  UsageTotals,
} from './types';
import { redactText } from '../common/secrets';
import { AmbiqaError } from '../errors';
import { LlmCache, cacheKey, judgeCacheKey, openCache, type CacheMode, type CacheOptions, type CachedJudgement, type CachedSample } from './cache';
import { Limiter, type LimiterOptions } from './limiter';
import { UsageMeter, addUsage } from './usage';
import { callCostUsd, type Pricing } from './pricing';

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
  /**
   * `probability` (default): judgments read next-token probabilities where the provider gives
   * them. `text`: every judgment parses a short greedy reply (P ∈ {0, 1}), as judges did before
   * graded judgments — the baseline of the probability-vs-text ablation (`llm.judgeMode`).
   */
  judgeMode?: 'probability' | 'text';
  /**
   * What this client's model costs (USD per million tokens): every live sample and judgment gets
   * its `costUsd`, cache hits 0. Null/absent: no price known, no `costUsd`. Each client prices its
   * own calls, so a run with a separate judge model counts each call at the price of the model
   * that served it.
   */
  pricing?: Pricing | null;
  /**
   * Refuse, before the cache or the provider sees it, a request whose messages hold more than
   * this many characters (default `DEFAULT_MAX_PROMPT_CHARS`; `llm.maxPromptChars`).
   */
  maxPromptChars?: number;
}

export const DEFAULT_MAX_TOKENS = 256;

/**
 * Past any context window served today (about 250k tokens of English). A prompt this long is a
 * broken input, not a question: refused at once, it costs nothing; sent, it costs memory, run
 * files and (on an API) money before the endpoint refuses it.
 */
export const DEFAULT_MAX_PROMPT_CHARS = 1_000_000;

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
  const firstSample = request.firstSample ?? 0;
  if (!Number.isInteger(firstSample) || firstSample < 0) {
    throw new AmbiqaError(`LLM request option firstSample=${firstSample} must be an integer ≥ 0`);
  }
  const normalised: NormalisedRequest = {
    messages,
    temperature: request.temperature ?? 0,
    topP: request.topP ?? 1,
    maxTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    stop: request.stop ?? [],
    n,
    seed: request.seed ?? null,
    purpose: request.purpose ?? 'unspecified',
    ...(request.logprobs ? { logprobs: true as const } : {}),
    ...(firstSample > 0 ? { firstSample } : {}),
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

export function normaliseJudgeRequest(request: JudgeRequest): NormalisedJudgeRequest {
  const { messages } = normaliseRequest({
    ...(request.messages ? { messages: request.messages } : {}),
    ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
  });
  const labels = request.labels;
  if (!Array.isArray(labels) || labels.length < 2 || labels.some((l) => typeof l !== 'string' || l.trim() === '')) {
    throw new AmbiqaError('LLM judge request needs at least two non-empty labels', 'pass labels such as ["True", "False"]');
  }
  if (new Set(labels.map((l) => l.trim().toLowerCase())).size !== labels.length) {
    throw new AmbiqaError(`LLM judge labels ${JSON.stringify(labels)} must differ`, 'pass distinct labels');
  }
  return { messages, labels: [...labels], purpose: request.purpose ?? 'unspecified' };
}

/** Greedy tokens a text-mode judgment may generate: enough for a label and a little preamble. */
export const TEXT_JUDGE_MAX_TOKENS = 8;

/**
 * Text fallback: which label does a reply name first? Case-insensitive, on word boundaries, so
 * "No, passage 1 …" is No and never a score of 1. Unparsed → null.
 */
export function parseJudgeLabel(text: string, labels: string[]): number | null {
  let best: { index: number; at: number } | null = null;
  for (const [index, label] of labels.entries()) {
    const escaped = label.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = new RegExp(`(^|[^\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'iu').exec(text);
    if (match && (best === null || match.index < best.at)) best = { index, at: match.index };
  }
  return best?.index ?? null;
}

export class LlmClient implements LanguageModel {
  readonly cache: LlmCache | null;
  readonly limiter: Limiter;
  /** Run-level usage: every `generate` of this client. */
  readonly meter = new UsageMeter();
  private readonly ownsCache: boolean;
  /** Samples by cache key: stored ones replay, identical concurrent requests share one call. */
  private readonly samples: SingleFlight<CachedSample, Completion>;
  private readonly judgements: SingleFlight<CachedJudgement, ProviderJudgement & { latencySeconds: number }>;
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
    this.samples = new SingleFlight(
      (key) => this.cache?.get(key),
      (key, c, writer) => this.writeCache(() => this.cache!.put(key, { provider: this.provider, model: this.model, sampleIndex: c.sampleIndex }, c, writer)),
    );
    this.judgements = new SingleFlight(
      (key) => this.cache?.getJudgement(key),
      (key, j, writer) => this.writeCache(() => this.cache!.putJudgement(key, { provider: this.provider, model: this.model }, j, writer)),
    );
  }

  get provider(): string {
    return this.backend.provider;
  }

  get model(): string {
    return this.backend.model;
  }

  /** Provider, model, (for servers) endpoint and (in-process) engine: who answered, as the cache keys it. */
  private keyIdentity(): { provider: string; model: string; endpoint?: string; engine?: string } {
    const { endpoint, engine } = this.backend;
    return { provider: this.provider, model: this.model, ...(endpoint ? { endpoint } : {}), ...(engine ? { engine } : {}) };
  }

  /** The price this client charges its calls at; null when none is known. */
  get pricing(): Pricing | null {
    return this.options.pricing ?? null;
  }

  /** USD of a live call with this usage, or undefined without a price. */
  private costOf(usage: TokenUsage): number | undefined {
    return this.options.pricing ? callCostUsd(usage, this.options.pricing) : undefined;
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

  /** Live calls go under `request.spendGuard` when a run's `spendCap` layer attached one (budget.ts). */
  async generate(request: GenerateRequest): Promise<GenerateResult> {
    return this.generateUnder(request, request.spendGuard);
  }

  /**
   * `options.cache: false` asks the endpoint itself, neither reading nor writing the cache: a
   * preflight probe must see how the endpoint answers now, not how it answered last month.
   */
  async judge(request: JudgeRequest, options: { cache?: boolean } = {}): Promise<JudgeResult> {
    return this.judgeUnder(request, options, request.spendGuard);
  }

  private async generateUnder(request: GenerateRequest, guard: SpendGuard | undefined): Promise<GenerateResult> {
    const started = performance.now();
    const normalised = normaliseRequest(request);
    this.checkPromptSize(normalised.messages, normalised.purpose);
    const warnings: string[] = [];
    // A provider that decodes several samples at once gets the cache misses of this request in
    // one call; otherwise samples run concurrently and the limiter decides how many reach the
    // provider at once.
    const completions =
      this.backend.doGenerateBatch && normalised.n > 1
        ? await this.sampleMany(normalised, warnings, request.signal, guard, request.cacheWriter)
        : await Promise.all(sampleIndices(normalised).map((i) => this.sample(normalised, i, request.signal, guard, request.cacheWriter)));
    const result: GenerateResult = {
      request: normalised,
      completions,
      usage: completions.map((c) => c.usage).reduce((a, b) => addUsage(a, b)),
      wallSeconds: (performance.now() - started) / 1000,
      ...(warnings.length > 0 ? { warnings: [...new Set(warnings)] } : {}),
    };
    this.meter.add(result);
    return result;
  }

  private async judgeUnder(request: JudgeRequest, options: { cache?: boolean }, guard: SpendGuard | undefined): Promise<JudgeResult> {
    const started = performance.now();
    const normalised = normaliseJudgeRequest(request);
    this.checkPromptSize(normalised.messages, normalised.purpose);
    let judgement: ProviderJudgement & { latencySeconds: number };
    let cacheHit = false;
    let cachedFrom: string | undefined;
    const textOnly = this.options.judgeMode === 'text';
    const key = this.cache && options.cache !== false ? judgeCacheKey({ ...this.keyIdentity(), request: normalised, ...(textOnly ? { judgeMode: 'text' as const } : {}) }) : null;
    const live = () => this.guarded(guard, () => this.liveJudge(normalised, request.signal), (j) => this.costOf(j.usage));
    const got = await this.judgements.get(key, live, request.cacheWriter);
    if ('stored' in got) {
      const { writer, ...stored } = got.stored;
      judgement = { ...stored, ...(stored.text !== undefined ? { text: redactText(stored.text) } : {}) };
      cacheHit = true;
      cachedFrom = writer;
    } else {
      judgement = got.value;
      cacheHit = got.shared;
      if (got.shared) cachedFrom = got.writer;
    }
    const probabilities = [...judgement.probabilities];
    let top = -1;
    for (const [i, p] of probabilities.entries()) if (p > 0 && (top < 0 || p > probabilities[top]!)) top = i;
    const result: JudgeResult = {
      request: normalised,
      probabilities,
      p: probabilities[0] ?? 0,
      label: top >= 0 && !judgement.unparsed ? normalised.labels[top]! : null,
      labelMass: judgement.labelMass,
      mode: judgement.mode,
      ...(judgement.fallback && !cacheHit ? { fallback: judgement.fallback } : {}),
      ...(judgement.text !== undefined ? { text: judgement.text } : {}),
      usage: { ...judgement.usage },
      latencySeconds: cacheHit ? 0 : judgement.latencySeconds,
      cacheHit,
      ...(cachedFrom !== undefined ? { cachedFrom } : {}),
      wallSeconds: (performance.now() - started) / 1000,
    };
    const cost = cacheHit ? (this.options.pricing ? 0 : undefined) : this.costOf(judgement.usage);
    if (cost !== undefined) result.costUsd = cost;
    this.meter.addJudgement(result);
    return result;
  }

  /** A prompt past `maxPromptChars` is refused before any call (an AmbiqaError: never retried). */
  private checkPromptSize(messages: ChatMessage[], purpose: string): void {
    const max = this.options.maxPromptChars ?? DEFAULT_MAX_PROMPT_CHARS;
    const size = messages.reduce((n, m) => n + m.content.length, 0);
    if (size > max) {
      throw new AmbiqaError(
        `LLM request ${purpose}: the prompt has ${size.toLocaleString('en-US')} characters, over the limit of ${max.toLocaleString('en-US')}; it was not sent`,
        'shorten the input (a question or passage of a broken data file?), or raise llm.maxPromptChars',
      );
    }
  }

  /** Close the cache this client opened (a cache passed in stays open for its owner). */
  close(): void {
    if (this.ownsCache) this.cache?.close();
  }

  /**
   * A live call under the run's spending cap: asked before the call (it may refuse), told the
   * call's cost after. Cache hits never come here, so replays are never refused.
   */
  private async guarded<T>(guard: SpendGuard | undefined, call: () => Promise<T>, cost: (result: T) => number | undefined): Promise<T> {
    if (!guard) return call();
    const settle = guard.open();
    try {
      const result = await call();
      settle(cost(result));
      return result;
    } catch (error) {
      settle(undefined);
      throw error;
    }
  }

  private async sample(request: NormalisedRequest, sampleIndex: number, signal?: AbortSignal, guard?: SpendGuard, writer?: string): Promise<Completion> {
    const live = () => this.guarded(guard, () => this.live(request, sampleIndex, signal), (c) => c.costUsd);
    const key = this.cache ? cacheKey({ ...this.keyIdentity(), request, sampleIndex }) : null;
    const got = await this.samples.get(key, live, writer);
    if ('stored' in got) return replayed(got.stored, sampleIndex, this.pricing !== null);
    return got.shared ? shared(got.value, sampleIndex, got.writer) : got.value;
  }

  /**
   * All n samples of a request through the provider's `doGenerateBatch`: cached samples replay,
   * samples an identical call is computing are shared, and the rest (the misses) go to the
   * provider in one call. Each sample is still cached under its own key (sample index), so a
   * later request replays it whether it was drawn alone or in a batch.
   */
  private async sampleMany(request: NormalisedRequest, warnings: string[], signal?: AbortSignal, guard?: SpendGuard, writer?: string): Promise<Completion[]> {
    const results: Array<Completion | Promise<Completion>> = [];
    const missing: number[] = [];
    const keys: Array<string | null> = [];
    for (const i of sampleIndices(request)) {
      const key = this.cache ? cacheKey({ ...this.keyIdentity(), request, sampleIndex: i }) : null;
      keys.push(key);
      const found = key ? this.samples.find(key) : undefined;
      if (found && 'stored' in found) {
        results.push(replayed(found.stored, i, this.pricing !== null));
        continue;
      }
      if (found) {
        const from = found.writer;
        results.push(found.pending.then((c) => shared(c, i, from)));
        continue;
      }
      results.push(null as unknown as Completion); // filled below
      missing.push(i);
    }
    const first = request.firstSample ?? 0;
    if (missing.length === 1) {
      results[missing[0]! - first] = this.sample(request, missing[0]!, signal, guard, writer);
    } else if (missing.length > 1) {
      const batch = this.guarded(
        guard,
        () => this.liveBatch(request, missing, signal),
        (b) => (this.pricing ? b.completions.reduce((sum, c) => sum + (c.costUsd ?? 0), 0) : undefined),
      );
      for (const [j, i] of missing.entries()) {
        const key = keys[i - first];
        const sample = batch.then((b) => b.completions[j]!);
        results[i - first] = key ? this.samples.start(key, sample, writer) : sample;
      }
      batch.then(
        (b) => warnings.push(...(b.warnings ?? [])),
        () => undefined, // the error reaches the caller through the samples' promises
      );
    }
    return Promise.all(results);
  }

  /** One live `doGenerateBatch` call through the limiter; a batch's seconds are shared out over its samples. */
  private async liveBatch(
    request: NormalisedRequest,
    sampleIndices: number[],
    signal?: AbortSignal,
  ): Promise<{ completions: Completion[]; warnings?: string[] }> {
    this.refuseLiveInReplay(request.purpose);
    return this.limiter.run(
      async (attemptSignal) => {
        const t0 = performance.now();
        const batch = await this.backend.doGenerateBatch!(request, sampleIndices, {
          signal: attemptSignal,
          ...(this.limiter.timeoutMs > 0 ? { timeoutMs: this.limiter.timeoutMs } : {}),
        });
        if (batch.completions.length !== sampleIndices.length) {
          throw new AmbiqaError(
            `LLM provider ${this.provider} returned ${batch.completions.length} samples for a batch of ${sampleIndices.length}`,
          );
        }
        const each = (performance.now() - t0) / 1000 / sampleIndices.length;
        return {
          completions: batch.completions.map((c, j) => {
            const cost = this.costOf(c.usage);
            return {
              text: redactText(c.text), // masked before the cache, as in live()
              finishReason: c.finishReason,
              usage: tokenUsage(c.usage),
              latencySeconds: each,
              cacheHit: false,
              sampleIndex: sampleIndices[j]!,
              ...(c.logprob !== undefined ? { logprob: c.logprob } : {}),
              ...(cost !== undefined ? { costUsd: cost } : {}),
            };
          }),
          ...(batch.warnings && batch.warnings.length > 0 ? { warnings: batch.warnings } : {}),
        };
      },
      signal ? { signal } : {},
    );
  }

  private async live(request: NormalisedRequest, sampleIndex: number, signal?: AbortSignal): Promise<Completion> {
    this.refuseLiveInReplay(request.purpose);
    return this.limiter.run(
      async (attemptSignal) => {
        const t0 = performance.now();
        const c = await this.backend.doGenerate(request, sampleIndex, {
          signal: attemptSignal,
          ...(this.limiter.timeoutMs > 0 ? { timeoutMs: this.limiter.timeoutMs } : {}),
        });
        const cost = this.costOf(c.usage);
        return {
          // Model output is untrusted: a server that echoes the API key must not get it into
          // the cache, traces, results or MLflow. Masking here, before the cache, also keeps
          // later replays clean when the key is no longer in the environment.
          text: redactText(c.text),
          finishReason: c.finishReason,
          usage: tokenUsage(c.usage),
          latencySeconds: (performance.now() - t0) / 1000,
          cacheHit: false,
          sampleIndex,
          ...(c.logprob !== undefined ? { logprob: c.logprob } : {}),
          ...(cost !== undefined ? { costUsd: cost } : {}),
        };
      },
      signal ? { signal } : {},
    );
  }

  /** One live judgment: the provider's probabilities, or a short greedy reply parsed for a label. */
  private async liveJudge(
    request: NormalisedJudgeRequest,
    signal?: AbortSignal,
  ): Promise<ProviderJudgement & { latencySeconds: number }> {
    this.refuseLiveInReplay(request.purpose);
    return this.limiter.run(
      async (attemptSignal) => {
        const t0 = performance.now();
        const timeout = this.limiter.timeoutMs > 0 ? { timeoutMs: this.limiter.timeoutMs } : {};
        let judgement: ProviderJudgement | undefined;
        if (this.backend.doJudge && this.options.judgeMode !== 'text') {
          judgement = await this.backend.doJudge(request, { signal: attemptSignal, ...timeout });
        }
        if (!judgement || judgement.mode === 'text') {
          const reply = await this.backend.doGenerate(
            {
              messages: request.messages,
              temperature: 0,
              topP: 1,
              maxTokens: TEXT_JUDGE_MAX_TOKENS,
              stop: ['\n'],
              n: 1,
              seed: null,
              purpose: request.purpose,
            },
            0,
            { signal: attemptSignal, ...timeout },
          );
          const index = parseJudgeLabel(reply.text, request.labels);
          judgement = {
            probabilities: request.labels.map((_, i) => (i === index ? 1 : 0)),
            labelMass: 1,
            mode: 'text',
            ...(judgement?.fallback ? { fallback: judgement.fallback } : {}),
            text: reply.text,
            ...(index === null ? { unparsed: true } : {}),
            // A probability request that came back without usable logprobs was still sent (and
            // billed): its tokens count with the text reply's.
            usage: judgement ? addUsage(judgement.usage, reply.usage) : reply.usage,
          };
        }
        return {
          ...judgement,
          ...(judgement.text !== undefined ? { text: redactText(judgement.text) } : {}),
          latencySeconds: (performance.now() - t0) / 1000,
        };
      },
      signal ? { signal } : {},
    );
  }

  /**
   * Cache mode `replay` (`ambiqa reproduce` of an endpoint run without `--live`): a call the
   * cache does not hold is refused before it reaches the provider, so nothing is sent.
   */
  private refuseLiveInReplay(purpose: string): void {
    if (this.cache?.mode !== 'replay') return;
    throw new AmbiqaError(
      `not in the LLM cache (${this.cache.path}): a ${purpose} call of ${this.provider} model ${this.model} that the recorded run did not make, or made with another cache`,
      'replay mode sends nothing: reproduce with --live to ask the endpoint',
    );
  }

  /** A cache that cannot be written must not throw away a reply already paid for: warn once, go on. */
  private writeCache(write: () => void): void {
    try {
      write();
    } catch (error) {
      if (!this.warnedCacheWrite) {
        this.warnedCacheWrite = true;
        process.emitWarning(`LLM cache write to ${this.cache!.path} failed: ${(error as Error).message}`, 'AmbiqaCacheWarning');
      }
    }
  }
}

/**
 * The cache → in-flight → call → store sequence, written once for samples and judgments: a
 * stored value replays; a value an identical call is computing now is shared (identical
 * concurrent requests make one call); otherwise the call runs, and its value is stored before
 * anyone waiting on it sees it. Without a key (no cache, or a probe that bypasses it) the call
 * just runs.
 */
class SingleFlight<Stored, Value> {
  /** Calls in flight by key, with the writer (`cacheWriter`) of the call that started each. */
  private readonly inflight = new Map<string, { flight: Promise<Value>; writer: string | undefined }>();

  constructor(
    private readonly read: (key: string) => Stored | undefined,
    private readonly write: (key: string, value: Value, writer: string | undefined) => void,
  ) {}

  /** What `key` has now: its stored value, the call in flight for it (and who started it), or nothing. */
  find(key: string): { stored: Stored } | { pending: Promise<Value>; writer: string | undefined } | undefined {
    const stored = this.read(key);
    if (stored !== undefined) return { stored };
    const pending = this.inflight.get(key);
    return pending ? { pending: pending.flight, writer: pending.writer } : undefined;
  }

  /** Share `call` under `key` until it settles; its value is stored first, under `writer`. */
  start(key: string, call: Promise<Value>, writer?: string): Promise<Value> {
    const flight = call.then((value) => {
      this.write(key, value, writer);
      return value;
    });
    const entry = { flight, writer };
    this.inflight.set(key, entry);
    const done = () => {
      if (this.inflight.get(key) === entry) this.inflight.delete(key);
    };
    flight.then(done, done);
    return flight;
  }

  /** The stored value, or the value of the call in flight (`shared`, with its writer), or of `call` run now. */
  async get(key: string | null, call: () => Promise<Value>, writer?: string): Promise<{ stored: Stored } | { value: Value; shared: boolean; writer?: string | undefined }> {
    if (key === null) return { value: await call(), shared: false };
    const found = this.find(key);
    if (found && 'stored' in found) return found;
    if (found) return { value: await found.pending, shared: true, writer: found.writer };
    return { value: await this.start(key, call(), writer), shared: false };
  }
}

/** Token counts as a provider gave them, cached prompt tokens kept where the endpoint reported them. */
function tokenUsage(u: TokenUsage): TokenUsage {
  return { promptTokens: u.promptTokens, completionTokens: u.completionTokens, ...(u.cachedPromptTokens ? { cachedPromptTokens: u.cachedPromptTokens } : {}) };
}

/** A sample replayed from the persistent cache: no request was sent, so it costs 0 (when priced at all). */
function replayed(stored: CachedSample, sampleIndex: number, priced: boolean): Completion {
  return {
    // Masked again on replay: a row written before the key was known (or by an older version)
    // must not carry it into this run's files.
    text: redactText(stored.text),
    finishReason: stored.finishReason,
    usage: { ...stored.usage },
    latencySeconds: 0,
    cacheHit: true,
    sampleIndex,
    ...(stored.logprob !== undefined ? { logprob: stored.logprob } : {}),
    ...(priced ? { costUsd: 0 } : {}),
    ...(stored.writer !== undefined ? { cachedFrom: stored.writer } : {}),
  };
}

/** Served by an identical call already running (started by `writer`): costs nothing live, so it counts as a hit. */
function shared(c: Completion, sampleIndex: number, writer: string | undefined): Completion {
  return { ...c, usage: { ...c.usage }, latencySeconds: 0, cacheHit: true, sampleIndex, ...(c.costUsd !== undefined ? { costUsd: 0 } : {}), ...(writer !== undefined ? { cachedFrom: writer } : {}) };
}

/** The sample indices a request asks for: firstSample … firstSample + n − 1. */
function sampleIndices(request: NormalisedRequest): number[] {
  const first = request.firstSample ?? 0;
  return Array.from({ length: request.n }, (_, i) => first + i);
}
