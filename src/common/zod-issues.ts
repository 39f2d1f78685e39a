import type { z } from 'zod';

/**
 * Turns zod issues into lines a researcher can act on: the path of the field (`a.b[2].c`), what
 * is wrong, and for enums and unknown keys the values that are allowed. zod's own messages
 * ("Invalid option: expected one of …") name neither the field nor, for unknown keys, the
 * alternatives. The one formatter of zod errors: configs, options, datasets and the LLM config
 * all report through it.
 */
export function formatIssues(
  issues: readonly z.core.$ZodIssue[],
  options: { prefix?: string[]; schema?: z.ZodType; input?: unknown } = {},
): string[] {
  const prefix = options.prefix ?? [];
  return issues.flatMap((issue) => {
    if (issue.code === 'invalid_union') {
      const inner = explainUnion(issue as z.core.$ZodIssueInvalidUnion);
      if (inner) return formatIssues(inner, { ...options, prefix: [...prefix, ...issue.path.map(String)], input: valueAt(options.input, issue.path) });
    }
    return `${fieldPath([...prefix, ...issue.path])}: ${describeIssue(issue, options.schema, options.input)}`;
  });
}

/** `qa_pairs[2].short_answers`; `(top level)` for the value itself. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(top level)';
}

/** zod's own wording; anything else is a message the schema's author wrote, which wins. */
const ZOD_DEFAULT = /^(Too (big|small)|Invalid|Unrecognized key)/;

function describeIssue(issue: z.core.$ZodIssue, schema?: z.ZodType, input?: unknown): string {
  if (issue.code !== 'unrecognized_keys' && issue.message && !ZOD_DEFAULT.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}${got(valueAt(input, issue.path))}`;
    case 'unrecognized_keys': {
      const allowed = schema ? objectKeysAt(schema, issue.path, input) : undefined;
      const keys = issue.keys.map((k) => `'${k}'`).join(', ');
      const noun = issue.keys.length === 1 ? 'unknown field' : 'unknown fields';
      return allowed ? `${noun} ${keys} (allowed: ${allowed.join(', ')})` : `${noun} ${keys}`;
    }
    case 'invalid_type': {
      const value = valueAt(input, issue.path);
      if (value === undefined) return `is required (expected ${issue.expected})`;
      if (issue.expected === 'int' && typeof value === 'number') return `must be an integer${got(value)}`;
      return `expected ${issue.expected}${got(value)}`;
    }
    case 'too_big': {
      const op = issue.inclusive === false ? '<' : '≤';
      if (issue.origin === 'array') return `must have ${op === '<' ? 'fewer than' : 'at most'} ${issue.maximum} items`;
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      return `must be ${op} ${issue.maximum}${got(valueAt(input, issue.path))}`;
    }
    case 'too_small': {
      const op = issue.inclusive === false ? '>' : '≥';
      if (issue.origin === 'array') return `must have at least ${issue.minimum} item${issue.minimum === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return `must not be empty`;
      return `must be ${op} ${issue.minimum}${got(valueAt(input, issue.path))}`;
    }
    default:
      return issue.message;
  }
}

/**
 * A union (e.g. retriever types) failed every branch. When every branch rejected the same
 * discriminating field (`type`), the useful message is that field's allowed values; otherwise
 * the branch that came closest (fewest issues) says what is wrong.
 */
function explainUnion(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue[] | undefined {
  // Typed explicitly: tslab checks notebooks' imports non-strictly and infers `never` otherwise.
  const branches: z.core.$ZodIssue[][] = issue.errors;
  if (!branches || branches.length === 0) return undefined;
  const discriminators = branches.map((b) => b.find((i) => i.code === 'invalid_value' && i.path.length === 1));
  if (discriminators.every((d) => d !== undefined)) {
    const key = discriminators[0]!.path[0];
    if (discriminators.every((d) => d!.path[0] === key)) {
      const values = discriminators.flatMap((d) => (d as z.core.$ZodIssueInvalidValue).values);
      return [{ code: 'invalid_value', values, path: [key], message: '', input: undefined } as unknown as z.core.$ZodIssue];
    }
  }
  const best = branches.filter((b) => !b.some((i) => i.code === 'invalid_value' && i.path.length === 1));
  const pool = best.length > 0 ? best : branches;
  return [...pool].sort((a, b) => a.length - b.length)[0];
}

function got(value: unknown): string {
  if (value === undefined) return '';
  const text = JSON.stringify(value);
  return ` (got ${text && text.length > 60 ? text.slice(0, 57) + '...' : text})`;
}

export function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

interface SchemaDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  values?: unknown[];
}

function defOf(schema: z.ZodType): SchemaDef {
  return (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
}

/**
 * Strip optional/default/nullable/pipe wrappers to reach the schema that checks the value. A
 * preprocess (a pipe from a transform) is checked by its second half.
 */
function unwrap(schema: z.ZodType): z.ZodType {
  let cur = schema;
  for (let i = 0; i < 20; i++) {
    const def = defOf(cur);
    if (def.innerType) cur = def.innerType;
    else if (def.type === 'pipe' && def.in) cur = defOf(def.in).type === 'transform' && def.out ? def.out : def.in;
    else break;
  }
  return cur;
}

/**
 * The branch of a union that `value` is meant for: the first object branch whose literal fields
 * (`name: closed-book`, `provider: scripted`) all match it, a literal with a default matching an
 * absent field. Keyed unions of configs are checked one branch at a time, so this is the branch
 * whose issues are being described.
 */
function branchFor(options: z.ZodType[], value: unknown): z.ZodType | undefined {
  const fields = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  return options.find((option) => {
    const def = defOf(unwrap(option));
    if (def.type !== 'object' || !def.shape) return false;
    return Object.entries(def.shape).every(([key, field]) => {
      const literal = defOf(unwrap(field));
      if (literal.type !== 'literal') return true;
      return fields[key] === undefined ? field !== unwrap(field) : (literal.values ?? []).includes(fields[key]);
    });
  });
}

/**
 * The keys an object schema accepts at `path`, when it can be found by walking the schema (and,
 * through unions, the input the issue is about).
 */
export function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[], input?: unknown): string[] | undefined {
  let cur: z.ZodType | undefined = unwrap(schema);
  for (let depth = 0; depth <= path.length; depth++) {
    // Unions and intersections resolve to the part that holds the value here.
    for (let i = 0; i < 20 && cur; i++) {
      const def: SchemaDef = defOf(cur);
      if (def.type === 'union' && def.options) cur = branchFor(def.options, valueAt(input, path.slice(0, depth)));
      else if (def.type === 'intersection' && def.left && def.right) cur = defOf(unwrap(def.left)).type === 'object' ? def.left : def.right;
      else break;
      if (cur) cur = unwrap(cur);
    }
    if (!cur || depth === path.length) break;
    const key = path[depth];
    const def: SchemaDef = defOf(cur);
    if (def.type === 'object' && def.shape && typeof key === 'string') cur = def.shape[key];
    else if (def.type === 'array' && def.element) cur = def.element;
    else if (def.type === 'record' && def.valueType) cur = def.valueType;
    else return undefined;
    if (!cur) return undefined;
    cur = unwrap(cur);
  }
  if (!cur) return undefined;
  const def = defOf(cur);
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : undefined;
}
