/**
 * Disambig-F1 (D-F1, ASQA; Stelmakh et al. 2022): does the long answer let a reader answer each
 * disambiguated question?
 *
 *   for each DQ: span = reader(DQ, context = the generated long answer)   ('' = no answer)
 *                f1   = max over the DQ's short answers of SQuAD token F1(span, answer)
 *   D-F1(question) = 100 × mean over DQs;  run-level D-F1 = mean over questions.
 *
 * The reader is pluggable and every D-F1 number is reported with `reader.name`:
 * - ASQA's official reader is RoBERTa-large fine-tuned on SQuAD 2.0; an extractive model of that
 *   kind runs through transformers.js when the user provides ONNX weights
 *   (qa-onnx-reader.ts, `qa-onnx:<dir>`);
 * - otherwise `LlmSpanReader` asks a language model (greedy, with four worked examples) to copy the
 *   shortest span of the long answer that answers the DQ, or to say `none`. Its replies are checked: one that is not a span of the
 *   long answer (after SQuAD normalisation) counts as "no answer", so the model cannot answer
 *   from its own knowledge — an extractive reader cannot either. Counts of such replies are kept
 *   in `stats`.
 * Numbers from different readers are not comparable with each other or with the papers'.
 */
import type { QaPair } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { ChatMessage, LanguageModel } from '../llm/types';
import { normalizeAnswer, tokenF1 } from './squad';
import type { DisambigReader, MetricFamily, Score } from './score';

// The reader's contract lives in score.ts (what a scorer is given); re-exported for its users.
export type { DisambigReader } from './score';

export interface DisambigF1Result {
  /** 0–100; null when the question has no DQs. */
  score: number | null;
  /** The reader's span per DQ ('' = no answer), in the file's order. */
  spans: string[];
  /** Token F1 (0–100) per DQ. */
  f1s: number[];
  reader: string;
}

export async function disambigF1(qaPairs: readonly QaPair[], output: string, reader: DisambigReader): Promise<DisambigF1Result> {
  const spans: string[] = [];
  const f1s: number[] = [];
  for (const qa of qaPairs) {
    // An empty long answer answers nothing; no need to ask the reader.
    const span = output.trim() ? await reader.read(qa.question, output) : '';
    spans.push(span);
    let best = 0;
    for (const a of qa.shortAnswers) best = Math.max(best, tokenF1(span, a));
    f1s.push(100 * best);
  }
  const score = f1s.length === 0 ? null : f1s.reduce((s, x) => s + x, 0) / f1s.length;
  return { score, spans, f1s, reader: reader.name };
}

/** Scorer form: `{ output, expected: qaPairs, reader }` → D-F1 with the reader and spans in metadata. */
export async function DisambigF1(args: { output: string; expected: readonly QaPair[]; reader: DisambigReader }): Promise<Score> {
  const r = await disambigF1(args.expected, args.output, args.reader);
  return { name: 'd_f1', score: r.score, metadata: { reader: r.reader, spans: r.spans, f1s: r.f1s }, ...(r.score === null ? { reason: 'no qa_pairs' } : {}) };
}

/** Registry entry: D-F1 of ASQA long answers, read by the run's fixed reader. */
export const disambigF1Family: MetricFamily<'d_f1'> = {
  family: 'disambig-f1',
  reference: 'ASQA (Stelmakh et al. 2022) Disambig-F1, SQuAD token F1 of a reader’s span per DQ',
  metrics: ['d_f1'],
  datasets: ['asqa'],
  defaults: ['d_f1'],
  needsReader: true,
  async score({ text, example, reader }) {
    if (!reader) throw new AmbiqaError('d_f1 and dr need a reader', 'choose one: reader embedded, openai:<model> or qa-onnx:<folder>');
    // No DQs: nothing to read (the reader is not called).
    if (example.qaPairs.length === 0) return [{ name: 'd_f1', score: null, reason: 'no qa_pairs' }];
    return [await DisambigF1({ output: text, expected: example.qaPairs, reader })];
  },
};

// ------------------------------------------------------------------------ the LLM reader

/**
 * Version of the reading prompt below (instruction, worked examples, reply parsing). Recorded with
 * every D-F1 number: change it whenever any of those change, because scores from two prompts are
 * not comparable.
 */
export const READER_PROMPT_VERSION = 'span-v1';

export interface LlmSpanReaderOptions {
  /** Reported name (default `llm:<provider>/<model>`); readers built from a spec give the full description. */
  name?: string;
  /** Upper bound on the reply (default 32 tokens: a span, not an essay). */
  maxTokens?: number;
  /** Treat a reply that is not a span of the long answer as "no answer" (default true). */
  requireSpan?: boolean;
}

const NO_ANSWER = /^(none|no answer|n\/?a|unanswerable|unknown|not (mentioned|stated|given|answered)|the text does not (say|answer|mention)[^]*)$/i;

/**
 * Turn the model's reply into a span: first line, without an `Answer:` prefix, surrounding quotes
 * or a final period; '' for "none"-like replies; '' for a reply that is not in the context (when
 * `requireSpan`). Exported for tests.
 */
export function parseReaderReply(reply: string, context: string, requireSpan = true): { span: string; notInContext: boolean } {
  let s = (reply.split('\n').find((l) => l.trim()) ?? '').trim();
  s = s.replace(/^(answer|span)\s*:\s*/i, '').trim();
  for (let previous = ''; previous !== s; ) {
    previous = s;
    s = s.replace(/^["'“”‘’`]+|["'“”‘’`]+$/g, '').replace(/[.。]+$/u, '').trim();
  }
  if (!s || NO_ANSWER.test(s)) return { span: '', notInContext: false };
  if (requireSpan) {
    const n = normalizeAnswer(s);
    if (!n || !` ${normalizeAnswer(context)} `.includes(` ${n} `)) return { span: '', notInContext: true };
  }
  return { span: s, notInContext: false };
}

const READER_INSTRUCTION =
  'You answer questions about a text by copying the shortest phrase of the text that answers the question. ' +
  'Reply with that phrase only. If the text does not answer the question, reply: none';

/** Worked examples (ours): a date, a noun phrase, a question the text cannot answer, a name. */
const READER_DEMOS: Array<[text: string, question: string, answer: string]> = [
  ['Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.', 'When did Marie Curie win the Nobel Prize in Chemistry?', '1911'],
  ['The Nile flows north through Egypt and Sudan into the Mediterranean Sea.', 'Into which sea does the Nile flow?', 'the Mediterranean Sea'],
  ['The Nile flows north through Egypt and Sudan into the Mediterranean Sea.', 'How long is the Nile?', 'none'],
  ['Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.', 'Who won the Nobel Prize in Physics in 1903?', 'Marie Curie'],
];

const readerTurn = (text: string, question: string): string => `Text: ${text}\nQuestion: ${question}`;

/**
 * The reader's chat: the instruction, four short worked examples (small models copy whole
 * sentences without them), then the long answer and the DQ.
 */
export function readerMessages(question: string, context: string): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: READER_INSTRUCTION }];
  for (const [text, q, a] of READER_DEMOS) messages.push({ role: 'user', content: readerTurn(text, q) }, { role: 'assistant', content: a });
  messages.push({ role: 'user', content: readerTurn(context, question) });
  return messages;
}

export class LlmSpanReader implements DisambigReader {
  readonly name: string;
  readonly stats = { calls: 0, noAnswer: 0, notInContext: 0 };
  private readonly maxTokens: number;
  private readonly requireSpan: boolean;

  constructor(
    private readonly llm: LanguageModel,
    options: LlmSpanReaderOptions = {},
  ) {
    this.name = options.name ?? `llm:${llm.provider}/${llm.model}`;
    this.maxTokens = options.maxTokens ?? 32;
    this.requireSpan = options.requireSpan ?? true;
  }

  async read(question: string, context: string): Promise<string> {
    this.stats.calls++;
    const result = await this.llm.generate({
      messages: readerMessages(question, context),
      temperature: 0,
      maxTokens: this.maxTokens,
      stop: ['\n'],
      purpose: 'metrics.d_f1.reader',
    });
    const { span, notInContext } = parseReaderReply(result.completions[0]?.text ?? '', context, this.requireSpan);
    if (!span) this.stats.noAnswer++;
    if (notInContext) this.stats.notInContext++;
    return span;
  }
}
