/**
 * Small text utilities the pipelines share: SQuAD-style answer normalisation (for votes, dedup
 * and demo-overlap checks), token F1, a sentence splitter for rationales and retrieved text, and
 * vector similarity. Scoring for reports lives in src/metrics; these are the *decision-making*
 * copies, kept here so a pipeline's behaviour never changes when a metric's implementation does.
 */

const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'.split(''));

/** SQuAD normalisation: lower-case, drop punctuation and articles, collapse white space. */
export function normaliseAnswer(text: string): string {
  let s = text.toLowerCase();
  s = Array.from(s)
    .filter((ch) => !PUNCTUATION.has(ch))
    .join('');
  s = s.replace(/\b(a|an|the)\b/g, ' ');
  return s.split(/\s+/).filter(Boolean).join(' ');
}

/** SQuAD token F1 between a prediction and one gold string. */
export function tokenF1(prediction: string, gold: string): number {
  const p = normaliseAnswer(prediction).split(' ').filter(Boolean);
  const g = normaliseAnswer(gold).split(' ').filter(Boolean);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of p) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      common += 1;
      counts.set(t, c - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / p.length;
  const recall = common / g.length;
  return (2 * precision * recall) / (precision + recall);
}

/** Max token F1 of `prediction` against any of `golds` (0 when `golds` is empty). */
export function maxTokenF1(prediction: string, golds: string[]): number {
  let best = 0;
  for (const g of golds) best = Math.max(best, tokenF1(prediction, g));
  return best;
}

/** Question identity for ToC's dedup: case, spacing and a trailing `?` do not make a new DQ. */
export function normaliseQuestion(text: string): string {
  return text
    .toLowerCase()
    .replace(/[?!.\s]+$/g, '')
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');
}

// Abbreviations that end in a period without ending a sentence.
const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'vs', 'etc', 'inc', 'ltd', 'co', 'no',
  'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec', 'gen', 'col',
  'lt', 'sgt', 'capt', 'gov', 'sen', 'rep', 'rev', 'fig', 'approx', 'e.g', 'i.e', 'u.s', 'u.k',
]);

/**
 * Split text into sentences: after `.`, `!` or `?` (optionally followed by a closing quote or
 * bracket) and white space, unless the word before the period is a known abbreviation or a
 * single letter (initials such as "J. R. R. Tolkien"). Good enough for rationales and short
 * passages; the ROUGE metric uses Punkt instead.
 */
export function splitSentences(text: string): string[] {
  const sentences: string[] = [];
  const re = /[.!?]+["')\]]*\s+/g;
  let start = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const end = m.index + m[0].length;
    const before = text.slice(start, m.index + 1);
    const lastWord = /([A-Za-z.]+)\.$/.exec(before)?.[1]?.toLowerCase() ?? '';
    const next = text.slice(end, end + 1);
    const isAbbrev = ABBREVIATIONS.has(lastWord) || /^[a-z]$/.test(lastWord);
    // A lower-case continuation is almost never a new sentence.
    if (isAbbrev || (next !== '' && /[a-z]/.test(next) && m[0].startsWith('.'))) continue;
    const s = text.slice(start, end).trim();
    if (s) sentences.push(s);
    start = end;
  }
  const tail = text.slice(start).trim();
  if (tail) sentences.push(tail);
  return sentences;
}

/** Inner product; embedders return L2-normalised vectors, so this is cosine similarity. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/** Truncate to at most `maxWords` words (prompts for small models must stay short). */
export function truncateWords(text: string, maxWords: number): string {
  const words = text.split(/\s+/).filter(Boolean);
  return words.length <= maxWords ? text.trim() : `${words.slice(0, maxWords).join(' ')} …`;
}
