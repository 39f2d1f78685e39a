import { anySignal, raceAbort, sleep, throwIfAborted } from './abort';

/**
 * The one retry core: the LLM limiter (src/llm/limiter.ts) and the MLflow client
 * (src/tracking/client.ts) both retry through `withRetries`, so backoff, Retry-After, per-attempt
 * timeouts, abort and giving up behave alike and are tested in one place.
 *
 * How many times a call may retry is decided by a `RetryPolicy`, shared by every call of a run:
 *
 * - **Adaptive per-call limit** (the default). A fixed "4 attempts per call" loses questions on an
 *   unlucky endpoint: at a 50% failure rate one call in sixteen fails four times in a row. The
 *   policy instead watches the failure rate f of all attempts in the run and lets a call go on
 *   while its own streak of k failures is still plausible as bad luck (f^k ≥ giveUpProbability,
 *   one in a million by default). At f = 0.5 that is 20 attempts, at f = 0.1 six; a request that
 *   keeps failing while others succeed is then recognised as broken in itself and given up.
 * - **Circuit breaker**. When `breakerThreshold` attempts in a row fail across the whole run, with
 *   no success in between, the endpoint is down, not unlucky: the breaker opens and calls fail at
 *   once (so the runner stops after a few failed questions instead of every call waiting through
 *   its backoff). After `breakerCooldownMs` attempts go out again: a success closes the breaker,
 *   a failure (the streak is still over the threshold) opens it for another period.
 * - A fixed `maxRetries` replaces the adaptive limit for those who want the old behaviour.
 */
export interface RetryPolicyOptions {
  /** A fixed cap on retries per call. Unset: the adaptive limit described above. */
  maxRetries?: number;
  /** First backoff delay; doubles per retry. Default 500 ms. */
  baseDelayMs?: number;
  /** Cap on a computed backoff delay (a server's Retry-After is not capped by it). Default 30 s. */
  maxDelayMs?: number;
  /** A Retry-After longer than this gives up instead of stalling the run. Default 120 s. */
  maxRetryAfterMs?: number;
  /** Adaptive limit: give up when a streak this improbable under the run's failure rate. Default 1e-6. */
  giveUpProbability?: number;
  /** Adaptive limit: never fewer retries than this per call. Default 3. */
  minRetries?: number;
  /** Adaptive limit: never more retries than this per call. Default 30. */
  retryCeiling?: number;
  /** Failed attempts in a row across the run that open the circuit breaker. Default 30; 0 disables. */
  breakerThreshold?: number;
  /** How long an open breaker refuses attempts. Default: maxDelayMs. */
  breakerCooldownMs?: number;
  /** Randomness for jitter, replaceable in tests. */
  random?: () => number;
  now?: () => number;
}

export interface RetryClassification {
  retryable: boolean;
  /** The server's Retry-After in milliseconds, when it sent one. */
  retryAfterMs?: number;
}

export type GiveUpReason = 'not-retryable' | 'exhausted' | 'retry-after-too-long' | 'circuit-open';

export class RetryPolicy {
  readonly maxRetries: number | undefined;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRetryAfterMs: number;
  readonly breakerThreshold: number;
  private readonly giveUpProbability: number;
  private readonly minRetries: number;
  private readonly retryCeiling: number;
  private readonly breakerCooldownMs: number;
  private readonly random: () => number;
  private readonly now: () => number;
  /** Attempts and failures of the whole run; the failure rate drives the adaptive limit. */
  attempts = 0;
  failures = 0;
  /** Failed attempts since the last success, across all calls. */
  failureStreak = 0;
  private openUntil = 0;

  constructor(options: RetryPolicyOptions = {}) {
    if (options.maxRetries !== undefined) this.maxRetries = Math.max(0, Math.floor(options.maxRetries));
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 120_000;
    this.giveUpProbability = options.giveUpProbability ?? 1e-6;
    this.minRetries = options.minRetries ?? 3;
    this.retryCeiling = Math.max(this.minRetries, options.retryCeiling ?? 30);
    this.breakerThreshold = Math.max(0, Math.floor(options.breakerThreshold ?? 30));
    this.breakerCooldownMs = options.breakerCooldownMs ?? this.maxDelayMs;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
  }

  /**
   * The run's failure rate so far, with a prior of one failure in four attempts so that the first
   * calls neither give up at once nor retry forever.
   */
  failureRate(): number {
    return (this.failures + 1) / (this.attempts + 4);
  }

  /** Retries a call may make, given what the run has seen so far. */
  retriesAllowed(): number {
    if (this.maxRetries !== undefined) return this.maxRetries;
    const f = Math.min(this.failureRate(), 0.999);
    const attempts = Math.ceil(Math.log(this.giveUpProbability) / Math.log(f));
    return Math.min(this.retryCeiling, Math.max(this.minRetries, attempts - 1));
  }

  recordSuccess(): void {
    this.attempts++;
    this.failureStreak = 0;
    this.openUntil = 0;
  }

  recordFailure(): void {
    this.attempts++;
    this.failures++;
    this.failureStreak++;
    if (this.breakerThreshold > 0 && this.failureStreak >= this.breakerThreshold) {
      this.openUntil = this.now() + this.breakerCooldownMs;
    }
  }

  /** True while the breaker refuses attempts. */
  isOpen(): boolean {
    return this.openUntil > this.now();
  }

  /** Exponential backoff with jitter, or the server's Retry-After; null when that is too long. */
  delayFor(retry: number, c: RetryClassification): number | null {
    if (c.retryAfterMs !== undefined) {
      if (c.retryAfterMs > this.maxRetryAfterMs) return null;
      return Math.max(0, c.retryAfterMs);
    }
    const exp = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** retry);
    // "Equal jitter": half fixed, half random, so retries of many calls spread out but none
    // comes back immediately.
    return Math.round(exp / 2 + (this.random() * exp) / 2);
  }
}

export interface RetryEventInfo {
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: unknown;
  classification: RetryClassification;
}

export interface WithRetriesOptions {
  policy: RetryPolicy;
  classify: (error: unknown) => RetryClassification;
  /** The caller's signal: aborts the attempt in flight and any backoff wait. */
  signal?: AbortSignal;
  /** Per-attempt timeout; 0 or unset disables it. */
  attemptTimeoutMs?: number;
  /** The error an attempt that timed out fails with (it is classified like any other). */
  timeoutError?: () => unknown;
  onRetry?: (info: RetryEventInfo) => void;
  /** Turns the last error into the one thrown (e.g. to say how many attempts were made). */
  giveUp?: (error: unknown, info: { attempts: number; reason: GiveUpReason; retryAfterMs?: number }) => unknown;
}

/**
 * Run `task` until it succeeds, the policy gives up, or the caller aborts. `task` receives a
 * signal that fires on the caller's abort or on this attempt's timeout; it should pass it to its
 * I/O, but one that does not is abandoned anyway when the signal fires.
 */
export async function withRetries<T>(task: (signal: AbortSignal, attempt: number) => Promise<T>, options: WithRetriesOptions): Promise<T> {
  const { policy, signal: callerSignal } = options;
  const giveUp = (error: unknown, attempts: number, reason: GiveUpReason, retryAfterMs?: number): unknown =>
    options.giveUp ? options.giveUp(error, { attempts, reason, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }) : error;
  let lastError: unknown;
  for (let attempt = 0; ; attempt++) {
    throwIfAborted(callerSignal);
    if (policy.isOpen()) throw giveUp(lastError, attempt, 'circuit-open');
    const timeoutMs = options.attemptTimeoutMs ?? 0;
    const timeout = timeoutMs > 0 ? new AbortController() : null;
    const timer = timeout ? setTimeout(() => timeout.abort(options.timeoutError?.() ?? new Error(`attempt timed out after ${timeoutMs} ms`)), timeoutMs) : null;
    const { signal, dispose } = anySignal([callerSignal, timeout?.signal]);
    try {
      const value = await raceAbort(task(signal, attempt), signal);
      policy.recordSuccess();
      return value;
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason ?? error;
      const timedOut = timeout?.signal.aborted ?? false;
      const failure = timedOut ? timeout!.signal.reason : error;
      lastError = failure;
      const c = options.classify(failure);
      if (!c.retryable) throw giveUp(failure, attempt + 1, 'not-retryable');
      policy.recordFailure();
      if (attempt >= policy.retriesAllowed()) throw giveUp(failure, attempt + 1, 'exhausted');
      const delayMs = policy.delayFor(attempt, c);
      if (delayMs === null) throw giveUp(failure, attempt + 1, 'retry-after-too-long', c.retryAfterMs);
      options.onRetry?.({ attempt: attempt + 1, delayMs, error: failure, classification: c });
      await sleep(delayMs, callerSignal);
    } finally {
      if (timer) clearTimeout(timer);
      dispose();
    }
  }
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
