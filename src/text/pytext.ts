/**
 * Character classes that behave like Python 3's `re` and `str` methods on Unicode text.
 *
 * The reference metrics (SQuAD, ALCE, `rouge_score`, NLTK Punkt) are Python. JavaScript's `\s`,
 * `\w`, `\b` and `\d` differ from Python's on non-ASCII text (JS `\w`/`\b`/`\d` are ASCII-only;
 * JS `\s` lacks U+001C–U+001F and includes U+FEFF), so every metric builds its patterns from
 * these instead.
 */

/** Python `str.isspace()` / `re` `\s` on str patterns (Unicode White_Space plus U+001C–U+001F). */
export const PY_SPACE_CLASS = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/**
 * Python `re` `\w` on str patterns: `str.isalnum()` or `_` (letters and numbers; combining marks
 * are NOT word characters in Python, unlike some other engines).
 */
export const PY_WORD_CLASS = '\\p{L}\\p{N}_';

/** Python `re` `\d` on str patterns: Unicode decimal digits. */
export const PY_DIGIT_CLASS = '\\p{Nd}';

const pySpaceRun = new RegExp(`[${PY_SPACE_CLASS}]+`, 'u');
const pySpaceEdges = new RegExp(`^[${PY_SPACE_CLASS}]+|[${PY_SPACE_CLASS}]+$`, 'gu');
const pyTrailingSpace = new RegExp(`[${PY_SPACE_CLASS}]+$`, 'u');

/** Python `s.split()` (no argument): split on runs of whitespace, drop empty strings. */
export function pySplit(text: string): string[] {
  return text.split(pySpaceRun).filter((t) => t.length > 0);
}

/** Python `s.strip()`. */
export function pyStrip(text: string): string {
  return text.replace(pySpaceEdges, '');
}

/** Python `s.rstrip()`. */
export function pyRstrip(text: string): string {
  return text.replace(pyTrailingSpace, '');
}

/** Python `string.punctuation` (ASCII only: the SQuAD normaliser leaves Unicode punctuation alone). */
export const PY_ASCII_PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

/** Python `c.isupper()` for one character (code point). */
export function pyIsUpper(ch: string): boolean {
  return /^\p{Uppercase}$/u.test(ch);
}

/** Python `c.islower()` for one character (code point). */
export function pyIsLower(ch: string): boolean {
  return /^\p{Lowercase}$/u.test(ch);
}

/** First code point of a string (Python `s[0]`), or '' for an empty string. */
export function firstCodePoint(text: string): string {
  const cp = text.codePointAt(0);
  return cp === undefined ? '' : String.fromCodePoint(cp);
}
