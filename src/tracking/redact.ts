import { sanitizeKey } from './limits';
import type { ParamValue } from './types';

/**
 * Secrets never reach MLflow. Two nets, because each misses what the other catches: keys that
 * name a secret (`llm.apiKey`, `hf_token`, `Authorization`) have their values masked whatever
 * the value is, and any value that contains a known secret (an API key found in the environment
 * or registered by the LLM layer) is masked whatever its key is — e.g. a base URL with the key
 * in its query string.
 */

export const REDACTED = '[redacted]';

/** Secrets shorter than this are not searched for inside values: too many false matches. */
const MIN_SECRET_LENGTH = 8;

const registered = new Set<string>();

/** Tell the redactor about a secret that is not in the environment (e.g. read from a config). */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= MIN_SECRET_LENGTH) registered.add(value);
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

/** Replace every occurrence of a known secret in a text. */
export function redactText(text: string, secrets: string[] = knownSecrets()): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

export function containsSecret(text: string, secrets: string[] = knownSecrets()): boolean {
  return secrets.some((s) => text.includes(s));
}

export interface RedactOptions {
  /** 'mask' keeps the key with the value `[redacted]` (so one can see a key was configured); 'drop' removes it. */
  mode?: 'mask' | 'drop';
  secrets?: string[];
}

/** A copy of a flat record with secret keys masked or dropped and secret values masked. */
export function redactSecrets<V extends ParamValue>(record: Record<string, V>, options: RedactOptions = {}): Record<string, V | string> {
  const secrets = options.secrets ?? knownSecrets();
  const out: Record<string, V | string> = {};
  for (const [key, value] of Object.entries(record)) {
    if (isSecretKey(key)) {
      if (options.mode !== 'drop') out[key] = REDACTED;
      continue;
    }
    out[key] = typeof value === 'string' ? redactText(value, secrets) : value;
  }
  return out;
}

/**
 * Turn a nested config into MLflow params: `{ llm: { model: 'x', stop: ['a'] } }` →
 * `{ 'llm.model': 'x', 'llm.stop': '["a"]' }`. Arrays of scalars stay one param (a list of stop
 * words is one setting); arrays of objects are indexed (`retrievers.0.k`). null and undefined
 * are skipped (an unset option is not a param); keys are made valid MLflow keys. Secrets are
 * not removed here: call redactSecrets on the result.
 */
export function flattenParams(config: unknown, prefix = ''): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  const visit = (value: unknown, path: string): void => {
    if (value === null || value === undefined) return;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      out[sanitizeKey(path || 'value')] = value;
      return;
    }
    if (typeof value === 'bigint') {
      out[sanitizeKey(path)] = value.toString();
      return;
    }
    if (value instanceof Date) {
      out[sanitizeKey(path)] = value.toISOString();
      return;
    }
    if (Array.isArray(value)) {
      if (value.every((v) => v === null || typeof v !== 'object')) {
        out[sanitizeKey(path)] = JSON.stringify(value);
      } else {
        value.forEach((v, i) => visit(v, path ? `${path}.${i}` : String(i)));
      }
      return;
    }
    if (typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length === 0 && path) out[sanitizeKey(path)] = '{}';
      for (const [k, v] of entries) visit(v, path ? `${path}.${k}` : k);
    }
  };
  visit(config, prefix);
  return out;
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
