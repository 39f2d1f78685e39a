/**
 * Diva prompts (Diversify–Verify–Adapt), written for ambiqa: name the ambiguity and write
 * pseudo-interpretations; judge per interpretation whether the passages answer it; then answer
 * with the passages (RAG) or, when retrieval was useless, from the model's own knowledge.
 */
import type { ChatMessage } from '../../llm/types';
import type { Passage } from '../../retrieval/types';
import { answerShots, clarifyingShot, inPromptOrder } from '../baselines/prompts';
import type { Shot } from '../common/chat';
import { fewShot } from '../common/chat';
import { formatContext } from '../common/retrieval';
import type { TaskKind } from '../common/task';
import type { Demo } from '../types';

export const DIVERSIFY_INSTRUCTION =
  'A question may be ambiguous. Say which part makes it ambiguous — subject, object, predicate, time, ' +
  'location, or none — and why, then list the specific questions it could mean, one per line, numbered. ' +
  'Use exactly this format:\n' +
  'Ambiguity type: <subject|object|predicate|time|location|none>\n' +
  'Reason: <one sentence>\n' +
  'Interpretations:\n1. <question>\n2. <question>';

/** A worked example of our own for an ambiguous question: the type, the reason, its readings. */
export const DIVERSIFY_EXAMPLE = {
  user: 'Question: Who won the Nobel Prize in Literature?',
  assistant:
    'Ambiguity type: time\n' +
    'Reason: The prize is awarded every year, and the question names no year.\n' +
    'Interpretations:\n' +
    '1. Who won the Nobel Prize in Literature in 2016?\n' +
    '2. Who won the Nobel Prize in Literature in 2017?\n' +
    '3. Who won the first Nobel Prize in Literature, in 1901?',
};

/**
 * A worked example of our own for an unambiguous question (type none, one interpretation: the
 * question). Shown with the ambiguous one, so that the prompt demonstrates both answers of the
 * type question; with the ambiguous example alone, the format itself says "name a reading".
 */
export const DIVERSIFY_UNAMBIGUOUS_EXAMPLE = {
  user: 'Question: What is the chemical symbol of the element gold?',
  assistant:
    'Ambiguity type: none\n' +
    'Reason: The question names one element and asks for one fact about it.\n' +
    'Interpretations:\n' +
    '1. What is the chemical symbol of the element gold?',
};

/** Which worked examples the diversification prompt shows. */
export interface DiversifyExamples {
  /** The ambiguous example (off: zero-shot). */
  ambiguous: boolean;
  /** The unambiguous example too (shown first, before the ambiguous one). */
  unambiguous: boolean;
}

export function diversifyPrompt(question: string, examples: DiversifyExamples): ChatMessage[] {
  const shots = examples.ambiguous ? [...(examples.unambiguous ? [DIVERSIFY_UNAMBIGUOUS_EXAMPLE] : []), DIVERSIFY_EXAMPLE] : [];
  return fewShot(DIVERSIFY_INSTRUCTION, shots, `Question: ${question}`);
}

/** Which worked examples the verification prompt shows: none (zero-shot) or one of each label. */
export type VerifyDemos = 'none' | 'balanced';

function verifyTurn(interpretation: string, context: string): string {
  return `Passages:\n${context}\n\nQuestion: ${interpretation}\n\nDo the passages contain the answer to this question? Reply with Yes or No only.`;
}

/**
 * `verifyDemos: balanced`: one example of each label, written for ambiqa on invented topics. The
 * "No" example's passages are on the question's topic but leave its answer out (the hard case:
 * related, not answering); it comes first so the last turn before the real question is "Yes".
 */
export const BALANCED_VERIFY_SHOTS: ReadonlyArray<{ user: string; assistant: string }> = [
  {
    user: verifyTurn(
      'In which year did the Harlow ferry line start service?',
      '[1] Harlow ferry; The ferry crosses the estuary every half hour and carries up to forty cars.\n' +
        '[2] Harlow; The town lies on the north bank of the estuary and is known for its boatyards.',
    ),
    assistant: 'No',
  },
  {
    user: verifyTurn(
      'Who founded the Quell Observatory?',
      '[1] Quell Observatory; The observatory was founded by the astronomer Ines Okafor on a hill above the town.\n' +
        '[2] Quell; A market town with a weekly fair.',
    ),
    assistant: 'Yes',
  },
];

export function verifyPrompt(interpretation: string, passages: Passage[], demos: VerifyDemos = 'none'): ChatMessage[] {
  const shots: ChatMessage[] =
    demos === 'balanced'
      ? BALANCED_VERIFY_SHOTS.flatMap((s) => [
          { role: 'user' as const, content: s.user },
          { role: 'assistant' as const, content: s.assistant },
        ])
      : [];
  return [...shots, { role: 'user', content: verifyTurn(interpretation, formatContext(passages)) }];
}

const GENERATE: Record<'rag' | 'closed-book', Record<TaskKind, string>> = {
  rag: {
    long:
      'The question is ambiguous. Using the passages, write its disambiguated questions, one per line as ' +
      '"DQ 1:", "DQ 2:", …, each followed by its short answer on a line "DA 1:", "DA 2:", …; then write ' +
      '"Answer:" and a long answer of at least three sentences that answers as many interpretations as possible.',
    short: 'Using the passages, answer the question with a short answer only.',
    fact: 'Using the passages, reply with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.',
  },
  'closed-book': {
    long:
      'The question is ambiguous. From your own knowledge, write its disambiguated questions, one per line as ' +
      '"DQ 1:", "DQ 2:", …, each followed by its short answer on a line "DA 1:", "DA 2:", …; then write ' +
      '"Answer:" and a long answer of at least three sentences that covers as many aspects and interpretations ' +
      'as possible.',
    short: 'From your own knowledge, answer the question with a short answer only.',
    fact: 'From your own knowledge, reply with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.',
  },
};

function interpretationHint(interpretations: string[]): string {
  return interpretations.length > 1 ? `Possible interpretations:\n${interpretations.map((q) => `- ${q}`).join('\n')}\n\n` : '';
}

/**
 * Demo turns for generation. Long form (ASQA): the demos answer with DQ/DA pairs before the long
 * answer, as ToC's RAC demos do, so the model spells out each interpretation's answer; short and
 * fact tasks: question → answer.
 */
function generationShots(task: TaskKind, demos: Demo[]): Shot[] {
  return task === 'long' ? inPromptOrder(demos).map(clarifyingShot) : answerShots(task, demos);
}

export function ragPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[], passages: Passage[]): ChatMessage[] {
  return fewShot(
    GENERATE.rag[task],
    generationShots(task, demos),
    `Context:\n${formatContext(passages)}\n\n${interpretationHint(interpretations)}Question: ${question}`,
  );
}

export function closedBookPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[]): ChatMessage[] {
  return fewShot(GENERATE['closed-book'][task], generationShots(task, demos), `${interpretationHint(interpretations)}Question: ${question}`);
}
