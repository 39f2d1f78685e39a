/**
 * Prompt templates of the baselines (closed-book, vanilla RAG, CoT, CoT self-consistency), written
 * for ambiqa, as few-shot chat turns (common/chat.ts). Demos come least similar first, so the
 * nearest neighbour is the turn right before the question (ToC's released code orders its kNN
 * demos the same way).
 */
import type { ChatMessage } from '../../llm/types';
import type { Passage } from '../../retrieval/types';
import { fewShot, type Shot } from '../common/chat';
import { formatContext } from '../common/retrieval';
import type { TaskKind } from '../common/task';
import type { Demo } from '../types';

export const INSTRUCTIONS: Record<TaskKind, string> = {
  long:
    'Answer the question with a long answer of at least three sentences. If the question can be ' +
    'read in more than one way, explain each reading and give its answer.',
  short: 'Answer the question with a short answer: a name, a date, a number or a short phrase. Reply with the answer only.',
  fact:
    'Decide whether the claim is supported by facts, refuted by facts, or whether there is not enough ' +
    'information to tell. Reply with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.',
};

const RAG_INSTRUCTION_SUFFIX = ' Use the context passages where they help.';

export const COT_INSTRUCTIONS: Record<TaskKind, string> = {
  long:
    'Answer the question. First think step by step about the ways the question can be read and the ' +
    'answer to each reading, then write "So the answer is:" followed by a long answer of at least ' +
    'three sentences that covers every reading.',
  short:
    'Answer the question. First reason step by step in a few short sentences, then finish with ' +
    '"So the answer is: <short answer>."',
  fact:
    'Decide whether the claim is supported, refuted, or lacks enough information. First reason step ' +
    'by step in a few short sentences, then finish with "So the answer is: <SUPPORTS, REFUTES or NOT ENOUGH INFO>."',
};

export function questionLabel(task: TaskKind): string {
  return task === 'fact' ? 'Claim' : 'Question';
}

/** The answer a demo shows for a task, falling back to what the demo has. */
export function demoAnswerFor(task: TaskKind, demo: Demo): string {
  const pairs = demo.qaPairs ?? [];
  if (task === 'long') {
    return demo.longAnswer ?? (pairs.length ? pairs.map((p) => `${p.question} ${p.answer}.`).join(' ') : (demo.answer ?? ''));
  }
  return demo.answer ?? pairs[0]?.answer ?? demo.longAnswer ?? '';
}

/** Demos in prompt order: least similar first, nearest last. */
export function inPromptOrder<T>(demos: T[]): T[] {
  return [...demos].reverse();
}

/** Question → answer turns. */
export function answerShots(task: TaskKind, demos: Demo[]): Shot[] {
  return inPromptOrder(demos).map((d) => ({ user: `${questionLabel(task)}: ${d.question}`, assistant: demoAnswerFor(task, d) }));
}

type Pair = { question: string; answer: string };

/** DQ/DA lines (ToC's RAC format): `DQ i:` question, `DA i:` its short answer. */
export function pairLines(pairs: Pair[]): string {
  return pairs.map((p, i) => `DQ ${i + 1}: ${p.question}\nDA ${i + 1}: ${p.answer}`).join('\n');
}

/**
 * A clarifying demo turn (ToC's RAC demos, also Diva's long-form generation): the ambiguous
 * question, answered with its DQ/DA pairs and then `Answer:` and the gold long answer.
 */
export function clarifyingShot(demo: Demo): Shot {
  const pairs = demo.qaPairs ?? [];
  const lines = pairs.length > 0 ? `${pairLines(pairs)}\n` : '';
  return { user: `Question: ${demo.question}`, assistant: `${lines}Answer: ${demoAnswerFor('long', demo)}` };
}

/** Closed-book few-shot: instruction, demos, question. */
export function closedBookPrompt(task: TaskKind, demos: Demo[], question: string): ChatMessage[] {
  return fewShot(INSTRUCTIONS[task], answerShots(task, demos), `${questionLabel(task)}: ${question}`);
}

/** Vanilla RAG: the same with the retrieved passages above the question. */
export function ragPrompt(task: TaskKind, demos: Demo[], question: string, passages: Passage[]): ChatMessage[] {
  return fewShot(
    INSTRUCTIONS[task] + RAG_INSTRUCTION_SUFFIX,
    answerShots(task, demos),
    `Context:\n${formatContext(passages)}\n\n${questionLabel(task)}: ${question}`,
  );
}

/** A demo's rationale: its own, or for ASQA demos the readings spelled out from its DQ/DA pairs. */
export function demoRationale(demo: Demo): string {
  if (demo.rationale) return demo.rationale.trim();
  const pairs = demo.qaPairs ?? [];
  if (pairs.length === 0) return '';
  return `The question can be read in ${pairs.length} ways. ${pairs.map((p) => `${p.question} ${p.answer}.`).join(' ')}`;
}

function cotShot(task: TaskKind, demo: Demo): Shot {
  const answer = demoAnswerFor(task, demo).trim().replace(/\.$/, '');
  const rationale = demoRationale(demo);
  return {
    user: `${questionLabel(task)}: ${demo.question}`,
    assistant: `${rationale ? `${rationale} ` : ''}So the answer is: ${answer}.`,
  };
}

/** Few-shot chain of thought (also the first step of Verify-and-Edit). */
export function cotPrompt(task: TaskKind, demos: Demo[], question: string): ChatMessage[] {
  return fewShot(COT_INSTRUCTIONS[task], inPromptOrder(demos).map((d) => cotShot(task, d)), `${questionLabel(task)}: ${question}`);
}

/**
 * The CoT prompt with a given (edited) rationale, asking only for the conclusion. Chat models do
 * not continue a half-written turn, so the rationale is shown and the answer asked for. `label`
 * introduces the rationale (Verify-and-Edit scores an unedited one as plain `Reasoning`).
 */
export function cotWithRationalePrompt(
  task: TaskKind,
  demos: Demo[],
  question: string,
  rationale: string,
  label = 'Reasoning, checked against retrieved facts',
): ChatMessage[] {
  return fewShot(
    COT_INSTRUCTIONS[task],
    inPromptOrder(demos).map((d) => cotShot(task, d)),
    `${questionLabel(task)}: ${question}\n\n${label}: ${rationale.trim()}\n\n` +
      'Conclude from this reasoning. Reply only with "So the answer is: <answer>."',
  );
}
