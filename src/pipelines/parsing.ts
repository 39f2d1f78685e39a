/**
 * Parsers for model replies. Small models break formats in predictable ways: numbering is
 * missing or restarts, `DQ:` becomes `Q1:` or `**DQ 1:**`, the reply opens with chatter ("Sure!
 * Here are…"), or it stops mid-line when max tokens run out. (Yes/No judgments are not parsed
 * here: they are read from token probabilities, `LanguageModel.judge`.) Every parser here returns what it could recover plus a list of
 * `problems`; it never throws. Pipelines turn an unusable result into a counted parse failure
 * (`TraceRecorder.parseFailure`) with an explicit fallback.
 */
import type { AmbiguityType } from './diva/decisions';
import type { FeverLabel } from '../datasets/types';

export interface QaPairText {
  question: string;
  answer: string;
}

export interface ParsedDisambiguations {
  pairs: QaPairText[];
  /** The long answer after `Answer:`, when the reply carries one. */
  longAnswer: string | null;
  /** What was odd about the reply (empty when it followed the format). */
  problems: string[];
}

/** Remove markdown emphasis, heading marks and inline code ticks; keep the words. */
export function stripMarkdown(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/\*\*|__|`+/g, '')
    .replace(/(^|\s)\*(\S[^*\n]*?)\*(?=\s|$|[.,;:!?])/g, '$1$2')
    .replace(/^\s{0,3}#{1,6}\s+/gm, '');
}

/** Trim white space, wrapping quotes, list bullets and one trailing period. */
export function cleanFragment(text: string): string {
  const QUOTES = /^["'“”‘’]+|["'“”‘’]+$/g;
  let s = text.trim();
  s = s.replace(/^[-*•]\s+/, '');
  const dropPeriod = (x: string) =>
    /[^.]\.$/.test(x) && !/\b[A-Z]\.$/.test(x) && !/\b(?:Jr|Sr|Inc|Ltd|Co|St)\.$/.test(x) ? x.slice(0, -1) : x;
  s = dropPeriod(s).replace(QUOTES, '').trim();
  return dropPeriod(s).trim();
}

// `DQ 1:`, `DQ:`, `Q1:`, `Q 1.`, `Disambiguated question 1:`, `Question 2:` (numbered only),
// `Interpretation 1:` — then the question text.
const DQ_LINE =
  /^(?:[-*•]\s*)?(?:(?:DQ|Disambiguated\s+question|Sub-?question|Interpretation)\s*(?<n>\d+)?\s*[:.)–—-]|Q\s*(?<m>\d+)?\s*[:)]|Question\s*(?<k>\d+)\s*[:.)–—-])\s*(?<body>.*)$/i;
// `DA 1:`, `DA:`, `A1:`, `A:`, `Answer 1:` (numbered only), `Disambiguated answer 1:`.
const DA_LINE =
  /^(?:[-*•]\s*)?(?:(?:DA|Disambiguated\s+answer|Short\s+answer)\s*(?<n>\d+)?\s*[:.)–—-]|A\s*(?<m>\d+)?\s*[:)]|Answer\s*(?<k>\d+)\s*[:.)–—-])\s*(?<body>.*)$/i;
// The long answer: `Answer:`, `Long answer:`, `Final answer:`.
const LONG_ANSWER_LINE = /^(?:[-*•]\s*)?(?:Long\s+answer|Final\s+answer|Answer)\s*:\s*(.*)$/i;
// A new question block means the model started inventing another demo.
const QUESTION_LINE = /^(?:[-*•]\s*)?(?:Ambiguous\s+)?Question\s*:\s*(.*)$/i;
const CONTEXT_LINE = /^(?:Context|Passages?)\s*:/i;
// `1. Who …? — X`, `2) When …? Answer: Y`, `3. Who …?`
const NUMBERED_LIST_LINE = /^\s*(\d+)\s*[.)]\s+(.*)$/;

/** Put each `DQ n:` / `DA n:` / `Answer:` marker on its own line (models write them inline). */
function splitInlineMarkers(text: string): string {
  return text.replace(
    /([^\n\-*•])[ \t]+(?=(?:DQ|DA)\s*\d*\s*:|(?:Q|A)\s*\d+\s*:|Answer\s*:|Long\s+answer\s*:)/gi,
    '$1\n',
  );
}

/** Split `Who …? — X` / `Who …? Answer: X` into question and answer. */
function splitQuestionAndAnswer(text: string): QaPairText | null {
  const q = text.indexOf('?');
  if (q < 0) return null;
  const question = cleanFragment(text.slice(0, q + 1));
  const rest = text
    .slice(q + 1)
    .replace(/^\s*(?:[-–—:=>]+|\(|answer\s*:|a\s*:)\s*/i, '')
    .replace(/\)\s*$/, '');
  const answer = cleanFragment(rest);
  return { question, answer };
}

/**
 * DQ/DA pairs and the long answer from a RAC-style reply. Pairs are formed in order: each
 * answer line belongs to the most recent question line without one. A question left without an
 * answer (typically a truncated reply) is dropped and reported.
 */
export function parseDisambiguations(text: string): ParsedDisambiguations {
  const problems: string[] = [];
  const pairs: QaPairText[] = [];
  const lines = splitInlineMarkers(stripMarkdown(text))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  let pending: string | null = null;
  let longAnswer: string[] | null = null;
  let sawMarker = false;

  const flushPending = () => {
    if (pending !== null) {
      problems.push(`question without an answer: "${pending}"`);
      pending = null;
    }
  };

  for (const line of lines) {
    if (longAnswer !== null) {
      if (QUESTION_LINE.test(line) || CONTEXT_LINE.test(line) || DQ_LINE.test(line)) break;
      longAnswer.push(line);
      continue;
    }
    let m: RegExpExecArray | null;
    if ((m = DQ_LINE.exec(line))) {
      sawMarker = true;
      flushPending();
      const body = m.groups?.body ?? '';
      // `DQ 1: Who …? DA: X` was split already; `DQ 1: Who …? — X` is handled here.
      const both = splitQuestionAndAnswer(body);
      if (both && both.answer !== '') pairs.push(both);
      else pending = cleanFragment(body);
      if (pending === '') pending = null;
      continue;
    }
    if ((m = DA_LINE.exec(line))) {
      sawMarker = true;
      const answer = cleanFragment(m.groups?.body ?? '');
      if (pending === null) {
        problems.push(`answer without a question: "${answer}"`);
      } else if (answer === '') {
        problems.push(`empty answer for "${pending}"`);
        pending = null;
      } else {
        pairs.push({ question: pending, answer });
        pending = null;
      }
      continue;
    }
    if ((m = LONG_ANSWER_LINE.exec(line))) {
      flushPending();
      longAnswer = m[1] ? [m[1]] : [];
      continue;
    }
    if ((m = QUESTION_LINE.exec(line))) {
      // The model echoing the question it was asked is harmless; a question after pairs means
      // it began a new demo of its own, so everything after is discarded.
      if (pairs.length > 0 || pending !== null) break;
      continue;
    }
    if ((m = NUMBERED_LIST_LINE.exec(line))) {
      const both = splitQuestionAndAnswer(m[2]);
      if (both) {
        flushPending();
        if (both.answer !== '') pairs.push(both);
        else pending = both.question;
        continue;
      }
    }
    if (pending !== null && line.length < 120 && !line.includes('?')) {
      // An unlabelled line right after a question: its answer, when short.
      problems.push(`unlabelled answer line for "${pending}"`);
      pairs.push({ question: pending, answer: cleanFragment(line) });
      pending = null;
      continue;
    }
    // Chatter ("Sure! Here are the interpretations:") is skipped.
  }
  flushPending();
  if (!sawMarker && pairs.length > 0) problems.push('no DQ/DA markers; pairs read from a numbered list');
  const long = longAnswer === null ? null : longAnswer.join(' ').trim();
  return { pairs: dedupePairs(pairs), longAnswer: long === '' ? null : long, problems };
}

function dedupePairs(pairs: QaPairText[]): QaPairText[] {
  const seen = new Set<string>();
  return pairs.filter((p) => {
    const key = `${p.question.toLowerCase()}\u0000${p.answer.toLowerCase()}`;
    if (seen.has(key) || p.question === '') return false;
    seen.add(key);
    return true;
  });
}

export interface ParsedText {
  text: string;
  problems: string[];
}

const CHATTER_OPENERS =
  /^(?:sure|certainly|of course|okay|ok|here(?:'s| is| are)|below is|the following)\b[^\n]*?[:!.]\s*$/i;

/**
 * A long-form answer: drop an opening line of chatter and an `Answer:` label, stop where the
 * model begins a new `Question:` block, and join lines into one paragraph.
 */
export function parseLongAnswer(text: string): ParsedText {
  const problems: string[] = [];
  let lines = stripMarkdown(text)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (lines.length > 1 && CHATTER_OPENERS.test(lines[0])) {
    problems.push('chatter before the answer');
    lines = lines.slice(1);
  }
  // When the reply repeats DQ/DA pairs before `Answer:`, the long answer is what follows it.
  const answerAt = lines.findIndex((l) => LONG_ANSWER_LINE.test(l));
  if (answerAt > 0) lines = lines.slice(answerAt);
  const out: string[] = [];
  for (const [i, line] of lines.entries()) {
    if (i > 0 && (QUESTION_LINE.test(line) || CONTEXT_LINE.test(line))) {
      problems.push('reply continued with a new question block');
      break;
    }
    const m = LONG_ANSWER_LINE.exec(line);
    if (m && i === 0) {
      if (m[1]) out.push(m[1]);
      continue;
    }
    out.push(line);
  }
  const joined = out.join(' ').replace(/\s+/g, ' ').trim();
  if (joined === '') problems.push('empty answer');
  return { text: joined, problems };
}

export interface ParsedCot {
  rationale: string;
  answer: string | null;
  problems: string[];
}

/**
 * A chain-of-thought reply: the rationale and the answer after "So the answer is" (or "The
 * answer is", or a final `Answer:` line). The last such phrase wins, since models sometimes
 * restate the question's own "answer is" wording early on.
 */
export function parseCot(text: string, options: { multiline?: boolean } = {}): ParsedCot {
  const problems: string[] = [];
  let s = stripMarkdown(text).replace(/\s+\n/g, '\n').trim();
  // Cut an invented next demo.
  const nextQ = /\n\s*(?:Q|Question|Claim)\s*:/i.exec(s);
  if (nextQ) {
    problems.push('reply continued with a new question');
    s = s.slice(0, nextQ.index).trim();
  }
  s = s.replace(/^A\s*:\s*/i, '');
  const patterns = [/(?:so|therefore|thus|hence)?,?\s*the\s+(?:final\s+)?answer\s+is\s*:?\s*/gi, /(?:^|\n)\s*(?:final\s+)?answer\s*:\s*/gi];
  for (const re of patterns) {
    let last: RegExpExecArray | null = null;
    let m: RegExpExecArray | null;
    while ((m = re.exec(s)) !== null) last = m;
    if (last) {
      const after = s.slice(last.index + last[0].length);
      const answer = options.multiline ? after.replace(/\s+/g, ' ').trim() : cleanFragment(after.split('\n')[0]);
      const rationale = s.slice(0, last.index).trim();
      if (answer !== '') return { rationale, answer, problems };
      problems.push('answer phrase with nothing after it (truncated?)');
    }
  }
  problems.push('no "the answer is" phrase');
  return { rationale: s, answer: null, problems };
}

/** FEVER labels from what models actually write ("Supported", "REFUTED", "not enough info", "True"). */
export function parseFeverLabel(text: string): FeverLabel | null {
  const s = stripMarkdown(text).toLowerCase();
  const m =
    /\b(not\s+enough\s+info(?:rmation)?|nei|insufficient|unknown|cannot\s+(?:be\s+)?(?:determined|verified|say)|unverifiable|supports?|supported|refutes?|refuted|true|false|yes|no)\b/.exec(
      s,
    );
  if (!m) return null;
  const w = m[1];
  if (/^(supports?|supported|true|yes)$/.test(w)) return 'SUPPORTS';
  if (/^(refutes?|refuted|false|no)$/.test(w)) return 'REFUTES';
  return 'NOT ENOUGH INFO';
}

export interface ParsedAmbiguity {
  type: AmbiguityType | null;
  reason: string;
  interpretations: string[];
  problems: string[];
}

const AMBIGUITY_SYNONYMS: Array<[RegExp, AmbiguityType]> = [
  [/\b(none|no\s+ambiguity|unambiguous|not\s+ambiguous)\b/, 'none'],
  [/\b(time|temporal|date|year|when)\b/, 'time'],
  [/\b(location|place|geographic\w*|where|country|region)\b/, 'location'],
  [/\b(predicate|relation|verb|action|event)\b/, 'predicate'],
  [/\b(object|answer\s+type)\b/, 'object'],
  [/\b(subject|entity|person|who)\b/, 'subject'],
];

function toAmbiguityType(raw: string): AmbiguityType | null {
  const s = raw.toLowerCase();
  for (const [re, type] of AMBIGUITY_SYNONYMS) if (re.test(s)) return type;
  return null;
}

/** Diva's diversification reply: ambiguity type, reason, and numbered pseudo-interpretations. */
export function parseAmbiguity(text: string): ParsedAmbiguity {
  const problems: string[] = [];
  const lines = stripMarkdown(text)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let type: AmbiguityType | null = null;
  let reason = '';
  const interpretations: string[] = [];
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if (type === null && (m = /^(?:ambiguity\s+)?type\s*:\s*(.+)$/i.exec(line))) {
      type = toAmbiguityType(m[1]);
      if (type === null) problems.push(`unknown ambiguity type "${m[1]}"`);
      continue;
    }
    if (reason === '' && (m = /^reason(?:ing)?\s*:\s*(.+)$/i.exec(line))) {
      reason = m[1].trim();
      continue;
    }
    if (/^(?:pseudo-?)?interpretations?\s*:?\s*$/i.test(line)) continue;
    if ((m = /^(?:\d+\s*[.):]|[-*•]|interpretation\s*\d*\s*[:.)])\s*(.+)$/i.exec(line))) {
      const q = cleanFragment(m[1]);
      if (q) interpretations.push(q);
      continue;
    }
    if (line.endsWith('?') && !/^question\s*:/i.test(line)) interpretations.push(cleanFragment(line));
  }
  if (type === null) problems.push('no ambiguity type');
  if (interpretations.length === 0) problems.push('no interpretations');
  const unique = [...new Set(interpretations.map((q) => q.trim()))].filter(Boolean);
  return { type, reason, interpretations: unique, problems };
}

/** The first question in a reply (verifying questions); strips labels such as `Question:`. */
export function parseQuestion(text: string): ParsedText {
  const problems: string[] = [];
  const lines = stripMarkdown(text)
    .split('\n')
    .map((l) => l.replace(/^(?:verifying\s+)?question\s*\d*\s*:\s*/i, '').trim())
    .filter(Boolean);
  const withMark = lines.find((l) => l.includes('?'));
  if (withMark) return { text: cleanFragment(withMark.slice(0, withMark.indexOf('?') + 1)), problems };
  problems.push('no question mark');
  return { text: cleanFragment(lines[0] ?? ''), problems };
}

/** A one-line short answer: the first non-chatter line, `Answer:` label removed. */
export function parseShortAnswer(text: string): ParsedText {
  const problems: string[] = [];
  const lines = stripMarkdown(text)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let i = 0;
  if (lines.length > 1 && CHATTER_OPENERS.test(lines[0])) {
    problems.push('chatter before the answer');
    i = 1;
  }
  const line = (lines[i] ?? '').replace(/^(?:final\s+)?(?:short\s+)?answer\s*:\s*/i, '');
  const out = cleanFragment(line);
  if (out === '') problems.push('empty answer');
  return { text: out, problems };
}
