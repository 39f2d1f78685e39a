/**
 * Tree of Clarifications prompts, written for ambiqa, as few-shot chat turns.
 *
 * RAC (retrieval-augmented clarification): the instruction, then kNN demos — each an ambiguous
 * question answered with its disambiguated questions (`DQ i:`), their short answers (`DA i:`) and
 * the gold long answer — then the retrieved passages and the question to clarify. The answer
 * prompt is the same, its reply opened with the tree's valid DQ/DA pairs and "Answer:".
 * Self-verification is a zero-shot True/False question about one evidence passage.
 */
import type { ChatMessage } from '../../llm/types';
import { formatPassage, type Passage } from '../../retrieval/types';
import { clarifyingShot, inPromptOrder, pairLines } from '../baselines/prompts';
import { fewShot } from '../common/chat';
import { formatContext } from '../common/retrieval';
import type { Demo } from '../types';

export const RAC_INSTRUCTION =
  'The question may be ambiguous: it can be read in several ways, each with its own answer. Using ' +
  'the context passages, write the disambiguated questions it could mean, one per line as "DQ 1:", ' +
  '"DQ 2:", …, each followed by its short answer on a line "DA 1:", "DA 2:", …. Then write ' +
  '"Answer:" and a long answer of at least three sentences that covers every reading.';

type Pair = { question: string; answer: string };

/**
 * The reminder closing the RAC turn. CHOICE: the demo turns hold only a question, the real turn
 * passages and a question, and a small model then tends to skip the DQ/DA lines and answer
 * directly ("Answer: Simon."); naming the expected first line right before it replies keeps it
 * in the demos' format.
 */
export const RAC_FORMAT_REMINDER = 'Reply as in the examples: start with "DQ 1:", then "DA 1:", and so on.';

/** Clarify `question` (a tree node) with the given passages. */
export function racPrompt(demos: Demo[], question: string, passages: Passage[]): ChatMessage[] {
  return fewShot(
    RAC_INSTRUCTION,
    inPromptOrder(demos).map(clarifyingShot),
    `Context:\n${formatContext(passages)}\n\nQuestion: ${question}\n\n${RAC_FORMAT_REMINDER}`,
  );
}

/**
 * The final long answer (METHODS.md: "same template as RAC"): the RAC prompt for the ambiguous
 * question with the answer passages, and the model's reply opened with the tree's valid DQ/DA
 * pairs in BFS order and "Answer:", so the model writes only the long answer — as the released
 * code completes its RAC prompt. Sharing the instruction and demos with the RAC calls also lets
 * the embedded model reuse their evaluated prefix. A chat server that does not continue a final
 * assistant message answers in a new turn; `parseLongAnswer` reads either.
 */
export function answerPrompt(demos: Demo[], question: string, pairs: Pair[], passages: Passage[]): ChatMessage[] {
  return [
    ...racPrompt(demos, question, passages),
    { role: 'assistant', content: `${pairs.length > 0 ? `${pairLines(pairs)}\n` : ''}Answer:` },
  ];
}

/**
 * Self-verification (zero-shot): could `answer` be a correct answer to the *original* question,
 * given the evidence passage? The reply is True or False.
 */
export function verifyPrompt(rootQuestion: string, answer: string, evidence: Passage | null): ChatMessage[] {
  const passage = evidence ? formatPassage(evidence) : '(no passage was found)';
  return [
    {
      role: 'user',
      content:
        `Passage: ${passage}\n\n` +
        `Question: ${rootQuestion}\n` +
        `Proposed answer: ${answer}\n\n` +
        'Based on the passage, could the proposed answer be a correct answer to the question under ' +
        'one of its possible readings? Reply with True or False only.',
    },
  ];
}
