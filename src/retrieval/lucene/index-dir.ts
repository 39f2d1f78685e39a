/**
 * A Lucene index folder as ambiqa finds it: Anserini/Pyserini's layout (the Lucene files, read as
 * is, so a prebuilt Pyserini index opens unchanged) plus, when `ambiqa index` built it, two files
 * of ours beside them:
 *   - `ambiqa-index.json`: where it came from (file, format, passages, build time);
 *   - `ambiqa-annotations.jsonl`: `{"q": "<dataset>:<id>", "ids": [...]}` a line, the corpus's
 *     `annotated_for` turned around, so `exclude: own` never needs the corpus itself.
 * Checked before the searcher starts: the folder exists, holds a commit point (`segments_N`),
 * that commit was written by a Lucene this engine reads (Lucene reads its own major version
 * and the one before), and the index stores its documents (Anserini's `raw` field): Anserini's
 * searcher returns a hit's text only from there, so an index built without `-storeRaw` (or with
 * `-storeContents` alone) would answer with ids and empty passages.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../../errors';

export const META_FILE = 'ambiqa-index.json';
export const ANNOTATIONS_FILE = 'ambiqa-annotations.jsonl';
/** The Lucene major version of the pinned Anserini jar; it reads this one and the one before. */
export const LUCENE_MAJOR = 10;

export interface IndexMeta {
  format: string;
  source: string;
  passages: number;
  builtAt: string;
  seconds: number;
  anserini: string;
}

export interface IndexInfo {
  dir: string;
  /** `segments_N`, the commit point the searcher opens. */
  segmentsFile: string;
  /** sha256 of the commit point: changes whenever the index is rebuilt or changed. */
  checksum: string;
  /** Lucene version that wrote the commit, e.g. `10.5.0`, and the major the index was created with. */
  luceneVersion: string;
  createdMajor: number;
  meta?: IndexMeta;
  hasAnnotations: boolean;
}

const CODEC_MAGIC = 0x3fd76c17;
/** Anserini's stored-document field name as Lucene's field infos write it. */
const RAW_FIELD_NAME = Buffer.from([3, ...Buffer.from('raw')]);

/** Lucene's variable-length int (7 bits a byte, low first). */
function readVInt(bytes: Buffer, at: { i: number }): number {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at.i++];
    if (b === undefined) throw new RangeError('truncated');
    value |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return value;
    shift += 7;
  }
}

/** The Lucene version fields of a `segments_N` header (CodecUtil index header, then vInts). */
export function readSegmentsVersion(bytes: Buffer): { version: string; createdMajor: number } {
  if (bytes.length < 32 || bytes.readUInt32BE(0) !== CODEC_MAGIC) throw new RangeError('no Lucene codec header');
  const at = { i: 4 };
  const nameLength = readVInt(bytes, at);
  const name = bytes.subarray(at.i, at.i + nameLength).toString('utf8');
  if (name !== 'segments') throw new RangeError(`codec ${name}`);
  at.i += nameLength + 4 + 16; // format version (int), object id (16 bytes)
  const suffixLength = bytes[at.i++] ?? 0;
  at.i += suffixLength;
  const major = readVInt(bytes, at);
  const minor = readVInt(bytes, at);
  const bugfix = readVInt(bytes, at);
  const createdMajor = readVInt(bytes, at);
  return { version: `${major}.${minor}.${bugfix}`, createdMajor };
}

/** Inspect `dir` as a Lucene index; every refusal is one line naming the folder or file. */
export function inspectIndex(dir: string, field = 'retriever.index'): IndexInfo {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new AmbiqaError(`${field} ${dir}: no such folder`, 'build one with `npx ambiqa index --from dpr-tsv|jsonl <file> --engine lucene --out <dir>`');
  }
  const segments = readdirSync(dir)
    .filter((f) => /^segments_[0-9a-z]+$/.test(f))
    .sort((a, b) => parseInt(b.slice(9), 36) - parseInt(a.slice(9), 36));
  if (segments.length === 0) {
    const partial = readdirSync(dir).some((f) => f.startsWith('_'));
    throw new AmbiqaError(
      `${field} ${dir}: not a Lucene index (no segments_N commit point${partial ? '; segment files without a commit: an interrupted build' : ''})`,
      'build one with `npx ambiqa index ... --out <dir>`, or point it at a Pyserini/Anserini index folder',
    );
  }
  const segmentsFile = segments[0]!;
  const bytes = readFileSync(join(dir, segmentsFile));
  let version: { version: string; createdMajor: number };
  try {
    version = readSegmentsVersion(bytes);
  } catch (error) {
    throw new AmbiqaError(`${field} ${join(dir, segmentsFile)}: not a readable Lucene commit point (${(error as Error).message})`, 'the index is damaged or truncated; rebuild it');
  }
  const major = Number(version.version.split('.')[0]);
  if (major > LUCENE_MAJOR || version.createdMajor < LUCENE_MAJOR - 1) {
    throw new AmbiqaError(
      `${field} ${dir}: written by Lucene ${version.version} (created with Lucene ${version.createdMajor}); the engine (Anserini 2.3) reads Lucene ${LUCENE_MAJOR - 1}–${LUCENE_MAJOR} indexes`,
      'rebuild it with `npx ambiqa index`, or use the Pyserini prebuilt index made for Anserini 2.x',
    );
  }
  const fieldInfos = readdirSync(dir).filter((f) => f.endsWith('.fnm'));
  // Field names are written length-prefixed (a vInt, then UTF-8): `raw` is 0x03 'r' 'a' 'w'.
  // Compound segments (.cfs) hide their .fnm; those are checked on the first hit instead.
  if (fieldInfos.length > 0 && !fieldInfos.some((f) => readFileSync(join(dir, f)).includes(RAW_FIELD_NAME))) {
    throw new AmbiqaError(
      `${field} ${dir}: the index stores no documents (no \`raw\` field in ${fieldInfos.join(', ')}), so its hits would come back without passage text`,
      'rebuild it with `npx ambiqa index`, or with Pyserini/Anserini\'s `--storeRaw`',
    );
  }
  let meta: IndexMeta | undefined;
  if (existsSync(join(dir, META_FILE))) {
    try {
      meta = JSON.parse(readFileSync(join(dir, META_FILE), 'utf8')) as IndexMeta;
    } catch {
      throw new AmbiqaError(`${field} ${join(dir, META_FILE)}: not valid JSON`, 'rebuild the index with `npx ambiqa index`');
    }
  }
  return {
    dir,
    segmentsFile,
    checksum: createHash('sha256').update(bytes).digest('hex'),
    luceneVersion: version.version,
    createdMajor: version.createdMajor,
    ...(meta ? { meta } : {}),
    hasAnnotations: existsSync(join(dir, ANNOTATIONS_FILE)),
  };
}

/** Question key → ids of the passages annotated for it, from the sidecar `ambiqa index` wrote. */
export function readAnnotations(dir: string): Map<string, Set<string>> {
  const path = join(dir, ANNOTATIONS_FILE);
  const owned = new Map<string, Set<string>>();
  if (!existsSync(path)) return owned;
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      const row = JSON.parse(line) as { q: string; ids: string[] };
      if (typeof row.q !== 'string' || !Array.isArray(row.ids)) throw new Error('shape');
      owned.set(row.q, new Set(row.ids.map(String)));
    } catch {
      throw new AmbiqaError(`${path}:${i + 1}: expected {"q": <question key>, "ids": [<passage ids>]}`, 'rebuild the index with `npx ambiqa index`');
    }
  });
  return owned;
}
