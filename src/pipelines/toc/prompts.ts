/**
 * Tree of Clarifications prompts, written for ambiqa.
 *
 * RAC (retrieval-augmented clarification): an instruction, kNN demos that show an ambiguous
 * question, its disambiguated questions (`DQ i:`) with short answers (`DA i:`) and the gold long
 * answer, then the retrieved passages and the question to clarify. The same template with the
 * tree's valid DQ/DA pairs filled in writes the final long answer. Self-verification is a
 * zero-shot True/False question about one evidence passage.
 */
import type { Passage } from '../../retrieval/types';
import { demoAnswerFor, inPromptOrder } from '../baselines/prompts';
import { formatContext } from '../common/retrieval';
import type { Demo } from '../types';
import { formatPassage } from '../../retrieval/types';

export const RAC_INSTRUCTION =
  'The question below may be ambiguous: it can be read in several ways, each with its own answer. ' +
  'Using the context passages, write the disambiguated questions it could mean, one per line as ' +
  '"DQ 1:", "DQ 2:", …, each followed by its short answer on a line "DA 1:", "DA 2:", …. ' +
  'Then write "Answer:" and a long answer of at least three sentences that covers every reading.';

export const ANSWER_INSTRUCTION =
  'The question below is ambiguous. Its disambiguated questions and their short answers are given. ' +
  'Using them and the context passages, write "Answer:" and a long answer of at least three sentences ' +
  'that explains each reading and gives its answer.';

function pairLines(pairs: Array<{ question: string; answer: string }>): string {
  return pairs.map((p, i) => `DQ ${i + 1}: ${p.question}\nDA ${i + 1}: ${p.answer}`).join('\n');
}

function demoBlock(demo: Demo): string {
  const pairs = demo.qaPairs ?? [];
  const lines = [`Question: ${demo.question}`];
  if (pairs.length > 0) lines.push(pairLines(pairs));
  lines.push(`Answer: ${demoAnswerFor('long', demo)}`);
  return lines.join('\n');
}

/** Clarify `question` (a tree node) with the given passages. */
export function racPrompt(demos: Demo[], question: string, passages: Passage[]): string {
  return [
    RAC_INSTRUCTION,
    ...inPromptOrder(demos).map(demoBlock),
    `Context:\n${formatContext(passages)}`,
    `Question: ${question}`,
  ].join('\n\n');
}

/** The final long answer, with the tree's valid DQ/DA pairs in BFS order filled in. */
export function answerPrompt(
  demos: Demo[],
  question: string,
  pairs: Array<{ question: string; answer: string }>,
  passages: Passage[],
): string {
  const tail = pairs.length > 0 ? `Question: ${question}\n${pairLines(pairs)}\nAnswer:` : `Question: ${question}\nAnswer:`;
  return [ANSWER_INSTRUCTION, ...inPromptOrder(demos).map(demoBlock), `Context:\n${formatContext(passages)}`, tail].join('\n\n');
}

/**
 * Self-verification (zero-shot): could `answer` be a correct answer to the *original* question,
 * given the evidence passage? The reply is True or False.
 */
export function verifyPrompt(rootQuestion: string, answer: string, evidence: Passage | null): string {
  const passage = evidence ? formatPassage(evidence) : '(no passage was found)';
  return (
    `Passage: ${passage}\n\n` +
    `Question: ${rootQuestion}\n` +
    `Proposed answer: ${answer}\n\n` +
    'Based on the passage, could the proposed answer be a correct answer to the question under ' +
    'one of its possible readings? Reply with True or False only.'
  );
}
