/**
 * COMBO prompts, written for ambiqa: generate background passages, judge evidentiality and
 * consistency zero-shot, and read matched (generated, retrieved) pairs.
 */
import { formatPassage, type Passage } from '../../retrieval/types';
import { demoAnswerFor, inPromptOrder, INSTRUCTIONS } from '../baselines/prompts';
import type { TaskKind } from '../common/task';
import type { Demo } from '../types';

export function generatePassagePrompt(question: string): string {
  return (
    'Write a short background passage of about 80 words, in the style of an encyclopedia article, ' +
    'that contains the facts needed to answer the question. Reply with the passage only.\n\n' +
    `Question: ${question}\nPassage:`
  );
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
): string {
  const label = task === 'fact' ? 'Claim' : 'Question';
  const parts = [
    `${INSTRUCTIONS[task]} Use the passages below; each generated passage is paired with a retrieved one, ` +
      'and where they disagree, trust the retrieved passage.',
  ];
  for (const d of inPromptOrder(demos)) parts.push(`${label}: ${d.question}\nAnswer: ${demoAnswerFor(task, d)}`);
  const lines: string[] = [];
  pairs.forEach((p, i) => {
    const g = p.generated !== undefined ? `Generated passage ${i + 1}: ${p.generated}` : null;
    const r = p.retrieved ? `Retrieved passage ${i + 1}: ${formatPassage(p.retrieved)}` : null;
    const ordered = order === 'generated-first' ? [g, r] : [r, g];
    lines.push(ordered.filter((x): x is string => x !== null).join('\n'));
  });
  if (lines.length > 0) parts.push(lines.join('\n\n'));
  parts.push(`${label}: ${question}\nAnswer:`);
  return parts.join('\n\n');
}
