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

/** Split `1. Who …? 2. Who …?` (several numbered items on one line) into the items. */
function splitInlineItems(text: string): string[] {
  return text
    .split(/(?:^|\s)\d+\s*[.)]\s+/)
    .map((x) => x.trim())
    .filter(Boolean);
}

const DIVA_LABEL_INSIDE = /\b(?:ambiguity\s+type|type|reason(?:ing)?|(?:pseudo-?)?interpretations?)\s*:/i;

/**
 * Diva's diversification reply: ambiguity type, reason, and numbered pseudo-interpretations.
 * Issue 41's audit: fields may share a line (`Type: time|Reason: …|Interpretations: 1. …? 2. …?`),
 * the list may follow its header on the same line, and a numbered reason is not an
 * interpretation — once an `Interpretations:` header is seen, only what follows it is read, and
 * an interpretation holding a field label is dropped (reported), never kept.
 */
export function parseAmbiguity(text: string): ParsedAmbiguity {
  const problems: string[] = [];
  const lines = stripMarkdown(text)
    .split(/\n|\|/)
    .map((l) => l.trim())
    .filter(Boolean);
  let type: AmbiguityType | null = null;
  let reason = '';
  const hasHeader = lines.some((l) => /^(?:pseudo-?)?interpretations?\s*:?/i.test(l));
  let inList = !hasHeader;
  const interpretations: string[] = [];
  const take = (raw: string) => {
    const q = cleanFragment(raw);
    if (q === '') return;
    if (DIVA_LABEL_INSIDE.test(q)) problems.push(`interpretation with a field label dropped: "${q.slice(0, 80)}"`);
    else interpretations.push(q);
  };
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
    if ((m = /^(?:pseudo-?)?interpretations?\s*:?\s*(.*)$/i.exec(line))) {
      inList = true;
      for (const item of splitInlineItems(m[1])) take(item);
      continue;
    }
    if (!inList) continue;
    if ((m = /^(?:\d+\s*[.):]|[-*•]|interpretation\s*\d*\s*[:.)])\s*(.+)$/i.exec(line))) {
      for (const item of splitInlineItems(m[1])) take(item);
      continue;
    }
    if (line.endsWith('?') && !/^question\s*:/i.test(line)) take(line);
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

// ---------------------------------------------------------------- ToC's DQ/DA reader (issue 41)

/** A candidate the strict reader refused, with why; the pipeline records it as a parse failure. */
export interface RejectedPair {
  question: string;
  answer: string;
  reason: string;
}

export interface ReadDisambiguations {
  /** Well-formed pairs, matched by number, in reply order, exact repeats removed. */
  pairs: QaPairText[];
  /** Candidates that failed a check (never nodes). */
  rejected: RejectedPair[];
  /** Everything else that was odd: unlabelled lines skipped, lone labels, repeats. */
  problems: string[];
  /** Which shape the reply had: `lines` (the released alternating lines), `one-line` (`DQ n: …|DA n: …`), `mixed`, `none`. */
  shape: 'lines' | 'one-line' | 'mixed' | 'none';
}

// A label where one starts: at the start of a line, or after white space or `|` (the 0.5B model's
// one-line form). A label after a quote (`start with "DQ 1:"`) is quoted text, not a label.
const LABEL = /(^|[\s|])D\s?(Q|A)\s*(\d+)?\s*:\s*/gi;
// Any label-looking text left inside a body makes the pair garbled.
const LABEL_INSIDE = /\bD\s?[QA]\s*\d*\s*:/i;
/**
 * Longest answer (words) the reader accepts. ASQA's short answers are a few words, but a "what
 * did … do" question is answered by a clause (the held-out question on Kenilworth Castle: 18–22
 * words, one sentence); a pasted passage is longer and runs over several sentences.
 */
export const MAX_ANSWER_WORDS = 25;
/** An answer of several sentences is a passage once it is longer than this. */
export const MAX_MULTI_SENTENCE_ANSWER_WORDS = 15;
/** Longest disambiguated question (words); a pasted passage is longer. */
export const MAX_QUESTION_WORDS = 40;

interface Segment {
  kind: 'Q' | 'A';
  n: number | null;
  body: string;
  /** The line it sat on shared it with another label (the one-line form). */
  inline: boolean;
}

const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/** Why a question body is not a disambiguated question, or null when it is one. */
function questionFault(q: string): string | null {
  if (q === '') return 'empty question';
  if (LABEL_INSIDE.test(q)) return 'a DQ/DA label inside the question';
  if (!/\?["'”’)\]]*$/.test(q)) return 'the question does not end with "?"';
  if (words(q) < 3) return 'question too short';
  if (words(q) > MAX_QUESTION_WORDS) return `question longer than ${MAX_QUESTION_WORDS} words (a passage?)`;
  return null;
}

/** Why an answer body is not a short answer, or null when it is one. */
function answerFault(a: string): string | null {
  if (a === '') return 'empty answer';
  if (LABEL_INSIDE.test(a)) return 'a DQ/DA label inside the answer';
  if (/^(?:reply|answer|write|start|use)\b.*\b(?:examples?|format|DQ|DA)\b/i.test(a)) return 'the answer repeats the instruction';
  // The released template asks for short answers "separated by semi-colon (;)": each part is
  // held to the limit, the whole to a few of them.
  if (a.split(';').some((part) => words(part) > MAX_ANSWER_WORDS) || words(a) > 3 * MAX_ANSWER_WORDS) return `answer longer than ${MAX_ANSWER_WORDS} words`;
  if (/[a-z0-9)\]]{2}[.!?]\s+[A-Z]/.test(a) && words(a) > MAX_MULTI_SENTENCE_ANSWER_WORDS) return 'the answer is several sentences (a passage?)';
  if (/\?["'”’)]*$/.test(a)) return 'the answer is a question';
  return null;
}

/**
 * Why a DQ/DA pair is garbled (a label, an instruction or a passage inside, no question mark, a
 * long answer), or null when it is well formed: the reader's own checks, also applied to the
 * nodes of traces written before it (tree quality, src/pipelines/toc/analysis.ts).
 */
export function pairFault(question: string, answer: string): string | null {
  return questionFault(question.trim()) ?? answerFault(answer.trim());
}

/**
 * ToC's DQ/DA reader: the released `parse_disambig` (gankim/tree-of-clarifications `toc/utils.py`)
 * reads a `DQ n:` line followed by a `DA n:` line and skips anything else; this reader does the
 * same and also reads the one-line form the 0.5B model writes (`DQ 1: …?|DA 1: 1957`), labels
 * with markdown, and pairs spread over several lines. Each `DQ` is matched with the `DA` right
 * after it, which must carry the same number (when both are numbered); then the pair is checked —
 * the question ends with "?", the answer is short, neither holds a label — and what fails is
 * `rejected`, never a pair. Unlabelled lines (chatter, a pasted passage, a long answer) are never
 * read as a question or an answer. The reply ends at `Answer:` or at a new `Question:` block.
 */
export function readDisambiguations(text: string): ReadDisambiguations {
  const problems: string[] = [];
  const rejected: RejectedPair[] = [];
  const segments: Segment[] = [];
  let sawLines = false;
  let sawInline = false;
  const lines = stripMarkdown(text).split('\n');
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '') continue;
    if (LONG_ANSWER_LINE.test(line) || (QUESTION_LINE.test(line) && segments.length > 0) || CONTEXT_LINE.test(line)) {
      if (segments.length > 0) break;
      continue;
    }
    const found: Array<{ kind: 'Q' | 'A'; n: number | null; start: number; end: number }> = [];
    LABEL.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = LABEL.exec(line)) !== null) {
      const start = m.index + m[1].length;
      found.push({ kind: m[2].toUpperCase() as 'Q' | 'A', n: m[3] !== undefined ? Number(m[3]) : null, start, end: m.index + m[0].length });
    }
    if (found.length === 0) {
      if (segments.length > 0) problems.push(`unlabelled line skipped: "${line.slice(0, 80)}"`);
      continue;
    }
    if (found[0].start > 0 && line.slice(0, found[0].start).replace(/[-*•|\s]/g, '') !== '') {
      problems.push(`text before a label skipped: "${line.slice(0, Math.min(found[0].start, 80))}"`);
    }
    const inline = found.length > 1;
    if (inline) sawInline = true;
    else sawLines = true;
    found.forEach((f, i) => {
      const body = line.slice(f.end, i + 1 < found.length ? found[i + 1].start : undefined).replace(/[|\s]+$/, '');
      segments.push({ kind: f.kind, n: f.n, body: cleanFragment(body), inline });
    });
  }

  const pairs: QaPairText[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    if (s.kind === 'A') {
      problems.push(`DA without a DQ before it: "${s.body.slice(0, 80)}"`);
      continue;
    }
    const next = segments[i + 1];
    if (next === undefined || next.kind !== 'A') {
      problems.push(`DQ without its DA: "${s.body.slice(0, 80)}"`);
      continue;
    }
    i += 1;
    if (s.n !== null && next.n !== null && s.n !== next.n) {
      rejected.push({ question: s.body, answer: next.body, reason: `DQ ${s.n} followed by DA ${next.n}` });
      continue;
    }
    const fault = pairFault(s.body, next.body);
    if (fault !== null) {
      rejected.push({ question: s.body, answer: next.body, reason: fault });
      continue;
    }
    const key = `${s.body.toLowerCase()}\u0000${next.body.toLowerCase()}`;
    if (seen.has(key)) {
      problems.push(`repeated pair: "${s.body.slice(0, 60)}" / "${next.body.slice(0, 40)}"`);
      continue;
    }
    seen.add(key);
    pairs.push({ question: s.body, answer: next.body });
  }
  const shape = segments.length === 0 ? 'none' : sawLines && sawInline ? 'mixed' : sawInline ? 'one-line' : 'lines';
  return { pairs, rejected, problems, shape };
}
