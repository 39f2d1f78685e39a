import { AmbiqaError } from '../errors';

/**
 * Why a model call failed, in the terms the limiter decides on. Providers translate their own
 * errors into `LlmRequestError` so that the limiter never has to know an SDK; errors that reach
 * the limiter untranslated (plain fetch failures, SDK errors) are classified in limiter.ts.
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
