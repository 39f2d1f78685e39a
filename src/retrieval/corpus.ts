/**
 * A corpus is a list of passages plus the hash of its serialised form. Indexes are cached under
 * that hash, so editing one passage rebuilds them and nothing else does.
 *
 * On disk a corpus is JSONL, one passage a line: `{"id", "title", "section"?, "text", "source"?,
 * "annotated_for"?}` (`annotated_for`: the `<dataset>:<id>` keys of the questions the passage was
 * annotated for, for `retriever.exclude: own`). A user's own file may omit `id` (one is derived
 * from the content), `section` and `annotated_for`.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AmbiqaError } from '../errors';
import { readUtf8File } from '../common/text-file';
import type { Passage } from './types';

export interface Corpus {
  readonly passages: readonly Passage[];
  /**
   * sha256 of the passages' content serialisation (id, title, section, text, source): the key of
   * cached indexes. The question annotations are left out: they change no index.
   */
  readonly hash: string;
  /** The file it was read from, when it was. */
  readonly path?: string;
  byId(id: string): Passage | undefined;
}

export function sha256(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * A stable id: `<source>:<16 hex>` of source, title, section and text. Independent of order and
 * of row numbers, so the same passage keeps its id across rebuilds and in traces.
 */
export function passageId(source: string, title: string, section: string | undefined, text: string): string {
  const digest = sha256(`${source}\u0000${title}\u0000${section ?? ''}\u0000${text}`).slice(0, 16);
  return `${source}:${digest}`;
}

/** Collapse runs of white space; corpora come with stray newlines and double spaces. */
export function cleanText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Split `text` into windows of about `words` words (DPR's 100-word passages). Texts up to 1.5×
 * the target stay whole; longer ones are cut into equal parts, so no window is a short tail.
 */
export function windowText(text: string, words = 100): string[] {
  const tokens = text.split(/\s+/).filter((t) => t.length > 0);
  if (tokens.length <= Math.floor(words * 1.5)) return tokens.length ? [tokens.join(' ')] : [];
  const parts = Math.round(tokens.length / words);
  const size = Math.ceil(tokens.length / parts);
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i += size) out.push(tokens.slice(i, i + size).join(' '));
  return out;
}

function serialisePassage(p: Passage, withAnnotations: boolean): string {
  // Fixed key order, so the same passages always give the same bytes and the same hash.
  const row: Record<string, string | string[]> = { id: p.id, title: p.title };
  if (p.section) row.section = p.section;
  row.text = p.text;
  if (p.source) row.source = p.source;
  if (withAnnotations && p.annotatedFor?.length) row.annotated_for = p.annotatedFor;
  return JSON.stringify(row);
}

/** The corpus file's text: one passage a line, with the question annotations. */
export function serialiseCorpus(passages: readonly Passage[]): string {
  return passages.map((p) => serialisePassage(p, true) + '\n').join('');
}

/** The hash indexes are cached under: of the content only (see `Corpus.hash`). */
export function contentHash(passages: readonly Passage[]): string {
  const hash = createHash('sha256');
  for (const p of passages) hash.update(serialisePassage(p, false) + '\n');
  return hash.digest('hex');
}

function makeCorpus(passages: Passage[], hash: string, path?: string): Corpus {
  let index: Map<string, Passage> | undefined;
  return {
    passages,
    hash,
    path,
    byId(id: string) {
      index ??= new Map(passages.map((p) => [p.id, p]));
      return index.get(id);
    },
  };
}

/** An in-memory corpus (tests, notebooks, a pipeline's own passages). */
export function corpusFromPassages(passages: readonly Passage[]): Corpus {
  if (passages.length === 0) {
    throw new AmbiqaError('the corpus has no passages', 'build one with `npx ambiqa corpus build --out <file>`');
  }
  const seen = new Set<string>();
  passages.forEach((p, i) => {
    if (typeof p.text !== 'string' || p.text.trim() === '') {
      throw new AmbiqaError(`passage ${i} (id ${p.id}) has no text`, 'every passage needs a non-empty "text"');
    }
    if (seen.has(p.id)) throw new AmbiqaError(`passage id ${p.id} occurs twice`, 'passage ids must be unique');
    seen.add(p.id);
  });
  const list = [...passages];
  return makeCorpus(list, contentHash(list));
}

/** Write the corpus as JSONL (atomically) and return it with its hash. */
export function saveCorpus(path: string, passages: readonly Passage[]): Corpus {
  const corpus = corpusFromPassages(passages);
  const text = serialiseCorpus(corpus.passages);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
  return makeCorpus(corpus.passages as Passage[], corpus.hash, path);
}

export interface RawPassageRow {
  line: number;
  id?: string;
  title: string;
  section?: string;
  text: string;
  source?: string;
  annotatedFor?: string[];
}

/** One JSONL line of a corpus file as a passage row; every problem names the file and the line. */
export function parsePassageLine(raw: string, path: string, line: number): RawPassageRow {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new AmbiqaError(`${path}:${line}: not valid JSON (${(error as Error).message})`, 'each line must be one JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AmbiqaError(`${path}:${line}: expected a JSON object`, 'write {"title": ..., "text": ...} on each line');
  }
  const obj = value as Record<string, unknown>;
  const text = obj.text;
  if (typeof text !== 'string' || text.trim() === '') {
    throw new AmbiqaError(
      `${path}:${line}: passage has no "text"`,
      'every line needs a non-empty string field "text" (and usually "title")',
    );
  }
  for (const field of ['id', 'title', 'section', 'source'] as const) {
    if (obj[field] !== undefined && obj[field] !== null && typeof obj[field] !== 'string') {
      throw new AmbiqaError(`${path}:${line}: "${field}" must be a string`, `write "${field}" as a JSON string`);
    }
  }
  const annotated = obj.annotated_for;
  if (annotated !== undefined && (!Array.isArray(annotated) || annotated.some((q) => typeof q !== 'string'))) {
    throw new AmbiqaError(`${path}:${line}: "annotated_for" must be a list of question keys (strings)`, 'write e.g. "annotated_for": ["asqa:-123"]');
  }
  return {
    line,
    id: (obj.id as string | undefined) || undefined,
    title: (obj.title as string | undefined) ?? '',
    section: (obj.section as string | undefined) || undefined,
    text,
    source: (obj.source as string | undefined) || undefined,
    // Typed explicitly: tslab compiles non-strictly, where `unknown` is not narrowed by the check above.
    ...((annotated as string[] | undefined)?.length ? { annotatedFor: annotated as string[] } : {}),
  };
}

/**
 * Read and validate a JSONL file of passages. Every problem names the file and the 1-based line:
 * invalid JSON, a line that is not an object, a missing or empty `text`, a non-string field.
 */
export function readPassageRows(path: string): RawPassageRow[] {
  if (!existsSync(path)) {
    throw new AmbiqaError(`corpus file ${path} does not exist`, 'build one with `npx ambiqa corpus build --out <file>`');
  }
  const rows: RawPassageRow[] = [];
  const lines = readUtf8File(path, 'corpus file').split('\n');
  lines.forEach((raw, i) => {
    if (raw.trim() === '') return;
    rows.push(parsePassageLine(raw, path, i + 1));
  });
  return rows;
}

/**
 * Load a corpus file (ours or a user's JSONL). Passages without an id get a content-derived one;
 * duplicate ids and an empty file are errors that name the file.
 */
export function loadCorpus(path: string): Corpus {
  const rows = readPassageRows(path);
  if (rows.length === 0) {
    throw new AmbiqaError(`corpus file ${path} has no passages`, 'build one with `npx ambiqa corpus build --out <file>`');
  }
  const firstLine = new Map<string, number>();
  const passages: Passage[] = rows.map((row) => {
    const source = row.source ?? 'user';
    const id = row.id ?? passageId(source, row.title, row.section, row.text);
    const earlier = firstLine.get(id);
    if (earlier !== undefined) {
      throw new AmbiqaError(`${path}:${row.line}: passage id ${id} already used on line ${earlier}`, 'passage ids must be unique');
    }
    firstLine.set(id, row.line);
    const p: Passage = { id, title: row.title, text: row.text };
    if (row.section) p.section = row.section;
    if (row.source) p.source = row.source;
    if (row.annotatedFor) p.annotatedFor = row.annotatedFor;
    return p;
  });
  return makeCorpus(passages, contentHash(passages), path);
}
