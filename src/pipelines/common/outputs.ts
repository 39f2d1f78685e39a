import type { TraceRecorder } from '../../trace/recorder';
import { parseCot, parseDisambiguations, parseFeverLabel, parseLongAnswer, parseShortAnswer, type QaPairText } from '../parsing';
import type { TaskKind } from './task';
import { normaliseAnswer, splitSentences } from './text';

export interface FinalAnswer {
  /** The text a long-form metric scores. */
  output: string;
  /** The short answer or FEVER label, for EM/F1/accuracy; absent for long answers. */
  answer?: string;
}

/**
 * Read a final answer from a reply, by task. An unusable reply is a counted parse failure with
 * the fallback named: long → the raw reply, short → its last sentence, fact → NOT ENOUGH INFO.
 */
export function readFinalAnswer(rec: TraceRecorder, task: TaskKind, raw: string, purpose: string): FinalAnswer {
  if (task === 'long') {
    const text = readLongAnswer(rec, raw, purpose);
    if (text === '') {
      rec.parseFailure(purpose, 'empty long answer', raw, 'empty output');
      return { output: '' };
    }
    return { output: text };
  }
  if (task === 'fact') {
    const cot = parseCot(raw);
    const label = (cot.answer !== null ? parseFeverLabel(cot.answer) : null) ?? parseFeverLabel(raw);
    if (label === null) {
      rec.parseFailure(purpose, 'no FEVER label in the reply', raw, 'NOT ENOUGH INFO');
      return { output: 'NOT ENOUGH INFO', answer: 'NOT ENOUGH INFO' };
    }
    return { output: label, answer: label };
  }
  const cot = parseCot(raw);
  if (cot.answer !== null) return { output: cot.answer, answer: cot.answer };
  const short = parseShortAnswer(raw);
  if (short.text === '') {
    rec.parseFailure(purpose, 'empty short answer', raw, 'empty answer');
    return { output: '', answer: '' };
  }
  return { output: short.text, answer: short.text };
}

// A reply that opens with a `DQ n:` or `DA n:` marker (after quotes or a bullet a small model puts
// before it): the clarification lines themselves, not a long answer.
const OPENS_WITH_PAIR_MARKER = /^[\s"'“”‘’*•-]*(?:DQ|DA)\s*\d*\s*[:.)]/i;
// Quotes a model wraps around a DQ line (`"DQ 1: Who …? " DA 1: X`) hide the marker from the pair parser.
const QUOTES_BEFORE_MARKER = /["“”'‘’]+\s*(?=(?:DQ|DA)\s*\d*\s*:)/gi;

/**
 * DQ/DA pairs as the sentences of a long answer: "Who sang X? Kim Carnes." per pair; a pair whose
 * "question" only repeats its answer (seen: `DQ 1: Margot Robbie / DA 1: Margot Robbie`) is the answer alone.
 */
export function pairsAsSentences(pairs: readonly QaPairText[]): string {
  return pairs
    .map((p) => {
      const answer = `${p.answer.trim().replace(/[.]+$/, '')}.`;
      const question = p.question.trim().replace(/\?+$/, '');
      return normaliseAnswer(question) === normaliseAnswer(p.answer) ? answer : `${question}? ${answer}`;
    })
    .join(' ');
}

/**
 * The long answer of a method's final step. A small model sometimes replies with its
 * clarification lines instead ("DQ 1: Who sang …? DA 1: Kim Carnes"): a long-form metric would
 * then score marker tokens and half-questions. Such a reply becomes the long answer the method
 * promises — the text after its `Answer:` line when it wrote one (no failure: only the order was
 * odd), else its pairs (or `fallbackPairs`, the method's own, when given and non-empty) written as
 * sentences, recorded as a parse failure so `decision_parse_failure_rate` counts it. Returns ''
 * for an empty reply (the caller names its own fallback).
 */
export function readLongAnswer(
  rec: TraceRecorder,
  raw: string,
  purpose: string,
  options: { fallbackPairs?: readonly QaPairText[] } = {},
): string {
  const text = parseLongAnswer(raw).text;
  if (!OPENS_WITH_PAIR_MARKER.test(text)) return text;
  const parsed = parseDisambiguations(raw.replace(QUOTES_BEFORE_MARKER, ''));
  if (parsed.longAnswer !== null) return parsed.longAnswer;
  const own = options.fallbackPairs ?? [];
  const pairs = own.length > 0 ? own : parsed.pairs;
  if (pairs.length > 0) {
    const source = own.length > 0 ? "the method's own DQ/DA pairs" : 'its DQ/DA pairs';
    rec.parseFailure(purpose, 'the reply is DQ/DA lines, not a long answer', raw, `${source} written as sentences`);
    return pairsAsSentences(pairs);
  }
  // Markers but no readable pair (a lone truncated DQ line): the words without the markers.
  const words = text.replace(/(?:^|\s)["“”'‘’]*(?:DQ|DA)\s*\d*\s*[:.)]\s*/gi, ' ').replace(/\s+/g, ' ').trim();
  rec.parseFailure(purpose, 'the reply is DQ/DA lines, not a long answer', raw, 'the reply without its DQ/DA markers');
  return words;
}

export interface CotSample {
  rationale: string;
  /** null when the sample gave no answer (it abstains from the vote). */
  answer: string | null;
}

/**
 * One chain-of-thought sample. Without an answer phrase it is a counted parse failure: a short
 * or fact sample abstains from the vote; a long one keeps the whole reply as its answer.
 */
export function readCotSample(rec: TraceRecorder, task: TaskKind, raw: string, purpose: string, sampleIndex: number): CotSample {
  const parsed = parseCot(raw, { multiline: task === 'long' });
  if (parsed.answer === null) {
    if (task === 'long') {
      const text = parseLongAnswer(raw).text;
      rec.parseFailure(purpose, `sample ${sampleIndex}: no "So the answer is"`, raw, 'whole reply as the answer');
      return { rationale: '', answer: text === '' ? null : text };
    }
    rec.parseFailure(purpose, `sample ${sampleIndex}: no "So the answer is"`, raw, 'sample abstains from the vote');
    return { rationale: parsed.rationale, answer: null };
  }
  if (task === 'fact') {
    const label = parseFeverLabel(parsed.answer);
    if (label === null) {
      rec.parseFailure(purpose, `sample ${sampleIndex}: "${parsed.answer}" is not a FEVER label`, raw, 'sample abstains from the vote');
      return { rationale: parsed.rationale, answer: null };
    }
    return { rationale: parsed.rationale, answer: label };
  }
  return { rationale: parsed.rationale, answer: parsed.answer };
}

/** Last sentence of a text (a short-answer fallback). */
export function lastSentence(text: string): string {
  const s = splitSentences(text);
  return s[s.length - 1] ?? '';
}
