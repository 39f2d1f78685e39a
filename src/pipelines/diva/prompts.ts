/**
 * Diva prompts (Diversify–Verify–Adapt), written for ambiqa: name the ambiguity and write
 * pseudo-interpretations; judge per interpretation whether the passages answer it; then answer
 * with the passages (RAG) or, when retrieval was useless, from the model's own knowledge.
 */
import type { Passage } from '../../retrieval/types';
import { demoAnswerFor, inPromptOrder } from '../baselines/prompts';
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
export const DIVERSIFY_EXAMPLE =
  'Question: Who won the Nobel Prize in Literature?\n' +
  'Ambiguity type: time\n' +
  'Reason: The prize is awarded every year, and the question names no year.\n' +
  'Interpretations:\n' +
  '1. Who won the Nobel Prize in Literature in 2016?\n' +
  '2. Who won the Nobel Prize in Literature in 2017?\n' +
  '3. Who won the first Nobel Prize in Literature, in 1901?';

export function diversifyPrompt(question: string, withExample: boolean, demos: Demo[]): string {
  const parts = [DIVERSIFY_INSTRUCTION];
  if (withExample) parts.push(DIVERSIFY_EXAMPLE);
  // kNN demos with DQs show interpretations of similar questions (type unknown, so left out).
  for (const d of inPromptOrder(demos)) {
    const pairs = d.qaPairs ?? [];
    if (pairs.length === 0) continue;
    parts.push(`Question: ${d.question}\nInterpretations:\n${pairs.map((p, i) => `${i + 1}. ${p.question}`).join('\n')}`);
  }
  parts.push(`Question: ${question}`);
  return parts.join('\n\n');
}

export function verifyPrompt(interpretation: string, passages: Passage[]): string {
  return (
    `Passages:\n${formatContext(passages)}\n\n` +
    `Question: ${interpretation}\n\n` +
    'Do the passages contain the answer to this question? Reply with Yes or No only.'
  );
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

function demoBlock(task: TaskKind, d: Demo): string {
  return `Question: ${d.question}\nAnswer: ${demoAnswerFor(task, d)}`;
}

export function ragPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[], passages: Passage[]): string {
  const parts = [GENERATE.rag[task], ...inPromptOrder(demos).map((d) => demoBlock(task, d))];
  parts.push(`Context:\n${formatContext(passages)}`);
  const hint = interpretations.length > 1 ? `Possible interpretations:\n${interpretations.map((q) => `- ${q}`).join('\n')}\n` : '';
  parts.push(`${hint}Question: ${question}\nAnswer:`);
  return parts.join('\n\n');
}

export function closedBookPrompt(task: TaskKind, demos: Demo[], question: string, interpretations: string[]): string {
  const parts = [GENERATE['closed-book'][task], ...inPromptOrder(demos).map((d) => demoBlock(task, d))];
  const hint = interpretations.length > 1 ? `Possible interpretations:\n${interpretations.map((q) => `- ${q}`).join('\n')}\n` : '';
  parts.push(`${hint}Question: ${question}\nAnswer:`);
  return parts.join('\n\n');
}
