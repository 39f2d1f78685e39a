/**
 * Diva prompts (Diversify–Verify–Adapt), written for ambiqa: name the ambiguity and write
 * pseudo-interpretations; judge per interpretation whether the passages answer it; then answer
 * with the passages (RAG) or, when retrieval was useless, from the model's own knowledge.
 */
import type { ChatMessage } from '../../llm/types';
import type { Passage } from '../../retrieval/types';
import { answerShots } from '../baselines/prompts';
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

/** One worked example of our own, so the format is shown once. */
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

export function diversifyPrompt(question: string, withExample: boolean): ChatMessage[] {
  return fewShot(DIVERSIFY_INSTRUCTION, withExample ? [DIVERSIFY_EXAMPLE] : [], `Question: ${question}`);
}

export function verifyPrompt(interpretation: string, passages: Passage[]): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        `Passages:\n${formatContext(passages)}\n\n` +
        `Question: ${interpretation}\n\n` +
        'Do the passages contain the answer to this question? Reply with Yes or No only.',
    },
  ];
}

const GENERATE: Record<'rag' | 'closed-book', Record<TaskKind, string>> = {
  rag: {
    long:
      'The question is ambiguous. Using the passages, answer as many of its interpretations as possible ' +
      'in a long answer of at least three sentences, giving each interpretation its answer.',
    short: 'Using the passages, answer the question with a short answer only.',
    fact: 'Using the passages, reply with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.',
  },
  'closed-book': {
    long:
      'The question is ambiguous. From your own knowledge, write a long answer of at least three sentences ' +
      'that covers as many aspects and interpretations of the question as possible, each with its answer.',
    short: 'From your own knowledge, answer the question with a short answer only.',
    fact: 'From your own knowledge, reply with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.',
  },
};

function interpretationHint(interpretations: string[]): string {
  return interpretations.length > 1 ? `Possible interpretations:\n${interpretations.map((q) => `- ${q}`).join('\n')}\n\n` : '';
}

export function ragPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[], passages: Passage[]): ChatMessage[] {
  return fewShot(
    GENERATE.rag[task],
    answerShots(task, demos),
    `Context:\n${formatContext(passages)}\n\n${interpretationHint(interpretations)}Question: ${question}`,
  );
}

export function closedBookPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[]): ChatMessage[] {
  return fewShot(GENERATE['closed-book'][task], answerShots(task, demos), `${interpretationHint(interpretations)}Question: ${question}`);
}
