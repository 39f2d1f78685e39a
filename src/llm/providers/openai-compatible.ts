import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIUserAbortError } from 'openai';
import { registerSecret } from '../../common/secrets';
import { AmbiqaError } from '../../errors';
import { parseRetryAfter } from '../../common/retry';
import {
  LlmRequestError,
  RETRYABLE_CONNECTION_CODES,
  classificationOf,
  classifyStatus,
  errorCode,
  redactSecrets,
  safeUrl,
  type ErrorClassification,
} from '../errors';
import type {
  FinishReason,
  JudgeFallback,
  LanguageModelProvider,
  NormalisedJudgeRequest,
  NormalisedRequest,
  ProviderCompletion,
  ProviderJudgement,
  TokenUsage,
} from '../types';

/**
 * Any server that speaks OpenAI's `/chat/completions` (OpenAI, vLLM, llama.cpp's server,
 * Ollama, LM Studio…). One request per sample; retries belong to the limiter, so the openai
 * client's own retries are off. Errors are translated into `LlmRequestError`s whose messages
 * name the URL and the fix and never contain the key.
 */
export interface OpenAICompatibleOptions {
  /** API root, e.g. `http://127.0.0.1:8080/v1`. Default `OPENAI_BASE_URL`, else OpenAI's. */
  baseUrl?: string;
  /** Model name the server knows. Default `OPENAI_MODEL`. */
  model?: string;
  /** The key itself; prefer `apiKeyEnv` so that no config holds it. */
  apiKey?: string;
  /** Name of the environment variable holding the key. Default `OPENAI_API_KEY`. */
  apiKeyEnv?: string;
  /** For tests: a fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Where a key belongs instead of a URL; shared with config validation (config.ts). */
export const CREDENTIALS_HINT =
  'remove user:password@ from the URL; put the API key in an environment variable and name it in `apiKeyEnv` (default OPENAI_API_KEY), it is sent as a Bearer token';

export class OpenAICompatibleProvider implements LanguageModelProvider {
  readonly provider = 'openai-compatible';
  readonly model: string;
  readonly baseUrl: string;
  /** The API root as the cache keys it (the URL has no credentials: they are refused). */
  readonly endpoint: string;
  readonly apiKeyEnv: string;
  // Private fields (#) stay out of util.inspect and JSON.stringify: the client holds the key.
  readonly #client: OpenAI;
  // Kept only to scrub it from messages; never logged, never returned.
  readonly #apiKey: string | undefined;

  constructor(options: OpenAICompatibleOptions = {}, env: NodeJS.ProcessEnv = process.env) {
    this.apiKeyEnv = options.apiKeyEnv ?? 'OPENAI_API_KEY';
    this.baseUrl = (options.baseUrl ?? env.OPENAI_BASE_URL ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
    let parsed: URL;
    try {
      parsed = new URL(this.baseUrl);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new AmbiqaError(
        `LLM base URL "${safeUrl(this.baseUrl)}" is not an http(s) URL`,
        'set `baseUrl` in the llm config (or OPENAI_BASE_URL) to the API root, e.g. http://127.0.0.1:8080/v1',
      );
    }
    if (parsed.username || parsed.password) {
      // fetch refuses such URLs, and a password in a URL ends up in configs and logs.
      throw new AmbiqaError(
        `LLM base URL ${safeUrl(this.baseUrl)} contains credentials (user:password@), which are never sent`,
        CREDENTIALS_HINT,
      );
    }
    this.endpoint = safeUrl(this.baseUrl);
    const model = options.model ?? env.OPENAI_MODEL;
    if (!model) {
      throw new AmbiqaError(
        'no model name for the openai-compatible LLM provider',
        'set `model` in the llm config, or the environment variable OPENAI_MODEL',
      );
    }
    this.model = model;
    this.#apiKey = options.apiKey ?? env[this.apiKeyEnv];
    // Whatever the variable is called, the key is now a secret every sink masks (a model that
    // echoes it must not put it into results, traces, MLflow or reports).
    registerSecret(this.#apiKey);
    if (!this.#apiKey && parsed.hostname === 'api.openai.com') {
      throw new AmbiqaError(
        `no API key for ${this.baseUrl}: the environment variable ${this.apiKeyEnv} is not set`,
        `export ${this.apiKeyEnv}=<your key> (keys never go into config files)`,
      );
    }
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#client = new OpenAI({
      baseURL: this.baseUrl,
      // Local servers usually accept any key; the openai client insists on one.
      apiKey: this.#apiKey || 'no-key',
      maxRetries: 0,
      // The limiter's per-call timeout aborts requests; this is only a backstop.
      timeout: 30 * 60 * 1000,
      // Pin the log level so an OPENAI_LOG=debug in the environment cannot dump requests.
      logLevel: 'warn',
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** The model check's outcome, asked once per provider (see `checkModel`). */
  #modelCheck: Promise<void> | undefined;
  /** For tests: `fetch` the model list is read with. */
  readonly #fetch: typeof fetch;

  /** Whether a key is set for this endpoint (the key itself is never exposed). */
  get hasApiKey(): boolean {
    return Boolean(this.#apiKey);
  }

  /** The `/models` answer, read once per provider: by the preflight and by the first call's check. */
  #listing: Promise<ModelListing> | undefined;

  /**
   * What the server's `GET /models` says, read once: the models it lists, that it has no list
   * (404 and the like: nothing to check), that it refused the key, or that it cannot be reached.
   * Never throws; no chat request is made.
   */
  listModels(timeoutMs = 10_000): Promise<ModelListing> {
    this.#listing ??= (async (): Promise<ModelListing> => {
      let r: Response;
      try {
        r = await this.#fetch(`${this.baseUrl}/models`, {
          headers: this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {},
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        const e = error as { name?: string };
        if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return { kind: 'unreachable', reason: `no answer to GET /models within ${Math.round(timeoutMs / 1000)} s` };
        const code = errorCode(error);
        return { kind: 'unreachable', reason: code ?? redactSecrets(error instanceof Error ? error.message : String(error), [this.#apiKey]) };
      }
      if (r.status === 401 || r.status === 403) {
        let detail: string | undefined;
        try {
          detail = serverMessage({ error: ((await r.json()) as { error?: unknown })?.error });
        } catch {
          /* no JSON body */
        }
        return { kind: 'auth', status: r.status, ...(detail ? { detail: redactSecrets(detail, [this.#apiKey]).slice(0, 200) } : {}) };
      }
      if (!r.ok) return { kind: 'unlisted', status: r.status };
      try {
        const body = (await r.json()) as { data?: Array<{ id?: unknown }> };
        const ids = Array.isArray(body?.data) ? body.data.map((m) => m?.id).filter((id): id is string => typeof id === 'string') : [];
        return ids.length > 0 ? { kind: 'listed', ids } : { kind: 'unlisted', status: r.status };
      } catch {
        return { kind: 'unlisted', status: r.status };
      }
    })();
    return this.#listing;
  }

  /** Whether a listing names this provider's model (an unlisted or unreachable server: undefined, not known). */
  servesModel(listing: ModelListing): boolean | undefined {
    return listing.kind === 'listed' ? listing.ids.some((id) => modelNameMatches(id, this.model)) : undefined;
  }

  /**
   * Servers that host one model (llama.cpp's, llama-cpp-python's) answer any `model` name with
   * the model they have: a typo in `llm.model` would run, and cache, a whole experiment under a
   * name that was never served. So before the first call the server's `/models` list is read
   * once; when it lists models and none is this one, every call fails with a `config` error
   * (never retried) naming what it does serve. A server without `/models`, or one that cannot be
   * reached yet, is not checked (the call itself then reports the problem).
   */
  private checkModel(signal?: AbortSignal): Promise<void> {
    this.#modelCheck ??= (async () => {
      const listing = await this.listModels();
      if (listing.kind !== 'listed' || this.servesModel(listing)) return;
      const ids = listing.ids;
      throw new LlmRequestError(`the server at ${safeUrl(this.baseUrl)} does not serve model "${this.model}" (its /models lists ${describeModelList(ids)})`, {
        kind: 'config',
        retryable: false,
        hint: `set \`model\` in the llm config (or OPENAI_MODEL) to ${ids.length === 1 ? `"${ids[0]}"` : 'one of them'}`,
      });
    })();
    void signal;
    return this.#modelCheck;
  }

  async doGenerate(
    request: NormalisedRequest,
    sampleIndex: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderCompletion> {
    await this.checkModel(options.signal);
    const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
      model: this.model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
      temperature: request.temperature,
      top_p: request.topP,
      max_tokens: request.maxTokens,
      n: 1,
      ...(request.stop.length > 0 ? { stop: request.stop } : {}),
      ...sampleIdentity(request, sampleIndex),
      ...(request.logprobs ? { logprobs: true } : {}),
    };
    // The raw response, parsed here rather than by the SDK: a 200 whose body is cut short or not
    // JSON is a server fault worth retrying (like a 5xx), and the error should say what came.
    let raw: Response;
    try {
      raw = await this.#client.chat.completions.create(body, {
        ...(options.signal ? { signal: options.signal } : {}),
        maxRetries: 0,
      }).asResponse();
    } catch (error) {
      throw this.translate(error);
    }
    let text: string;
    try {
      text = await raw.text();
    } catch (error) {
      // The connection dropped after the headers: a reset, retried like one.
      if (options.signal?.aborted) throw options.signal.reason ?? error;
      const code = errorCode(error);
      throw new LlmRequestError(
        `the connection to ${safeUrl(this.baseUrl)} broke while reading a reply (HTTP ${raw.status}${code ? `, ${code}` : ''})`,
        { kind: 'connection', retryable: true },
      );
    }
    const response = this.parseReply(raw.status, text);
    const choice = response.choices![0]!;
    // A server that ignores `logprobs` returns none: then the completion has no logprob, not 0.
    const tokens = request.logprobs ? choice.logprobs?.content : undefined;
    const logprob =
      Array.isArray(tokens) && tokens.length > 0 && tokens.every((t) => Number.isFinite(t?.logprob))
        ? tokens.reduce((sum, t) => sum + t.logprob, 0)
        : undefined;
    return {
      text: choice.message?.content ?? '',
      finishReason: mapFinishReason(choice.finish_reason ?? null),
      usage: usageOf(response),
      ...(logprob !== undefined ? { logprob } : {}),
    };
  }

  /** Set once the endpoint rejected `logprobs` (HTTP 400): later judgments go straight to text. */
  logprobsRejected = false;
  /** Judgments that fell back to text (no logprobs returned, rejected, or no label among the top tokens). */
  judgeTextFallbacks = 0;

  /**
   * A judgment from the first output token's `top_logprobs`: one output token, no text parsed.
   * A top token counts for a label when, trimmed and lower-cased, it is a prefix of the label (or
   * the label of it) and of no other label. When the endpoint gives no log-probabilities, rejects
   * the parameter (HTTP 400), or no top token names a label, the result is `mode: 'text'` and the
   * client parses a greedy reply instead; the trace then says `text`.
   */
  async doJudge(
    request: NormalisedJudgeRequest,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderJudgement> {
    // Without a reply (no request sent, or one refused) nothing was used: a known 0.
    const text = (fallback: JudgeFallback, usage: TokenUsage = { promptTokens: 0, completionTokens: 0 }): ProviderJudgement => {
      this.judgeTextFallbacks += 1;
      return { probabilities: request.labels.map(() => 0), labelMass: 0, mode: 'text', fallback, usage };
    };
    await this.checkModel(options.signal);
    if (this.logprobsRejected) return text('rejected');
    const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
      model: this.model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
      temperature: 0,
      max_tokens: 1,
      n: 1,
      logprobs: true,
      top_logprobs: JUDGE_TOP_LOGPROBS,
    };
    let response: ChatReply;
    try {
      const raw = await this.#client.chat.completions
        .create(body, { ...(options.signal ? { signal: options.signal } : {}), maxRetries: 0 })
        .asResponse();
      response = this.parseReply(raw.status, await raw.text());
    } catch (error) {
      if (error instanceof LlmRequestError) throw error;
      const translated = this.translate(error);
      if (translated instanceof LlmRequestError && translated.status === 400) {
        // Only a refusal that names logprobs turns them off for good; any other 400 (a prompt
        // too long, say) falls back for this judgment alone, and the text request then reports it.
        if (/logprob/i.test(translated.message) && !this.logprobsRejected) {
          this.logprobsRejected = true;
          process.emitWarning(
            `the server at ${safeUrl(this.baseUrl)} rejected logprobs (${translated.message}); judgments parse text replies (judge_mode=text)`,
            'AmbiqaLlmWarning',
          );
        }
        return text(/logprob/i.test(translated.message) ? 'rejected' : 'other');
      }
      throw translated;
    }
    const usage = usageOf(response);
    const top = response.choices?.[0]?.logprobs?.content?.[0]?.top_logprobs;
    if (!Array.isArray(top) || top.length === 0) return text('no-logprobs', usage);
    const { probabilities, labelMass } = labelProbabilitiesFromTopTokens(
      request.labels,
      top.map((t) => ({ token: t.token, logprob: t.logprob })),
    );
    if (!(labelMass > 0)) return text('no-label', usage);
    return { probabilities, labelMass, mode: 'probability', usage };
  }

  /**
   * The body of a 2xx reply as a chat completion, or a retryable error that quotes what the
   * server sent (truncated, key removed): a cut-off or garbled reply is the server's fault, not
   * the config's, and usually succeeds when asked again.
   */
  private parseReply(status: number, text: string): ChatReply {
    const url = safeUrl(this.baseUrl);
    const sent = () => {
      const t = redactSecrets(text, [this.#apiKey]).replace(/\s+/g, ' ').trim();
      if (t.length === 0) return 'an empty body';
      // Start and end: a cut-off reply shows where it stops.
      return `${text.length} bytes: '${t.length > 160 ? `${t.slice(0, 60)} … ${t.slice(-90)}` : t}'`;
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new LlmRequestError(
        `the server at ${url} sent a malformed reply (HTTP ${status}, not JSON: ${(error as Error).message}): ${sent()}`,
        { kind: 'server', retryable: true, status },
      );
    }
    const reply = parsed as ChatReply | null;
    const choice = reply && typeof reply === 'object' && Array.isArray(reply.choices) ? reply.choices[0] : undefined;
    if (!choice || typeof choice !== 'object') {
      throw new LlmRequestError(`the server at ${url} sent a reply with no choices for model "${this.model}" (HTTP ${status}): ${sent()}`, {
        kind: 'server',
        retryable: true,
        status,
        hint: 'if this persists, check that the server is OpenAI-compatible and `baseUrl` points at its API root (usually …/v1)',
      });
    }
    return reply!;
  }

  /**
   * A person-readable, key-free error that still carries what the limiter needs: the kind from
   * `classifyOpenAIError`, the message and hint from what failed.
   */
  private translate(error: unknown): unknown {
    const e = error as { name?: string; status?: unknown; headers?: unknown; message?: string; error?: unknown };
    const url = safeUrl(this.baseUrl);
    const scrub = (s: string) => redactSecrets(s, [this.#apiKey]);
    // Aborts are the limiter's (timeout) or the caller's business; pass them through untouched.
    if (error instanceof APIUserAbortError || e?.name === 'AbortError') return error;
    const { kind, retryable, status, retryAfterMs } = classifyOpenAIError(error);
    if (error instanceof APIConnectionTimeoutError) {
      return new LlmRequestError(`the server at ${url} did not answer in time`, { kind, retryable });
    }
    if (error instanceof APIConnectionError) {
      const code = errorCode(error);
      // A reset or a closed socket means the server was reached and dropped the request; saying
      // "cannot reach" would send the user to check a URL that is fine.
      if (code && /^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code)) {
        return new LlmRequestError(`the server at ${url} closed the connection before replying (${code})`, { kind, retryable });
      }
      return new LlmRequestError(
        `cannot reach the OpenAI-compatible server at ${url}${code ? ` (${code})` : ''}`,
        {
          kind,
          retryable,
          hint: 'check `baseUrl` in the llm config (or OPENAI_BASE_URL) and that the server is running',
        },
      );
    }
    if (status !== undefined) {
      const detail = scrub(serverMessage(e) ?? '');
      const base = `HTTP ${status} from ${url}/chat/completions${detail ? `: ${detail}` : ''}`;
      let hint: string | undefined;
      if (status === 401 || status === 403) {
        hint = this.#apiKey
          ? `check the key in the environment variable ${this.apiKeyEnv}`
          : `set the environment variable ${this.apiKeyEnv} to the server's API key`;
        return new LlmRequestError(`the server at ${url} rejected the API key (HTTP ${status})`, { kind, status, retryable, hint });
      }
      if (status === 404) {
        hint = `check that \`baseUrl\` is the API root (usually ends in /v1) and that the server serves model "${this.model}"`;
      } else if (status === 429) {
        hint = 'lower maxConcurrency in the llm config, or wait';
      }
      return new LlmRequestError(base, {
        kind,
        status,
        retryable,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        ...(hint ? { hint } : {}),
      });
    }
    // A socket that dropped while a body was read (undici's "terminated") is a reset too.
    const code = errorCode(error);
    if (code && /^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code)) {
      return new LlmRequestError(`the connection to ${url} broke while reading a reply (${code})`, { kind, retryable });
    }
    const message = scrub(error instanceof Error ? error.message : String(error));
    return new LlmRequestError(`request to ${url} failed: ${message}`, {
      kind,
      retryable,
      hint: 'check that `baseUrl` points at an OpenAI-compatible API root (usually …/v1)',
    });
  }
}

/**
 * The openai package's failures, and fetch's, in the limiter's terms (errors.ts): this provider
 * classifies its own errors, so that the limiter never has to know the SDK. HTTP statuses by
 * `classifyStatus` (with the server's Retry-After), the SDK's timeout and connection classes,
 * socket codes along the cause chain (an unknown host is not retried: a typo stays a typo).
 */
export function classifyOpenAIError(error: unknown): ErrorClassification {
  if (error instanceof LlmRequestError) return classificationOf(error);
  // The openai package's errors all have name "Error"; tell them apart by class.
  if (error instanceof APIUserAbortError) return { kind: 'aborted', retryable: false };
  if (error instanceof APIConnectionTimeoutError) return { kind: 'timeout', retryable: true };
  const e = error as { name?: string; status?: unknown; headers?: unknown } | null;
  if (e && typeof e === 'object') {
    if (e.name === 'AbortError') return { kind: 'aborted', retryable: false };
    if (e.name === 'TimeoutError') return { kind: 'timeout', retryable: true };
    // Any HTTP error that carries its status (the SDK's APIError and look-alikes).
    if (typeof e.status === 'number') {
      const retryAfterMs = parseRetryAfter(e.headers);
      return { ...classifyStatus(e.status), status: e.status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    }
  }
  const code = errorCode(error);
  if (code === 'ENOTFOUND') return { kind: 'connection', retryable: false };
  if (code && RETRYABLE_CONNECTION_CODES.has(code)) return { kind: 'connection', retryable: true };
  // The SDK wraps socket failures; without a code it is still a connection problem.
  if (error instanceof APIConnectionError) return { kind: 'connection', retryable: true };
  return { kind: 'other', retryable: false };
}

/**
 * What makes sample i its own request. A seed varies with the sample index, so that n seeded
 * samples differ but each replays; without a seed, sample i > 0 gets seed i, so a deterministic
 * server (or a caching proxy) does not answer n identical requests with n copies. Servers that
 * ignore `seed` still see distinct requests through `user` (OpenAI's end-user field, which
 * servers accept and mostly ignore). Sample 0 is sent as it always was, whatever n is, and all
 * of it derives from the request and the index, which the cache key already holds.
 */
export function sampleIdentity(request: NormalisedRequest, sampleIndex: number): { seed?: number; user?: string } {
  const user = sampleIndex > 0 ? { user: `ambiqa-sample-${sampleIndex}` } : {};
  if (request.seed !== null) return { seed: request.seed + sampleIndex, ...user };
  return sampleIndex > 0 ? { seed: sampleIndex, ...user } : {};
}

/** The parts of a chat completion this provider reads. */
interface ChatReply {
  choices?: Array<{
    message?: { content?: string | null };
    finish_reason?: string | null;
    logprobs?: { content?: Array<{ token: string; logprob: number; top_logprobs?: Array<{ token: string; logprob: number }> }> | null } | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null };
}

/** What `GET /models` said (`OpenAICompatibleProvider.listModels`). */
export type ModelListing =
  | { kind: 'listed'; ids: string[] }
  /** No usable list (404, 405, an empty list, not JSON): the model cannot be checked. */
  | { kind: 'unlisted'; status: number }
  /** HTTP 401/403: the key was refused (or one is needed). */
  | { kind: 'auth'; status: number; detail?: string }
  /** No HTTP answer at all: refused connection, unknown host, timeout. */
  | { kind: 'unreachable'; reason: string };

/** `"a", "b", … (12 in all)`: a model list in a message. */
export function describeModelList(ids: readonly string[]): string {
  return ids.slice(0, 8).map((id) => `"${id}"`).join(', ') + (ids.length > 8 ? `, … (${ids.length} in all)` : '');
}

/**
 * Does a listed model id name the configured model? Exactly, or as Ollama lists tags
 * (`llama3` is `llama3:latest`), or behind an organisation prefix (`org/name`).
 */
export function modelNameMatches(listed: string, wanted: string): boolean {
  if (listed === wanted) return true;
  if (listed === `${wanted}:latest` || wanted === `${listed}:latest`) return true;
  return listed.endsWith(`/${wanted}`) || wanted.endsWith(`/${listed}`);
}

/** Top alternatives asked for per judgment: enough for a label's case and spacing variants. */
export const JUDGE_TOP_LOGPROBS = 20;

function usageOf(response: ChatReply): TokenUsage {
  // A count the server does not report is unknown (undefined), neither 0 nor a guess: sums that
  // include it stay unknown, and the trace shows the gap. (Until issue 37 it was stored as 0.)
  const cached = response?.usage?.prompt_tokens_details?.cached_tokens;
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : undefined);
  return {
    promptTokens: count(response?.usage?.prompt_tokens),
    completionTokens: count(response?.usage?.completion_tokens),
    // Billed at the cached rate where the endpoint has one (llm.pricing.cachedPrompt).
    ...(typeof cached === 'number' && cached > 0 ? { cachedPromptTokens: cached } : {}),
  };
}

/**
 * Label probabilities from one position's top tokens. A token counts for the single label it
 * starts (or that starts it), compared trimmed and lower-cased, so "True", " true" and "TRUE" all
 * count for True; a token that could start two labels ("Use" for Useful/Useless) counts for none.
 * Renormalised over the labels; `labelMass` is what they had before.
 */
export function labelProbabilitiesFromTopTokens(
  labels: string[],
  top: Array<{ token: string; logprob: number }>,
): { probabilities: number[]; labelMass: number } {
  const wanted = labels.map((l) => l.trim().toLowerCase());
  const mass = labels.map(() => 0);
  const seen = new Set<string>();
  for (const { token, logprob } of top) {
    const t = token.trim().toLowerCase();
    // Some servers list the same token twice; and a token that is only white space names nothing.
    if (t === '' || !Number.isFinite(logprob) || seen.has(token)) continue;
    seen.add(token);
    const matches = wanted.flatMap((w, i) => (w.startsWith(t) || t.startsWith(w) ? [i] : []));
    if (matches.length === 1) mass[matches[0]!]! += Math.exp(logprob);
  }
  const labelMass = mass.reduce((a, b) => a + b, 0);
  return { probabilities: labelMass > 0 ? mass.map((m) => m / labelMass) : mass, labelMass };
}

function serverMessage(e: { error?: unknown; message?: string }): string | undefined {
  const body = e.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  // The SDK's own message starts with the status; keep what follows.
  return e.message?.replace(/^\d{3}\s*/, '') || undefined;
}

export function mapFinishReason(reason: string | null | undefined): FinishReason {
  if (reason === 'stop') return 'stop';
  if (reason === 'length') return 'length';
  return 'other';
}
