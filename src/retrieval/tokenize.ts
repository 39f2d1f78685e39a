/**
 * The BM25 tokeniser: fold accents (NFKD, drop combining marks), lower-case, split on anything
 * that is not a letter or digit, drop stop words, optionally stem. Queries and passages go
 * through the same function, so `Curaçao` in a question finds `Curacao` in a passage.
 */
import { ENGLISH_STOP_WORDS } from './stopwords';
import { stemmerFor, type StemmerName } from './stem';

export interface TokenizerOptions {
  /** Drop English stop words (default true). */
  stopWords?: boolean;
  stemmer?: StemmerName;
}

export type Tokenizer = (text: string) => string[];

const SPLIT = /[^\p{L}\p{N}]+/u;
const MARKS = /\p{M}/gu;

export function makeTokenizer(options: TokenizerOptions = {}): Tokenizer {
  const stop = options.stopWords === false ? undefined : ENGLISH_STOP_WORDS;
  const stemmer = stemmerFor(options.stemmer ?? 'none');
  // Stemming is the slow part of indexing and words repeat a lot: remember each word's stem.
  const memo = new Map<string, string>();
  const stem = stemmer
    ? (word: string) => {
        let s = memo.get(word);
        if (s === undefined) {
          s = stemmer(word);
          if (memo.size < 500_000) memo.set(word, s);
        }
        return s;
      }
    : undefined;
  return (text: string) => {
    const folded = text.normalize('NFKD').replace(MARKS, '').toLowerCase();
    const out: string[] = [];
    for (const piece of folded.split(SPLIT)) {
      if (piece.length === 0 || (stop && stop.has(piece))) continue;
      out.push(stem ? stem(piece) : piece);
    }
    return out;
  };
}
