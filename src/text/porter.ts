/**
 * The Porter stemmer in NLTK's default mode (`PorterStemmer(mode=NLTK_EXTENSIONS)`), which is what
 * Google's `rouge_score` applies (to tokens longer than 3 characters) when `use_stemmer=True`.
 *
 * Martin Porter's 1980 algorithm, plus NLTK's extensions, each marked `NLTK:` below:
 * - a table of irregular forms (sky/skies, dying, lying, tying, news, innings, outings, cannings,
 *   howe, proceed, exceed, succeed);
 * - words of one or two letters are returned unchanged;
 * - step 1a: a four-letter word ending in "ies" becomes "...ie" (dies → die);
 * - step 1b: "ied" → "ie" for four-letter words, else "i" (died → die, spied → spi);
 * - step 1c: y → i only after a consonant that is not the first letter (happy → happi,
 *   enjoy → enjoy, sky stays via the table);
 * - step 2: "alli" → "al" is tried first and the result goes through step 2 again; "bli" → "ble"
 *   replaces the original "abli" → "able"; extra rules "fulli" → "ful" and "logi" → "log";
 * - *o also holds for a two-letter vowel–consonant stem.
 * Everything else (measure m, *v*, *d, *o, the rule order and the "first matching suffix decides"
 * behaviour of each rule list) is Porter's.
 *
 * Input is expected to be lower-case ASCII (the ROUGE tokenizer guarantees it); other characters
 * count as consonants, as in NLTK.
 */

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);

const IRREGULAR = new Map<string, string>(Object.entries({
  sky: 'sky',
  skies: 'sky',
  dying: 'die',
  lying: 'lie',
  tying: 'tie',
  news: 'news',
  innings: 'inning',
  inning: 'inning',
  outings: 'outing',
  outing: 'outing',
  cannings: 'canning',
  canning: 'canning',
  howe: 'howe',
  proceed: 'proceed',
  exceed: 'exceed',
  succeed: 'succeed',
}));

/** Consonant flags for every position: 'y' is a consonant at the start or after a vowel. */
function consonantFlags(word: string): boolean[] {
  const flags: boolean[] = [];
  for (let i = 0; i < word.length; i++) {
    const ch = word[i];
    if (VOWELS.has(ch)) flags.push(false);
    else if (ch === 'y') flags.push(i === 0 ? true : !flags[i - 1]);
    else flags.push(true);
  }
  return flags;
}

function isConsonant(word: string, i: number): boolean {
  return consonantFlags(word.slice(0, i + 1))[i];
}

/** m: the number of VC sequences in [C](VC){m}[V]. */
function measure(stem: string): number {
  const flags = consonantFlags(stem);
  let m = 0;
  for (let i = 1; i < flags.length; i++) if (!flags[i - 1] && flags[i]) m++;
  return m;
}

function containsVowel(stem: string): boolean {
  return consonantFlags(stem).some((c) => !c);
}

/** *d: ends with a double consonant. */
function endsDoubleConsonant(word: string): boolean {
  const n = word.length;
  return n >= 2 && word[n - 1] === word[n - 2] && isConsonant(word, n - 1);
}

/** *o: ends consonant–vowel–consonant, the last not w, x or y (NLTK: or is a two-letter VC word). */
function endsCvc(word: string): boolean {
  const n = word.length;
  if (n >= 3) {
    const f = consonantFlags(word);
    if (f[n - 3] && !f[n - 2] && f[n - 1] && !'wxy'.includes(word[n - 1])) return true;
  }
  if (n === 2) {
    const f = consonantFlags(word);
    return !f[0] && f[1];
  }
  return false;
}

type Condition = ((stem: string) => boolean) | null;
type Rule = [suffix: string, replacement: string, condition: Condition];

/**
 * Porter's rule lists: the FIRST rule whose suffix matches decides; if its condition fails the
 * word is returned unchanged (later rules are not tried). The pseudo-suffix `*d` matches a
 * double consonant ending and removes both letters before the replacement is added.
 */
function applyRules(word: string, rules: readonly Rule[]): string {
  for (const [suffix, replacement, condition] of rules) {
    if (suffix === '*d' && endsDoubleConsonant(word)) {
      const stem = word.slice(0, -2);
      return condition === null || condition(stem) ? stem + replacement : word;
    }
    if (word.endsWith(suffix)) {
      const stem = suffix === '' ? word : word.slice(0, -suffix.length);
      return condition === null || condition(stem) ? stem + replacement : word;
    }
  }
  return word;
}

const positiveMeasure = (stem: string): boolean => measure(stem) > 0;
const measureAbove1 = (stem: string): boolean => measure(stem) > 1;

function step1a(word: string): string {
  if (word.endsWith('ies') && word.length === 4) return word.slice(0, -3) + 'ie'; // NLTK
  return applyRules(word, [
    ['sses', 'ss', null],
    ['ies', 'i', null],
    ['ss', 'ss', null],
    ['s', '', null],
  ]);
}

function step1b(word: string): string {
  if (word.endsWith('ied')) return word.slice(0, -3) + (word.length === 4 ? 'ie' : 'i'); // NLTK
  if (word.endsWith('eed')) {
    const stem = word.slice(0, -3);
    return measure(stem) > 0 ? stem + 'ee' : word;
  }
  let stem: string | null = null;
  for (const suffix of ['ed', 'ing']) {
    if (word.endsWith(suffix)) {
      const candidate = word.slice(0, -suffix.length);
      if (containsVowel(candidate)) {
        stem = candidate;
        break;
      }
    }
  }
  if (stem === null) return word;
  const last = stem[stem.length - 1];
  return applyRules(stem, [
    ['at', 'ate', null],
    ['bl', 'ble', null],
    ['iz', 'ize', null],
    // (*d and not (*L or *S or *Z)) -> single letter
    ['*d', last, () => !'lsz'.includes(last)],
    // (m=1 and *o) -> E
    ['', 'e', (s) => measure(s) === 1 && endsCvc(s)],
  ]);
}

function step1c(word: string): string {
  // NLTK: (*c and not c) Y -> I — the letter before y is a consonant and not the whole stem.
  return applyRules(word, [['y', 'i', (stem) => stem.length > 1 && isConsonant(stem, stem.length - 1)]]);
}

function step2(word: string): string {
  // NLTK: ALLI -> AL first, then step 2 again on the result.
  if (word.endsWith('alli') && positiveMeasure(word.slice(0, -4))) return step2(word.slice(0, -4) + 'al');
  return applyRules(word, [
    ['ational', 'ate', positiveMeasure],
    ['tional', 'tion', positiveMeasure],
    ['enci', 'ence', positiveMeasure],
    ['anci', 'ance', positiveMeasure],
    ['izer', 'ize', positiveMeasure],
    ['bli', 'ble', positiveMeasure], // NLTK (Porter: abli -> able)
    ['alli', 'al', positiveMeasure],
    ['entli', 'ent', positiveMeasure],
    ['eli', 'e', positiveMeasure],
    ['ousli', 'ous', positiveMeasure],
    ['ization', 'ize', positiveMeasure],
    ['ation', 'ate', positiveMeasure],
    ['ator', 'ate', positiveMeasure],
    ['alism', 'al', positiveMeasure],
    ['iveness', 'ive', positiveMeasure],
    ['fulness', 'ful', positiveMeasure],
    ['ousness', 'ous', positiveMeasure],
    ['aliti', 'al', positiveMeasure],
    ['iviti', 'ive', positiveMeasure],
    ['biliti', 'ble', positiveMeasure],
    ['fulli', 'ful', positiveMeasure], // NLTK
    // NLTK: the 'l' of 'logi' stays with the stem for the measure test (geologi -> geolog).
    ['logi', 'log', () => positiveMeasure(word.slice(0, -3))],
  ]);
}

function step3(word: string): string {
  return applyRules(word, [
    ['icate', 'ic', positiveMeasure],
    ['ative', '', positiveMeasure],
    ['alize', 'al', positiveMeasure],
    ['iciti', 'ic', positiveMeasure],
    ['ical', 'ic', positiveMeasure],
    ['ful', '', positiveMeasure],
    ['ness', '', positiveMeasure],
  ]);
}

function step4(word: string): string {
  return applyRules(word, [
    ['al', '', measureAbove1],
    ['ance', '', measureAbove1],
    ['ence', '', measureAbove1],
    ['er', '', measureAbove1],
    ['ic', '', measureAbove1],
    ['able', '', measureAbove1],
    ['ible', '', measureAbove1],
    ['ant', '', measureAbove1],
    ['ement', '', measureAbove1],
    ['ment', '', measureAbove1],
    ['ent', '', measureAbove1],
    ['ion', '', (stem) => measure(stem) > 1 && (stem.endsWith('s') || stem.endsWith('t'))],
    ['ou', '', measureAbove1],
    ['ism', '', measureAbove1],
    ['ate', '', measureAbove1],
    ['iti', '', measureAbove1],
    ['ous', '', measureAbove1],
    ['ive', '', measureAbove1],
    ['ize', '', measureAbove1],
  ]);
}

function step5a(word: string): string {
  // Both conditions are tried (unlike the rule lists above): (m>1) E -> ; (m=1 and not *o) E -> .
  if (word.endsWith('e')) {
    const stem = word.slice(0, -1);
    const m = measure(stem);
    if (m > 1) return stem;
    if (m === 1 && !endsCvc(stem)) return stem;
  }
  return word;
}

function step5b(word: string): string {
  return applyRules(word, [['ll', 'l', () => measure(word.slice(0, -1)) > 1]]);
}

/** Stem one word as NLTK's `PorterStemmer().stem(word)` does (the word is lower-cased first). */
export function porterStem(word: string): string {
  const lower = word.toLowerCase();
  const irregular = IRREGULAR.get(lower);
  if (irregular !== undefined) return irregular;
  if (lower.length <= 2) return lower;
  let stem = step1a(lower);
  stem = step1b(stem);
  stem = step1c(stem);
  stem = step2(stem);
  stem = step3(stem);
  stem = step4(stem);
  stem = step5a(stem);
  stem = step5b(stem);
  return stem;
}
