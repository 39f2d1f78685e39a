import YAML from 'yaml';
import { AmbiqaError } from '../errors';

/**
 * `--set path.to.field=value`: the value is read as YAML, so `3` is a number, `true` a boolean,
 * `[1,2]` a list and `{a: 1}` a mapping; quote it (`'"3"'`) to force a string. Keys under
 * `sweep.` keep their dots (`--set sweep.pipeline.options.n=[3,5]` sets the grid axis
 * `pipeline.options.n`).
 */
export interface Override {
  path: string[];
  value: unknown;
  /** How the user wrote it, for error messages. */
  text: string;
}

export function parseOverride(text: string): Override {
  const eq = text.indexOf('=');
  if (eq <= 0) {
    throw new AmbiqaError(`--set ${text}: expected path.to.field=value`, 'e.g. --set pipeline.options.threshold=3');
  }
  const key = text.slice(0, eq).trim();
  const rawValue = text.slice(eq + 1);
  let value: unknown;
  try {
    value = rawValue === '' ? '' : YAML.parse(rawValue);
  } catch (error) {
    throw new AmbiqaError(`--set ${text}: the value is not valid YAML (${(error as Error).message.split('\n')[0]})`, 'quote strings that contain YAML syntax');
  }
  return { path: splitPath(key), value, text };
}

/**
 * Segments that no config field has and that reach JavaScript's object machinery instead:
 * setting `__proto__.x` would give every object in the process a field `x` (so every config
 * section would then report an unknown field), `constructor.prototype` likewise.
 */
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

/** `a.b.c` → `[a, b, c]`; `sweep.x.y` → `[sweep, x.y]` (sweep axes are dotted paths themselves). */
export function splitPath(key: string): string[] {
  const parts = key.split('.');
  if (parts.some((p) => p === '')) throw new AmbiqaError(`--set ${key}: empty segment in the field path`);
  const forbidden = parts.find((p) => FORBIDDEN_SEGMENTS.has(p));
  if (forbidden) {
    throw new AmbiqaError(`--set ${key}: '${forbidden}' is not a config field (and is never accepted as part of a field path)`, 'name a field of the config, e.g. --set pipeline.options.threshold=3');
  }
  if (parts[0] === 'sweep' && parts.length > 1) return ['sweep', parts.slice(1).join('.')];
  return parts;
}

/** A copy of `config` with each override set, creating mappings along the way. */
export function applyOverrides(config: Record<string, unknown>, overrides: Override[], source: string): Record<string, unknown> {
  const out = structuredClone(config);
  for (const o of overrides) setPath(out, o.path, o.value, `${source}: --set ${o.text}`);
  return out;
}

export function setPath(target: Record<string, unknown>, path: string[], value: unknown, where = path.join('.')): void {
  // Paths also come from sweep grids and notebooks, not only from splitPath.
  const forbidden = path.find((p) => FORBIDDEN_SEGMENTS.has(p));
  if (forbidden) throw new AmbiqaError(`${where}: '${forbidden}' is not a config field`);
  let cur: unknown = target;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i];
    const container = cur as Record<string, unknown> | unknown[];
    let next = Array.isArray(container) ? container[arrayIndex(key, where)] : container[key];
    if (next === undefined || next === null) {
      next = {};
      if (Array.isArray(container)) container[arrayIndex(key, where)] = next;
      else container[key] = next;
    } else if (typeof next !== 'object') {
      throw new AmbiqaError(
        `${where}: '${path.slice(0, i + 1).join('.')}' is ${JSON.stringify(next)}, not a mapping, so it has no field '${path[i + 1]}'`,
      );
    }
    cur = next;
  }
  const last = path[path.length - 1];
  if (Array.isArray(cur)) cur[arrayIndex(last, where)] = value;
  else (cur as Record<string, unknown>)[last] = value;
}

export function getPath(target: unknown, path: string[]): unknown {
  let cur = target;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function arrayIndex(key: string, where: string): number {
  if (!/^\d+$/.test(key)) throw new AmbiqaError(`${where}: '${key}' is not a list index`);
  return Number(key);
}
