import { sanitizeKey } from './limits';
import type { ParamValue } from './types';
import { REDACTED, isSecretKey, knownSecrets, redactText } from '../common/secrets';

/**
 * Secrets never reach MLflow. Two nets, because each misses what the other catches: keys that
 * name a secret (`llm.apiKey`, `hf_token`, `Authorization`) have their values masked whatever
 * the value is, and any value that contains a known secret (an API key found in the environment
 * or registered by the LLM layer) is masked whatever its key is — e.g. a base URL with the key
 * in its query string. The registry and the text redactor live in src/common/secrets.ts, shared
 * with the LLM layer and every other sink; they are re-exported here for tracking's callers.
 */
export {
  REDACTED,
  containsSecret,
  isSecretKey,
  knownSecrets,
  redactBytes,
  redactDeep,
  redactText,
  registerSecret,
} from '../common/secrets';

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
