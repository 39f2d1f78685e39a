import { isSecretKey, knownSecrets, redactText, REDACTED } from '../tracking/redact';

/**
 * Secrets never reach `config.yaml`, MLflow params or artifacts. The tracking module decides
 * what a secret is (secret-named keys, and known secret values such as an API key in the
 * environment); this applies it to a whole nested config before it is written anywhere.
 */
export { REDACTED };

export function redactConfig<T>(value: T): T {
  return redact(value, knownSecrets()) as T;
}

function redact(value: unknown, secrets: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, secrets));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = isSecretKey(k) && v !== undefined && v !== null && v !== '' ? REDACTED : redact(v, secrets);
    }
    return out;
  }
  return typeof value === 'string' ? redactText(value, secrets) : value;
}
