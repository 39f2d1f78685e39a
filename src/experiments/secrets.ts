/**
 * Secrets never reach `config.yaml`, MLflow params or artifacts. The tracking module owns the
 * general redaction; this is the runner's view of it, applied to configs before they are written
 * anywhere.
 */
const secretKey = /(api[_-]?key|apikey|token|secret|password|authorization|bearer)/i;

export const REDACTED = '[redacted]';

export function redactConfig<T>(value: T): T {
  return redact(value) as T;
}

function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = secretKey.test(k) && v !== undefined && v !== null && v !== '' ? REDACTED : redact(v);
    }
    return out;
  }
  return value;
}
