import { APIConnectionError, APIConnectionTimeoutError, APIUserAbortError } from 'openai';
import { LlmRequestError, isRetryableKind, type LlmErrorKind } from './errors';

/**
 * The one place that decides concurrency, retries and timeouts for model calls. Every call of
 * `LlmClient` goes through `Limiter.run`; nothing else retries (the openai client's own retries
 * are switched off), so the retry policy can be read and tested here alone.
 */
export interface LimiterOptions {
  /** Calls running at once; the rest wait in FIFO order. Default 4. */
  maxConcurrency?: number;
  /** Retries after the first attempt (so at most maxRetries + 1 attempts). Default 3. */
  maxRetries?: number;
  /** Per-attempt timeout in milliseconds; 0 or undefined disables it. */
  timeoutMs?: number;
  /** First backoff delay; doubles per retry. Default 500 ms. */
  baseDelayMs?: number;
  /** Cap on a computed backoff delay (a server's Retry-After is not capped by it). Default 30 s. */
  maxDelayMs?: number;
  /** A Retry-After longer than this fails the call instead of stalling the run. Default 120 s. */
  maxRetryAfterMs?: number;
  /** Called before each retry's wait; for logs and tests. */
  onRetry?: (event: RetryEvent) => void;
  /** Randomness for jitter, replaceable in tests. */
  random?: () => number;
}

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  kind: LlmErrorKind;
  status?: number;
  message: string;
}

export interface Classified {
  kind: LlmErrorKind;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
}

export class LlmTimeoutError extends LlmRequestError {
  constructor(timeoutMs: number) {
    super(`model call timed out after ${(timeoutMs / 1000).toFixed(1)} s`, {
      kind: 'timeout',
      hint: 'raise `timeoutSeconds` in the llm config, or lower maxTokens',
    });
  }
}

export class Limiter {
  readonly maxConcurrency: number;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly random: () => number;
  private readonly onRetry?: (event: RetryEvent) => void;
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(options: LimiterOptions = {}) {
    this.maxConcurrency = Math.max(1, Math.floor(options.maxConcurrency ?? 4));
    this.maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 3));
    this.timeoutMs = options.timeoutMs ?? 0;
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 120_000;
    this.random = options.random ?? Math.random;
    if (options.onRetry) this.onRetry = options.onRetry;
  }

  /** Calls currently holding a slot / waiting for one. */
  get running(): number {
    return this.active;
  }
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Run `task` in a concurrency slot, retrying transient failures. `task` receives a signal that
   * fires on the caller's abort or on this attempt's timeout; it must pass it to its I/O.
   * The slot is held through backoff waits: when a server pushes back, the whole client slows
   * down instead of letting other calls hammer it.
   */
  async run<T>(task: (signal: AbortSignal) => Promise<T>, options: { signal?: AbortSignal } = {}): Promise<T> {
    const callerSignal = options.signal;
    await this.acquire(callerSignal);
    try {
      for (let attempt = 0; ; attempt++) {
        throwIfAborted(callerSignal);
        const timeout = this.timeoutMs > 0 ? new AbortController() : null;
        const timer = timeout ? setTimeout(() => timeout.abort(new LlmTimeoutError(this.timeoutMs)), this.timeoutMs) : null;
        const { signal, dispose } = anySignal([callerSignal, timeout?.signal]);
        try {
          // Race the task against the signal: a task that ignores its signal (a hung socket in
          // a library that does not listen) must not hang the run.
          return await raceAbort(task(signal), signal);
        } catch (error) {
          if (callerSignal?.aborted) throw callerSignal.reason ?? error;
          const timedOut = timeout?.signal.aborted ?? false;
          const c = timedOut ? { kind: 'timeout' as const, retryable: true } : classifyError(error);
          const failure = timedOut ? new LlmTimeoutError(this.timeoutMs) : error;
          if (!c.retryable || attempt >= this.maxRetries) throw withAttempts(failure, attempt + 1);
          const delayMs = this.delayFor(attempt, c);
          if (delayMs === null) {
            throw new LlmRequestError(
              `the server asked to wait ${Math.round(c.retryAfterMs! / 1000)} s (Retry-After) before retrying`,
              { kind: c.kind, retryable: false, hint: 'lower maxConcurrency, or try again later' },
            );
          }
          this.onRetry?.({ attempt: attempt + 1, delayMs, kind: c.kind, ...(c.status ? { status: c.status } : {}), message: messageOf(failure) });
          await sleep(delayMs, callerSignal);
        } finally {
          if (timer) clearTimeout(timer);
          dispose();
        }
      }
    } finally {
      this.release();
    }
  }

  /** Exponential backoff with jitter, or the server's Retry-After when it gave one. */
  delayFor(attempt: number, c: Classified): number | null {
    if (c.retryAfterMs !== undefined) {
      if (c.retryAfterMs > this.maxRetryAfterMs) return null;
      return Math.max(0, c.retryAfterMs);
    }
    const exp = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt);
    // "Equal jitter": half fixed, half random, so retries of many calls spread out but none
    // comes back immediately.
    return Math.round(exp / 2 + (this.random() * exp) / 2);
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    if (this.active < this.maxConcurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.active++;
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private release(): void {
    this.active--;
    const next = this.waiting.shift();
    if (next) next();
  }
}

// ------------------------------------------------------------------ error classification

const RETRYABLE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/**
 * Decide whether an error is worth retrying. Understands `LlmRequestError`, the openai package's
 * errors (duck-typed: `status` and `headers`, and its connection/timeout error names) and plain
 * fetch failures (`TypeError: fetch failed` with a `cause.code`).
 */
export function classifyError(error: unknown): Classified {
  if (error instanceof LlmRequestError) {
    return {
      kind: error.kind,
      retryable: error.retryable,
      ...(error.status !== undefined ? { status: error.status } : {}),
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    };
  }
  // The openai package's errors all have name "Error"; tell them apart by class.
  if (error instanceof APIUserAbortError) return { kind: 'aborted', retryable: false };
  if (error instanceof APIConnectionTimeoutError) return { kind: 'timeout', retryable: true };
  const e = error as { name?: string; status?: unknown; headers?: unknown } | null;
  if (e && typeof e === 'object') {
    if (e.name === 'AbortError') return { kind: 'aborted', retryable: false };
    if (e.name === 'TimeoutError') return { kind: 'timeout', retryable: true };
    // Any HTTP error that carries its status (openai's APIError and look-alikes).
    if (typeof e.status === 'number') {
      const retryAfterMs = parseRetryAfter(e.headers);
      return { ...classifyStatus(e.status), status: e.status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    }
  }
  const code = errorCode(error);
  if (code === 'ENOTFOUND') return { kind: 'connection', retryable: false };
  if (code && RETRYABLE_CODES.has(code)) return { kind: 'connection', retryable: true };
  // openai wraps socket failures; without a code it is still a connection problem.
  if (error instanceof APIConnectionError) return { kind: 'connection', retryable: true };
  return { kind: 'other', retryable: false };
}

export function classifyStatus(status: number): { kind: LlmErrorKind; retryable: boolean } {
  let kind: LlmErrorKind;
  if (status === 429) kind = 'rate-limit';
  else if (status === 408) kind = 'timeout';
  else if (status >= 500) kind = 'server';
  else if (status === 401 || status === 403) kind = 'auth';
  else if (status >= 400) kind = 'client';
  else kind = 'other';
  return { kind, retryable: isRetryableKind(kind) };
}

/** The first `code` along an error's cause chain (fetch wraps socket errors in `cause`). */
export function errorCode(error: unknown): string | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Retry-After as milliseconds: `retry-after-ms` (OpenAI's), or `retry-after` in seconds or as
 * an HTTP date. Accepts a fetch `Headers` or a plain record.
 */
export function parseRetryAfter(headers: unknown, now: number = Date.now()): number | undefined {
  const get = (name: string): string | undefined => {
    if (!headers || typeof headers !== 'object') return undefined;
    const h = headers as { get?: (n: string) => string | null } & Record<string, unknown>;
    if (typeof h.get === 'function') return h.get(name) ?? undefined;
    const key = Object.keys(h).find((k) => k.toLowerCase() === name);
    const v = key ? h[key] : undefined;
    return Array.isArray(v) ? String(v[0]) : v === undefined ? undefined : String(v);
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

// ------------------------------------------------------------------ helpers

function withAttempts(error: unknown, attempts: number): unknown {
  if (attempts <= 1) return error;
  if (error instanceof LlmRequestError) {
    const e = new LlmRequestError(`${error.message} (gave up after ${attempts} attempts)`, {
      kind: error.kind,
      retryable: error.retryable,
      ...(error.status !== undefined ? { status: error.status } : {}),
      ...(error.hint !== undefined ? { hint: error.hint } : {}),
    });
    return e;
  }
  if (error instanceof Error) error.message = `${error.message} (gave up after ${attempts} attempts)`;
  return error;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('aborted', 'AbortError');
}

/** One signal that fires when any of `signals` fires; `dispose` detaches the listeners. */
function anySignal(signals: Array<AbortSignal | undefined>): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const attached: Array<[AbortSignal, () => void]> = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const onAbort = () => controller.abort(s.reason);
    s.addEventListener('abort', onAbort, { once: true });
    attached.push([s, onAbort]);
  }
  return {
    signal: controller.signal,
    dispose: () => {
      for (const [s, f] of attached) s.removeEventListener('abort', f);
    },
  };
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
