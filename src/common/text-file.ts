import { readFileSync, statSync } from 'node:fs';
import { AmbiqaError } from '../errors';

/**
 * Reading input files as text without losing bytes. `readFileSync(path, 'utf8')` turns every byte
 * that is not UTF-8 into U+FFFD without a word, so a Latin-1 dataset would run with garbled
 * questions and scores nobody could trace back to the file. Input files are read strictly: the
 * first undecodable byte is refused, naming the file, its byte offset and its line.
 */
export function readUtf8File(path: string, what = 'file'): string {
  // One JavaScript string holds at most ~512 MB (V8's limit, 2^29 - 24 UTF-16 units): a larger
  // file cannot be decoded whole however valid it is, so say that, not that its bytes are bad.
  const size = statSync(path).size;
  if (size > MAX_STRING_BYTES) {
    throw new AmbiqaError(
      `${what} ${path} is ${(size / 2 ** 20).toFixed(0)} MiB, too large to read into memory as one text (the limit is ${(MAX_STRING_BYTES / 2 ** 20).toFixed(0)} MiB)`,
      'index a corpus this large on disk: `npx ambiqa index --from jsonl|dpr-tsv <file> --engine lucene --out <dir>`, then `retriever: {type: bm25, engine: lucene, index: <dir>}` (docs/retrieval.md)',
    );
  }
  return decodeUtf8(readFileSync(path), `${what} ${path}`);
}

/** The largest file read whole: V8's string limit (2^29 - 24 code units), an ASCII file's bytes. */
export const MAX_STRING_BYTES = 2 ** 29 - 24;

/** `bytes` as UTF-8 (a leading byte-order mark dropped), or an AmbiqaError naming `where` and the first bad byte. */
export function decodeUtf8(bytes: Uint8Array, where: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    const bad = invalidUtf8Offset(bytes);
    if (bad === undefined) {
      // Valid UTF-8 that still failed to decode: the text is past the string limit.
      throw new AmbiqaError(`${where}: ${bytes.byteLength} bytes cannot be decoded into one text (${(error as Error).message})`, 'read it in pieces (a file this large belongs in an on-disk index: `npx ambiqa index`)');
    }
    const at = bad;
    let line = 1;
    for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) line++;
    const shown = Array.from(bytes.subarray(at, at + 4), (b) => `0x${b.toString(16).padStart(2, '0')}`).join(' ');
    throw new AmbiqaError(
      `${where}: byte ${at} (line ${line}) is not UTF-8 (bytes ${shown}); the file must be UTF-8`,
      'convert it, e.g. `iconv -f latin1 -t utf-8 <file> > <file>.utf8` (name its real encoding after -f)',
    );
  }
}

/**
 * Offset of the first byte that starts an invalid UTF-8 sequence (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a sequence cut short), or undefined.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number | undefined {
  let i = 0;
  const n = bytes.length;
  const cont = (j: number, lo = 0x80, hi = 0xbf) => j < n && bytes[j]! >= lo && bytes[j]! <= hi;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i += 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      if (!cont(i + 1)) return i;
      i += 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      // E0 needs A0–BF next (no overlong forms), ED 80–9F (no surrogates).
      const lo = b === 0xe0 ? 0xa0 : 0x80;
      const hi = b === 0xed ? 0x9f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2)) return i;
      i += 3;
    } else if (b >= 0xf0 && b <= 0xf4) {
      // F0 needs 90–BF next (no overlong forms), F4 80–8F (nothing past U+10FFFF).
      const lo = b === 0xf0 ? 0x90 : 0x80;
      const hi = b === 0xf4 ? 0x8f : 0xbf;
      if (!cont(i + 1, lo, hi) || !cont(i + 2) || !cont(i + 3)) return i;
      i += 4;
    } else {
      return i;
    }
  }
  return undefined;
}

/**
 * The first key that occurs twice in one JSON object of `text` (already known to be valid JSON),
 * with the lines of both occurrences; undefined when there is none. `JSON.parse` keeps the last
 * of two equal keys, so an ASQA file with a question id given twice would silently run one of
 * the two questions.
 */
export function firstDuplicateKey(text: string): { key: string; firstLine: number; line: number; path: string } | undefined {
  type Frame = { object: boolean; keys: Map<string, number> | null; expectKey: boolean; name: string };
  const stack: Frame[] = [];
  let line = 1;
  let pendingKey = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      line++;
    } else if (c === 34) {
      // A string: find its end (a quote not escaped by a backslash).
      let j = i + 1;
      let escaped = false;
      while (j < text.length) {
        const d = text.charCodeAt(j);
        if (d === 92) {
          escaped = true;
          j += 2;
          continue;
        }
        if (d === 34) break;
        j++;
      }
      const top = stack[stack.length - 1];
      if (top?.object && top.expectKey) {
        const raw = text.slice(i + 1, j);
        const key = escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
        const seen = top.keys!.get(key);
        if (seen !== undefined) {
          return { key, firstLine: seen, line, path: stack.map((f) => f.name).filter(Boolean).join('.') };
        }
        top.keys!.set(key, line);
        top.expectKey = false;
        pendingKey = key;
      }
      i = j;
    } else if (c === 123 || c === 91) {
      // `{` or `[`: the name of the container is the key it is the value of (for messages).
      const parent = stack[stack.length - 1];
      const name = parent?.object ? pendingKey : '';
      stack.push({ object: c === 123, keys: c === 123 ? new Map() : null, expectKey: c === 123, name });
    } else if (c === 125 || c === 93) {
      stack.pop();
    } else if (c === 44) {
      const top = stack[stack.length - 1];
      if (top?.object) top.expectKey = true;
    }
  }
  return undefined;
}
