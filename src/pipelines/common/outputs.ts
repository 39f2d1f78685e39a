import type { TraceRecorder } from '../../trace/recorder';
import { parseCot, parseFeverLabel, parseLongAnswer, parseShortAnswer } from '../parsing';
import type { TaskKind } from './task';
import { splitSentences } from './text';

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
    const parsed = parseLongAnswer(raw);
    if (parsed.text === '') {
      rec.parseFailure(purpose, 'empty long answer', raw, 'empty output');
      return { output: '' };
    }
    return { output: parsed.text };
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
