import { AmbiqaError } from '../errors';

/**
 * MLflow's server-side limits, read from `mlflow/utils/validation.py` of MLflow 3.17 (the same
 * numbers hold from 2.x on). The server rejects a whole `log-batch` request that breaks any of
 * them, so the client splits and truncates before sending.
 */
export const MLFLOW_LIMITS = {
  metricsPerBatch: 1000,
  paramsPerBatch: 100,
  tagsPerBatch: 100,
  entitiesPerBatch: 1000,
  /** The server measures the JSON request text; we stay below it with room for the envelope. */
  batchRequestChars: 1_000_000,
  /** `MAX_PARAM_VAL_LENGTH` (500 before MLflow 2.9, 6000 since). */
  paramValueChars: 6000,
  /** `MAX_TAG_VAL_LENGTH`. */
  tagValueChars: 8000,
  /** `MAX_ENTITY_KEY_LENGTH`, for param, metric and tag keys. */
  keyChars: 250,
  experimentNameChars: 500,
} as const;

/**
 * Keys may only hold letters, digits, `_ - . / : ` and spaces, and must not look like a path
 * that normalises to something else (`a//b`, `./a`, `a/`), because the file store uses them as
 * file names. Mirrors `validate_param_and_metric_name` and `path_not_unique`.
 */
const KEY_CHARS = /^[/\p{L}\p{N}_.\- :]*$/u;

export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'it is empty';
  if (!KEY_CHARS.test(key)) return 'it may only contain letters, digits, _ - . / : and spaces';
  if (codePointLength(key) > MLFLOW_LIMITS.keyChars) return `it is longer than ${MLFLOW_LIMITS.keyChars} characters`;
  if (key.startsWith('/') || key.startsWith('..') || key === '.' || normalisePosix(key) !== key) {
    return 'it would name a different path once normalised (no leading /, no //, no ./ or ../, no trailing /)';
  }
  return undefined;
}

export function assertValidKey(kind: 'param' | 'metric' | 'tag', key: string): void {
  const problem = keyProblem(key);
  if (problem) {
    throw new AmbiqaError(
      `MLflow ${kind} key '${key.slice(0, 80)}' is not allowed: ${problem}`,
      'rename the key (flattenParams() in src/tracking/redact.ts turns any config into valid keys)',
    );
  }
}

/** Make any string a valid key: bad characters become `_`, path oddities are smoothed out. */
export function sanitizeKey(key: string): string {
  let out = key.replace(/[^/\p{L}\p{N}_.\- :]/gu, '_');
  out = out.replace(/\/{2,}/g, '/').replace(/^\/+/, '').replace(/\/+$/, '');
  out = out
    .split('/')
    .map((part) => (part === '.' || part === '..' ? part.replace(/\./g, '_') : part))
    .join('/');
  if (out.length === 0) out = '_';
  const chars = Array.from(out);
  return chars.length > MLFLOW_LIMITS.keyChars ? chars.slice(0, MLFLOW_LIMITS.keyChars).join('') : out;
}

/**
 * Values longer than the server allows are cut, keeping the start, and end with a marker that
 * says how long the original was, so that nobody mistakes a truncated prompt for the real one.
 * Lengths count code points, as Python's `len` does on the server.
 */
export function truncateValue(value: string, limit: number): string {
  if (value.length <= limit) return value; // UTF-16 length ≥ code points: nothing to cut
  const chars = Array.from(value);
  if (chars.length <= limit) return value;
  const marker = `…[truncated, ${chars.length} chars]`;
  return chars.slice(0, limit - marker.length).join('') + marker;
}

export function codePointLength(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

function normalisePosix(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
      else parts.push('..');
      continue;
    }
    parts.push(part);
  }
  return parts.join('/');
}
