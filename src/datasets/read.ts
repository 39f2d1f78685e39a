/**
 * Reading JSON and JSONL data files with errors a person can act on: every message names the
 * file, and the line (JSONL), the record (its id or index) and the field that is wrong.
 */
import { firstDuplicateKey, readUtf8File } from '../common/text-file';
import { formatIssues } from '../common/zod-issues';
import { existsSync, statSync } from 'node:fs';
import type { z } from 'zod';
import { AmbiqaError } from '../errors';

/**
 * Integers with more than 15 digits (SituatedQA's ids are signed 64-bit numbers) lose precision
 * in `JSON.parse`. Before parsing, such integer literals outside strings are wrapped in quotes so
 * they arrive as exact strings. Floats and short integers are left alone.
 */
export function quoteLargeIntegers(text: string): string {
  if (!/\d{16}/.test(text)) return text;
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + (c === 45 ? 1 : 0);
      const digitsStart = j;
      while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
      const digits = j - digitsStart;
      let isInteger = true;
      if (text[j] === '.') {
        isInteger = false;
        j++;
        while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
      }
      if (text[j] === 'e' || text[j] === 'E') {
        isInteger = false;
        j++;
        if (text[j] === '+' || text[j] === '-') j++;
        while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
      }
      if (isInteger && digits > 15) {
        out += `${text.slice(last, i)}"${text.slice(i, j)}"`;
        last = j;
      }
      i = j - 1;
    }
  }
  return out + text.slice(last);
}

/** Where a JSON syntax error is, as "line L, column C", from the position in V8's message. */
function locate(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const m = /position (\d+)/.exec(message);
  if (!m) return message;
  const pos = Number(m[1]);
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  const column = pos - before.lastIndexOf('\n');
  return `${message.replace(/ in JSON at position \d+.*$/, '')} at line ${line}, column ${column}`;
}

export function assertReadableFile(path: string, what: string): void {
  if (!existsSync(path)) throw new AmbiqaError(`${what} ${path} does not exist`, 'check the path (relative paths are resolved from the current directory)');
  if (statSync(path).isDirectory()) throw new AmbiqaError(`${what} ${path} is a folder, not a file`, 'give the path of the JSON/JSONL file inside it');
}

/**
 * Parse a whole JSON file (large integers kept exact as strings). Bytes that are not UTF-8 and a
 * key given twice in one object are refused: both would otherwise lose data without a word
 * (`JSON.parse` keeps the last of two equal keys, so an ASQA question id given twice runs one
 * of the two questions).
 */
export function readJsonFile(path: string, what = 'data file'): unknown {
  assertReadableFile(path, what);
  const text = readUtf8File(path, what);
  if (text.trim() === '') throw new AmbiqaError(`${what} ${path} is empty`);
  let value: unknown;
  try {
    value = JSON.parse(quoteLargeIntegers(text));
  } catch (error) {
    throw new AmbiqaError(`${what} ${path} is not valid JSON: ${locate(text, error)}`, path.endsWith('.jsonl') ? 'a .jsonl file holds one JSON object per line' : undefined);
  }
  const duplicate = firstDuplicateKey(text);
  if (duplicate) {
    const where = duplicate.path ? ` in "${duplicate.path}"` : '';
    throw new AmbiqaError(
      `${what} ${path}: key "${duplicate.key}" occurs twice${where} (lines ${duplicate.firstLine} and ${duplicate.line}); JSON keeps only the last, so one of them would be dropped silently`,
      'give each question (and each field of a record) one entry: remove or rename the repeated one',
    );
  }
  return value;
}

export interface JsonlLine {
  /** 1-based line number in the file. */
  line: number;
  value: unknown;
}

export interface JsonlProblem {
  line: number;
  message: string;
}

/**
 * Parse a JSONL file line by line. Blank lines are skipped. Lines that are not valid JSON are
 * returned as problems (with their line numbers) so that callers can decide to stop or go on.
 */
export function readJsonlFile(path: string, what = 'data file'): { lines: JsonlLine[]; problems: JsonlProblem[] } {
  assertReadableFile(path, what);
  const text = readUtf8File(path, what);
  const lines: JsonlLine[] = [];
  const problems: JsonlProblem[] = [];
  const raw = text.split('\n');
  for (let i = 0; i < raw.length; i++) {
    const line = raw[i].trim();
    if (!line) continue;
    try {
      lines.push({ line: i + 1, value: JSON.parse(quoteLargeIntegers(line)) });
    } catch (error) {
      problems.push({ line: i + 1, message: `not valid JSON (${error instanceof Error ? error.message.replace(/ in JSON at position \d+.*$/, '') : String(error)})` });
    }
  }
  return { lines, problems };
}

/**
 * One line per zod issue: `<where>: <field>: <what is wrong>`. With the record itself (`input`),
 * a field of the wrong type says what it expected and what it got, instead of "is required".
 */
export function describeIssues(where: string, error: z.ZodError, input?: unknown): string[] {
  return formatIssues(error.issues, { input }).map((line) => `${where}: ${line}`);
}

/**
 * Throw one AmbiqaError listing the first problems (and how many more there are). `records`: how
 * many records are bad (one record can have several problems); default one per problem.
 */
export function throwProblems(path: string, problems: string[], hint?: string, records = problems.length): never {
  const shown = problems.slice(0, 5);
  const more = problems.length > shown.length ? `\n  … and ${problems.length - shown.length} more` : '';
  const count = `${records} invalid record${records === 1 ? '' : 's'}${problems.length > records ? ` (${problems.length} problems)` : ''}`;
  throw new AmbiqaError(`${path}: ${count}\n  ${shown.join('\n  ')}${more}`, hint);
}

/**
 * A record's top-level scalar fields (string, number, boolean, null) that its loader does not read
 * (`read`), kept in the example's `meta` so that a run can report its metrics by them (`groupBy`,
 * groups.ts): e.g. a HotpotQA-format file whose records carry a `level`. Undefined when none.
 */
export function unreadScalars(raw: unknown, read: readonly string[]): Record<string, string | number | boolean | null> | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const out: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (read.includes(key)) continue;
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
