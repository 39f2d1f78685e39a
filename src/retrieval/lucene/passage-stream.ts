/**
 * Passages read from a file one line at a time, never the whole file in one string: DPR's
 * `psgs_w100.tsv` is 13 GB and ambiqa's own JSONL at 1M passages is already past V8's ~512 MB
 * string limit. Each passage keeps the id its file gives it (DPR's numeric ids are what
 * published outputs such as ALCE's cite). Decoding is strict: the first byte that is not UTF-8
 * is refused with its line, as readUtf8File does for small files.
 */
import { createReadStream, statSync } from 'node:fs';
import { invalidUtf8Offset } from '../../common/text-file';
import { AmbiqaError } from '../../errors';
import { parsePassageLine, passageId } from '../corpus';
import type { Passage } from '../types';

export const PASSAGE_FORMATS = ['dpr-tsv', 'jsonl'] as const;
export type PassageFormat = (typeof PASSAGE_FORMATS)[number];

/** DPR's header line, as its `psgs_w100.tsv` starts. */
export const DPR_HEADER = ['id', 'text', 'title'];

export interface StreamProgress {
  bytes: number;
  totalBytes: number;
  passages: number;
}

export interface StreamOptions {
  /** Called about every `progressEvery` passages and at the end. */
  onProgress?: (p: StreamProgress) => void;
  progressEvery?: number;
}

/** Lines of a UTF-8 file, each with its 1-based number and the bytes read so far. */
async function* lines(path: string, what: string): AsyncGenerator<{ text: string; line: number; bytes: number }> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let carry = '';
  let line = 0;
  let bytes = 0;
  let first = true;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const buffer = chunk as Buffer;
    bytes += buffer.byteLength;
    let decoded: string;
    try {
      decoded = decoder.decode(buffer, { stream: true });
    } catch {
      // The bad byte is in this chunk: its line is the lines finished before the chunk plus the
      // newlines in the chunk ahead of it.
      const at = invalidUtf8Offset(buffer) ?? 0;
      let badLine = line + 1;
      for (let i = 0; i < at; i++) if (buffer[i] === 0x0a) badLine++;
      throw new AmbiqaError(`${what} ${path}: line ${badLine} is not UTF-8; the file must be UTF-8`, 'convert it, e.g. `iconv -f latin1 -t utf-8 <file> > <file>.utf8`');
    }
    if (first) {
      if (decoded.charCodeAt(0) === 0xfeff) decoded = decoded.slice(1);
      first = false;
    }
    carry += decoded;
    let start = 0;
    for (;;) {
      const end = carry.indexOf('\n', start);
      if (end < 0) break;
      line++;
      const text = carry.charCodeAt(end - 1) === 13 ? carry.slice(start, end - 1) : carry.slice(start, end);
      yield { text, line, bytes };
      start = end + 1;
    }
    carry = carry.slice(start);
  }
  try {
    carry += decoder.decode();
  } catch {
    throw new AmbiqaError(`${what} ${path}: line ${line + 1} ends in a cut-short UTF-8 sequence; the file must be UTF-8`);
  }
  if (carry !== '') yield { text: carry.endsWith('\r') ? carry.slice(0, -1) : carry, line: line + 1, bytes };
}

/** DPR's quoting: a field wrapped in `"` with inner quotes doubled (Python's csv writer). */
function unquote(field: string): string {
  return field.length >= 2 && field.startsWith('"') && field.endsWith('"') ? field.slice(1, -1).replaceAll('""', '"') : field;
}

/**
 * Passages of `path`, in file order. `dpr-tsv`: a header `id<TAB>text<TAB>title`, then one
 * passage a row with exactly three fields and a non-empty id and text. `jsonl`: ambiqa's corpus
 * format (src/retrieval/corpus.ts), `annotated_for` kept. Every refusal names the file and line.
 */
export async function* streamPassages(path: string, format: PassageFormat, options: StreamOptions = {}): AsyncGenerator<Passage> {
  let totalBytes: number;
  try {
    totalBytes = statSync(path).size;
  } catch {
    throw new AmbiqaError(`corpus file ${path} does not exist`);
  }
  const every = options.progressEvery ?? 100_000;
  let passages = 0;
  let lastBytes = 0;
  const progress = () => options.onProgress?.({ bytes: lastBytes, totalBytes, passages });
  for await (const { text, line, bytes } of lines(path, 'corpus file')) {
    lastBytes = bytes;
    if (format === 'dpr-tsv') {
      const fields = text.split('\t');
      if (line === 1) {
        if (fields.join('\t') !== DPR_HEADER.join('\t')) {
          throw new AmbiqaError(
            `${path}:1: the header is ${JSON.stringify(text.slice(0, 80))}, not DPR's "id<TAB>text<TAB>title"`,
            '--from dpr-tsv reads psgs_w100.tsv as DPR ships it; for ambiqa JSONL use --from jsonl',
          );
        }
        continue;
      }
      if (text === '') continue;
      if (fields.length !== 3) {
        throw new AmbiqaError(`${path}:${line}: expected 3 tab-separated fields (id, text, title), found ${fields.length}`, 'a row of psgs_w100.tsv is `id<TAB>text<TAB>title`');
      }
      const id = fields[0]!.trim();
      const body = unquote(fields[1]!);
      if (id === '' || body.trim() === '') {
        throw new AmbiqaError(`${path}:${line}: ${id === '' ? 'the id' : 'the text'} is empty`, 'every row needs an id and a text');
      }
      yield { id, title: unquote(fields[2]!), text: body };
    } else {
      if (text.trim() === '') continue;
      const row = parsePassageLine(text, path, line);
      const source = row.source ?? 'user';
      const p: Passage = { id: row.id ?? passageId(source, row.title, row.section, row.text), title: row.title, text: row.text };
      if (row.section) p.section = row.section;
      if (row.source) p.source = row.source;
      if (row.annotatedFor) p.annotatedFor = row.annotatedFor;
      yield p;
    }
    passages++;
    if (passages % every === 0) progress();
  }
  progress();
}
