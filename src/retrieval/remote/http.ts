/**
 * The one HTTP path of retrieval servers (ColBERTv2's API, Anserini/Pyserini's REST search):
 * JSON over fetch with a per-attempt timeout, retries through the project's retry core
 * (src/common/retry.ts, as the LLM limiter and the MLflow client), and a bound on the body read,
 * so a server that hangs, flaps or answers a gigabyte costs a bounded time and memory and ends in
 * one line naming the URL.
 */
import { parseRetryAfter, RetryPolicy, withRetries, type RetryClassification } from '../../common/retry';
import { AmbiqaError } from '../../errors';

export interface HttpJsonOptions {
  method?: 'GET' | 'POST';
  /** A JSON body (POST). */
  body?: unknown;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
  /** Largest body read; a larger one fails without being read whole. Default 32 MiB. */
  maxBytes?: number;
  /** Shared by every call to one server, so a server that is down opens its circuit breaker. */
  policy?: RetryPolicy;
  signal?: AbortSignal;
  /** What the caller calls this server in messages, e.g. `retriever.url`. */
  field?: string;
  /** Extra request headers (e.g. `authorization` from credentials the caller took out of the URL). */
  headers?: Record<string, string>;
}

/** A URL fit for a message: no credentials, no query string (it carries the user's question). */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return JSON.stringify(url.slice(0, 200));
  }
}

/** An HTTP failure with its status (0: no answer at all). */
export class HttpStatusError extends AmbiqaError {
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

function classify(error: unknown): RetryClassification {
  if (error instanceof HttpStatusError) {
    return { retryable: error.status === 0 || RETRYABLE_STATUS.has(error.status), ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}) };
  }
  // A malformed body is the server's answer, not a passing fault.
  return { retryable: false };
}

/** Read at most `maxBytes` of a response body, failing as soon as it is exceeded. */
async function readBounded(response: Response, maxBytes: number, where: string): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new AmbiqaError(`${where}: the answer is ${declared} bytes, over the ${maxBytes}-byte limit`);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new AmbiqaError(`${where}: the answer is over the ${maxBytes}-byte limit`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** GET or POST `url` and parse its JSON answer; the caller checks the shape. */
export async function fetchJson(url: string, options: HttpJsonOptions = {}): Promise<unknown> {
  const where = `${options.field ? `${options.field} ` : ''}${describeUrl(url)}`;
  const policy = options.policy ?? new RetryPolicy({ maxRetries: 2, baseDelayMs: 200, maxDelayMs: 2_000 });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  const text = await withRetries(
    async (signal) => {
      let response: Response;
      try {
        response = await fetch(url, {
          method: options.method ?? 'GET',
          signal,
          headers: { accept: 'application/json', ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
          ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        });
      } catch (error) {
        if (signal.aborted && options.signal?.aborted) throw error;
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        throw new HttpStatusError(`${where}: no answer (${cause})`, 0);
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new HttpStatusError(`${where}: HTTP ${response.status}`, response.status, parseRetryAfter(response.headers));
      }
      return readBounded(response, maxBytes, where);
    },
    {
      policy,
      classify,
      attemptTimeoutMs: timeoutMs,
      timeoutError: () => new HttpStatusError(`${where}: no answer within ${timeoutMs} ms`, 0),
      ...(options.signal ? { signal: options.signal } : {}),
      giveUp: (error, info) =>
        error instanceof AmbiqaError && info.attempts > 1 ? new AmbiqaError(`${error.message} (after ${info.attempts} attempts)`) : error,
    },
  );
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AmbiqaError(`${where}: the answer is not JSON (starts ${JSON.stringify(text.slice(0, 60))})`);
  }
}
