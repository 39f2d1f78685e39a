/**
 * Stemmers for the BM25 tokeniser.
 *
 * - `porter`: the Porter stemmer (NLTK mode) of `src/text/porter.ts`, the one ROUGE uses.
 * - `s`: Harman's S-stemmer (1991), which only folds English plurals (`ies`→`y`, `es`→`e`,
 *   `s`→``, with the usual exceptions): cheap, predictable, never merges unrelated words.
 */
import { porterStem } from '../text/porter';

export type StemmerName = 'none' | 's' | 'porter';

export function sStem(word: string): string {
  const n = word.length;
  if (n < 4) return word;
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) return word.slice(0, -3) + 'y';
  if (word.endsWith('es') && !word.endsWith('aes') && !word.endsWith('ees') && !word.endsWith('oes')) {
    return word.slice(0, -1);
  }
  if (word.endsWith('s') && !word.endsWith('us') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

export function stemmerFor(name: StemmerName): ((word: string) => string) | undefined {
  switch (name) {
    case 'none':
      return undefined;
    case 's':
      return sStem;
    case 'porter':
      return porterStem;
  }
}
