import { onAbort, sleep, throwIfAborted } from '../common/abort';
import { RetryPolicy, parseRetryAfter, withRetries } from '../common/retry';
import { LlmRequestError, classificationOf, classifyStatus, errorCode, type ErrorClassification, type LlmErrorKind } from './errors';

/**
 * The one place that decides concurrency, retries and timeouts for model calls. Every call of
 * `LlmClient` goes through `Limiter.run`; nothing else retries (the openai client's own retries
 * are switched off). The retrying itself is the project's one retry core (src/common/retry.ts),
 * shared with the MLflow client; this file adds the concurrency slots and what counts as
 * retryable for a model call.
 */
export interface LimiterOptions {
  /** Calls running at once; the rest wait in FIFO order. Default 4. */
  maxConcurrency?: number;
  /**
   * A fixed cap on retries per call. Unset (the default): the adaptive limit of the run's retry
   * policy (src/common/retry.ts), which keeps retrying while failures look like bad luck.
   */
  maxRetries?: number;
  /** Per-attempt timeout in milliseconds; 0 or undefined disables it. */
  timeoutMs?: number;
  /** First backoff delay; doubles per retry. Default 500 ms. */
  baseDelayMs?: number;
  /** Cap on a computed backoff delay (a server's Retry-After is not capped by it). Default 30 s. */
  maxDelayMs?: number;
  /** A Retry-After longer than this fails the call instead of stalling the run. Default 120 s. */
  maxRetryAfterMs?: number;
  /** Failed attempts in a row, across all calls, that open the circuit breaker. Default 30; 0 disables. */
  breakerThreshold?: number;
  /** How long an open breaker fails calls at once before letting one through. Default maxDelayMs. */
  breakerCooldownMs?: number;
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

/** How the limiter sees a failure (errors.ts). */
export type Classified = ErrorClassification;

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
  readonly timeoutMs: number;
  /** The run's retry policy: failure rate, adaptive per-call limit, circuit breaker. */
  readonly policy: RetryPolicy;
  private readonly onRetry?: (event: RetryEvent) => void;
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(options: LimiterOptions = {}) {
    this.maxConcurrency = Math.max(1, Math.floor(options.maxConcurrency ?? 4));
    this.timeoutMs = options.timeoutMs ?? 0;
    this.policy = new RetryPolicy({
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.baseDelayMs !== undefined ? { baseDelayMs: options.baseDelayMs } : {}),
      ...(options.maxDelayMs !== undefined ? { maxDelayMs: options.maxDelayMs } : {}),
      ...(options.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: options.maxRetryAfterMs } : {}),
      ...(options.breakerThreshold !== undefined ? { breakerThreshold: options.breakerThreshold } : {}),
      ...(options.breakerCooldownMs !== undefined ? { breakerCooldownMs: options.breakerCooldownMs } : {}),
      ...(options.random ? { random: options.random } : {}),
    });
    if (options.onRetry) this.onRetry = options.onRetry;
  }

  /** Retries a call may make now (fixed, or adaptive to the run's failure rate). */
  get maxRetries(): number {
    return this.policy.retriesAllowed();
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
      return await withRetries((signal) => task(signal), {
        policy: this.policy,
        classify: classifyError,
        ...(callerSignal ? { signal: callerSignal } : {}),
        attemptTimeoutMs: this.timeoutMs,
        timeoutError: () => new LlmTimeoutError(this.timeoutMs),
        onRetry: ({ attempt, delayMs, error }) => {
          const c = classifyError(error);
          this.onRetry?.({ attempt, delayMs, kind: c.kind, ...(c.status ? { status: c.status } : {}), message: messageOf(error) });
        },
        giveUp: (error, { attempts, reason, retryAfterMs }) => {
          if (reason === 'retry-after-too-long') {
            const c = classifyError(error);
            return new LlmRequestError(
              `the server asked to wait ${Math.round(retryAfterMs! / 1000)} s (Retry-After) before retrying`,
              { kind: c.kind, retryable: false, hint: 'lower maxConcurrency, or try again later' },
            );
          }
          if (reason === 'circuit-open') {
            const last = error === undefined ? '' : `; last error: ${messageOf(error)}`;
            return new LlmRequestError(
              `not calling the model: the last ${this.policy.failureStreak} attempts across the run all failed (circuit breaker open)${last}`,
              { kind: 'connection', retryable: false, hint: 'check that the endpoint is up, then finish the run with --resume' },
            );
          }
          return withAttempts(error, attempts);
        },
      });
    } finally {
      this.release();
    }
  }

  /** Exponential backoff with jitter, or the server's Retry-After when it gave one. */
  delayFor(attempt: number, c: Classified): number | null {
    return this.policy.delayFor(attempt, c);
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    if (this.active < this.maxConcurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      let detach = () => {};
      const grant = () => {
        detach();
        this.active++;
        resolve();
      };
      if (signal) {
        detach = onAbort(signal, () => {
          const i = this.waiting.indexOf(grant);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal.reason);
        });
      }
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

/**
 * Decide whether an error is worth retrying. Providers throw their failures as `LlmRequestError`
 * with the kind they classified (errors.ts); besides those the limiter knows only the standard
 * abort and timeout errors (`AbortError`, `TimeoutError`). Anything else is a bug or a failure no
 * provider understood: `other`, never retried.
 */
export function classifyError(error: unknown): Classified {
  if (error instanceof LlmRequestError) return classificationOf(error);
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'AbortError') return { kind: 'aborted', retryable: false };
  if (name === 'TimeoutError') return { kind: 'timeout', retryable: true };
  return { kind: 'other', retryable: false };
}

/** Moved to errors.ts (the kinds' vocabulary, for providers); re-exported for older imports. */
export { classifyStatus, errorCode };

/** Retry-After parsing lives in the retry core; re-exported for the provider and tests. */
export { parseRetryAfter };

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

/** Re-exported for callers that used the limiter's; the implementation lives in src/common/abort.ts. */
export { sleep };
