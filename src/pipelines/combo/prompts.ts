/**
 * COMBO prompts, written for ambiqa: generate background passages, judge evidentiality and
 * consistency zero-shot, and read matched (generated, retrieved) pairs.
 */
import type { ChatMessage } from '../../llm/types';
import { formatPassage, type Passage } from '../../retrieval/types';
import { answerShots, INSTRUCTIONS, questionLabel } from '../baselines/prompts';
import { fewShot } from '../common/chat';
import type { TaskKind } from '../common/task';
import type { Demo } from '../types';

export function generatePassagePrompt(question: string): ChatMessage[] {
  return [
    {
      role: 'user',
      content:
        'Write a short background passage of about 80 words, in the style of an encyclopedia article, ' +
        'that contains the facts needed to answer the question. Reply with the passage only.\n\n' +
        `Question: ${question}`,
    },
  ];
}

export function evidentialityPrompt(question: string, passage: Passage): string {
  return (
    `Question: ${question}\n\nPassage: ${formatPassage(passage)}\n\n` +
    'Does the passage contain evidence that helps answer the question? Reply with Yes or No only.'
  );
}

export function consistencyPrompt(question: string, retrieved: Passage, generated: string): string {
  return (
    `Question: ${question}\n\nPassage A: ${formatPassage(retrieved)}\n\nPassage B: ${generated}\n\n` +
    'Do the two passages agree with each other about the facts that matter for this question, without ' +
    'contradicting each other? Reply with Yes or No only.'
  );
}

export interface ReaderPair {
  generated?: string;
  retrieved?: Passage;
}

export function readerPrompt(
  task: TaskKind,
  demos: Demo[],
  question: string,
  pairs: ReaderPair[],
  order: 'generated-first' | 'retrieved-first',
): ChatMessage[] {
  const blocks = pairs.map((p, i) => {
    const g = p.generated !== undefined ? `Generated passage ${i + 1}: ${p.generated}` : null;
    const r = p.retrieved ? `Retrieved passage ${i + 1}: ${formatPassage(p.retrieved)}` : null;
    const ordered = order === 'generated-first' ? [g, r] : [r, g];
    return ordered.filter((x): x is string => x !== null).join('\n');
  });
  const system =
    `${INSTRUCTIONS[task]} Use the passages given with the question; each generated passage is paired ` +
    'with a retrieved one, and where they disagree, trust the retrieved passage.';
  const passages = blocks.length > 0 ? `${blocks.join('\n\n')}\n\n` : '';
  return fewShot(system, answerShots(task, demos), `${passages}${questionLabel(task)}: ${question}`);
}
