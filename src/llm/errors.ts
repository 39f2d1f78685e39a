import { AmbiqaError } from '../errors';

/**
 * Why a model call failed, in the terms the limiter decides on. Each provider classifies its own
 * failures (its SDK's error classes, its engine's) and throws them as `LlmRequestError`, so the
 * limiter decides on the kind alone and never knows an SDK; anything else that reaches it is
 * `other` and is not retried (limiter.ts).
 */
export type LlmErrorKind =
  | 'rate-limit' // 429: retry after the server's Retry-After or a backoff
  | 'server' // 5xx: retry
  | 'timeout' // our per-call timeout or the server's 408: retry
  | 'connection' // reset, refused, DNS hiccup: retry
  | 'auth' // 401/403: never retry, the key is wrong
  | 'client' // other 4xx: never retry, the request is wrong
  | 'aborted' // the caller aborted: never retry
  | 'config' // a missing model file, an unknown model: never retry
  | 'other';

export class LlmRequestError extends AmbiqaError {
  readonly kind: LlmErrorKind;
  readonly status?: number;
  /** The server's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs?: number;
  readonly retryable: boolean;

  constructor(
    message: string,
    details: { kind: LlmErrorKind; status?: number; retryAfterMs?: number; retryable?: boolean; hint?: string },
  ) {
    super(message, details.hint);
    this.name = 'LlmRequestError';
    this.kind = details.kind;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    this.retryable = details.retryable ?? isRetryableKind(details.kind);
  }
}

export function isRetryableKind(kind: LlmErrorKind): boolean {
  return kind === 'rate-limit' || kind === 'server' || kind === 'timeout' || kind === 'connection';
}

/** A failure as the limiter decides on it: what went wrong, whether another attempt may help, and when. */
export interface ErrorClassification {
  kind: LlmErrorKind;
  retryable: boolean;
  status?: number;
  /** The server's Retry-After, in milliseconds. */
  retryAfterMs?: number;
}

/** What an `LlmRequestError` says about itself. */
export function classificationOf(error: LlmRequestError): ErrorClassification {
  return {
    kind: error.kind,
    retryable: error.retryable,
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
  };
}

// ------------------------------------------------------------------ for providers that speak HTTP

/** The kind of an HTTP status: 429 rate limit, 408 timeout, 5xx server, 401/403 auth, other 4xx client. */
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

/** Socket and DNS failures (Node's and undici's codes) that another attempt may get past. */
export const RETRYABLE_CONNECTION_CODES: ReadonlySet<string> = new Set([
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

// Shapes that look like API keys even when we were not told the key (a server echoing a
// different key, a key pasted into a base URL). Conservative: long opaque tokens only.
const KEY_PATTERNS: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /([?&](?:api[_-]?key|key|token|access_token)=)[^&\s]+/gi,
];

/**
 * Remove secrets from text that may reach a person, a log or MLflow: the given secrets verbatim,
 * anything shaped like an API key, and the password of any URL with credentials.
 */
export function redactSecrets(text: string, secrets: Array<string | undefined> = []): string {
  let out = text;
  for (const secret of secrets) {
    // Very short "secrets" (e.g. a dummy `x`) would shred ordinary text; they are not secret.
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  out = out.replace(KEY_PATTERNS[1]!, '$1 ***');
  out = out.replace(KEY_PATTERNS[0]!, 'sk-***');
  out = out.replace(KEY_PATTERNS[2]!, '$1***');
  out = out.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+):[^@\s/]+@/gi, '$1:***@');
  return out;
}

/** A URL fit for messages and logs: credentials and key-like query parameters removed. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return redactSecrets(u.toString().replace(/\/$/, url.endsWith('/') ? '/' : ''));
  } catch {
    return redactSecrets(url);
  }
}
