/**
 * The one registry of secrets the process uses, and the one redactor every sink calls: the run
 * directory's writers, MLflow params/artifacts/traces, reports, the CLI's stdout and stderr,
 * notebook displays and the LLM client (completions, cached or live, before anyone sees them).
 *
 * A secret is known when it is (a) the value of an environment variable whose name says secret
 * (`OPENAI_API_KEY`, `HF_TOKEN`, `MLFLOW_TRACKING_PASSWORD`), or (b) registered here by the
 * code that reads it — the OpenAI-compatible provider registers the key it read whatever its
 * variable is called (`apiKeyEnv: MYVAR`). On top of that, the password of any URL with
 * credentials (`scheme://user:password@host`) is masked wherever it appears. See docs/security.md.
 *
 * This module sits below llm/ and tracking/ so that both can use it (src/common).
 */

export const REDACTED = '[redacted]';

/** Secrets shorter than this are not searched for inside text: too many false matches. */
export const MIN_SECRET_LENGTH = 8;

const registered = new Set<string>();

/**
 * Tell the redactor about a secret the process uses (an API key read from a variable of any
 * name, a password from a URL). Idempotent; too-short values are ignored (see MIN_SECRET_LENGTH).
 */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= MIN_SECRET_LENGTH) registered.add(value);
}

/** Register the password (and a token-like user name) of a URL with credentials. */
export function registerUrlCredentials(url: string | undefined | null): void {
  if (!url) return;
  try {
    const u = new URL(url);
    if (u.password) registerSecret(decodeURIComponent(u.password));
  } catch {
    /* not a URL: nothing to register */
  }
}

/**
 * Register the key a run's config points at (`llm.apiKeyEnv`), if it is set in this process's
 * environment: a command that reads an old run (report, merge, sync) then masks that key even
 * though it never builds the provider that would have registered it.
 */
export function registerKeyOfConfig(config: unknown, env: NodeJS.ProcessEnv = process.env): void {
  const llm = (config as { llm?: { apiKeyEnv?: unknown } } | null)?.llm;
  const name = typeof llm?.apiKeyEnv === 'string' ? llm.apiKeyEnv : 'OPENAI_API_KEY';
  registerSecret(env[name]);
}

/** For tests: forget registered secrets. */
export function clearRegisteredSecrets(): void {
  registered.clear();
}

/** Split `llm.apiKey`, `OPENAI_API_KEY`, `x-api-key` into lower-case words. */
function words(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

const SECRET_WORDS = new Set([
  'apikey',
  'password',
  'passwd',
  'passphrase',
  'secret',
  'authorization',
  'bearer',
  'credential',
  'credentials',
  'cookie',
  'token',
  'privatekey',
]);

/**
 * Does this key name a secret? Word-based so that `max_tokens`, `tokenizer` and `prompt_tokens`
 * stay visible while `token`, `hfToken`, `api_key` and `MLFLOW_TRACKING_PASSWORD` do not. Only
 * the key's last segment counts for dotted keys (`auth.enabled` is not a secret; `llm.auth` is).
 */
export function isSecretKey(key: string): boolean {
  const lastSegment = key.split(/[./]/).pop() ?? key;
  const w = words(lastSegment);
  // `apiKeyEnv: OPENAI_API_KEY` names the variable that holds the key, not the key: keep it
  // visible so a run records where its key came from (values are still checked below).
  if (w.length > 1 && w[w.length - 1] === 'env') return false;
  for (let i = 0; i < w.length; i++) {
    if (SECRET_WORDS.has(w[i])) return true;
    if (w[i + 1] === 'key' && ['api', 'private', 'access', 'secret', 'signing', 'encryption'].includes(w[i])) return true;
  }
  return false;
}

/** Secrets known right now: values of secret-named environment variables, plus registered ones. */
export function knownSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set(registered);
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= MIN_SECRET_LENGTH && isSecretKey(name)) found.add(value);
  }
  // Longest first, so that a secret containing another is replaced whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/** `scheme://user:password@` → `scheme://user:[redacted]@`, in any text. */
const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@"'<>]+):[^@\s/"'<>]+@/gi;

/** Replace every occurrence of a known secret, and every URL password, in a text. */
export function redactText(text: string, secrets: string[] = knownSecrets()): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  if (out.includes('@')) out = out.replace(URL_CREDENTIALS, `$1:${REDACTED}@`);
  return out;
}

export function containsSecret(text: string, secrets: string[] = knownSecrets()): boolean {
  return secrets.some((s) => text.includes(s));
}

/**
 * A deep copy of a JSON-like value with every string redacted and, when `maskSecretKeys`, the
 * values of secret-named keys (`apiKey`, `password`, `token`) replaced whole. For sinks that take
 * structured data (MLflow traces and params, configs, notebook displays).
 */
export function redactDeep<T>(value: T, options: { maskSecretKeys?: boolean; secrets?: string[] } = {}): T {
  const secrets = options.secrets ?? knownSecrets();
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') return redactText(v, secrets);
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        out[k] = options.maskSecretKeys && isSecretKey(k) && x !== undefined && x !== null && x !== '' ? REDACTED : visit(x);
      }
      return out;
    }
    return v;
  };
  return visit(value) as T;
}

/**
 * A file about to be uploaded, with every known secret replaced. Works on bytes, so binary files
 * pass through untouched unless they really contain a secret. Returns the input itself when
 * nothing matched (the common case costs one scan per secret).
 */
export function redactBytes(data: Buffer, secrets: string[] = knownSecrets()): { data: Buffer; replaced: number } {
  let out = data;
  let replaced = 0;
  for (const secret of secrets) {
    const needle = Buffer.from(secret, 'utf8');
    let at = out.indexOf(needle);
    if (at < 0) continue;
    const parts: Buffer[] = [];
    let from = 0;
    const mask = Buffer.from(REDACTED, 'utf8');
    while (at >= 0) {
      parts.push(out.subarray(from, at), mask);
      replaced++;
      from = at + needle.length;
      at = out.indexOf(needle, from);
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return { data: out, replaced };
}

/**
 * Mask known secrets in everything this process writes to stdout and stderr (the CLI installs
 * it first thing, and a tslab kernel when it loads the notebook helpers): error messages,
 * progress lines, warnings from any library. Returns a function
 * that restores the streams. A secret split across two writes is not caught; every line the
 * project prints is one write.
 */
let restoreStreams: (() => void) | null = null;

export function redactStandardStreams(): () => void {
  // Once per process: wrapping twice would only mask twice.
  if (restoreStreams) return restoreStreams;
  const restore: Array<() => void> = [];
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write;
    const write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]): boolean {
      let masked = chunk;
      if (typeof chunk === 'string') masked = redactText(chunk);
      else if (chunk instanceof Uint8Array) masked = redactBytes(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)).data;
      return (original as (...args: unknown[]) => boolean).call(this, masked, ...rest);
    };
    stream.write = write as typeof stream.write;
    restore.push(() => {
      stream.write = original;
    });
  }
  restoreStreams = () => {
    for (const f of restore) f();
    restoreStreams = null;
  };
  return restoreStreams;
}
