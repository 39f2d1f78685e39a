/**
 * Verify-and-Edit prompts, written for ambiqa. The chain-of-thought prompt itself is the CoT
 * baseline's (baselines/prompts.ts). Editing needs two more: a verifying question for one
 * rationale sentence (asked about what the *original question* needs, not about the sentence's
 * possibly wrong entity), and an answer to that question from retrieved sentences. As in the
 * released code, the verifying question is asked with 2 demos (`HotpotAdv/utils.py`,
 * `QUESTION_PROMPT`) and the verifying answer with 3 (`prompt_for_manual_prediction(answer=True)`
 * takes `shots[:3]`); the demos here are ambiqa's own.
 */
import type { ChatMessage } from '../../llm/types';
import { fewShot } from '../common/chat';

interface VerifyingQuestionShot {
  question: string;
  sentence: string;
  verifyingQuestion: string;
}

interface VerifyingAnswerShot {
  facts: string[];
  question: string;
  answer: string;
}

export const VERIFYING_QUESTION_SHOTS: VerifyingQuestionShot[] = [
  {
    question: 'Which city hosted the Summer Olympics in the year the Berlin Wall came down?',
    sentence: 'The Berlin Wall came down in 1991.',
    verifyingQuestion: 'In what year did the Berlin Wall come down?',
  },
  {
    question: 'What is the home stadium of the club that signed the top scorer of the 2014 World Cup?',
    sentence: 'The top scorer of the 2014 World Cup was Thomas Müller.',
    verifyingQuestion: 'Who was the top scorer of the 2014 World Cup?',
  },
];

export const VERIFYING_ANSWER_SHOTS: VerifyingAnswerShot[] = [
  {
    facts: [
      'The Berlin Wall was opened on 9 November 1989, and its demolition began the following summer.',
      'Berlin was reunified in 1990.',
    ],
    question: 'In what year did the Berlin Wall come down?',
    answer: 'The Berlin Wall came down in 1989.',
  },
  {
    facts: [
      'James Rodríguez won the Golden Boot at the 2014 FIFA World Cup with six goals.',
      'Thomas Müller scored five goals at the 2014 tournament.',
    ],
    question: 'Who was the top scorer of the 2014 World Cup?',
    answer: 'The top scorer of the 2014 World Cup was James Rodríguez.',
  },
  {
    facts: [
      'Mount Kilimanjaro: It stands in northeastern Tanzania, near the border with Kenya.',
      'Kenya: Its highest mountain is Mount Kenya, at 5,199 metres.',
      'Mount Kilimanjaro: Its summit, Uhuru Peak, is 5,895 metres above sea level.',
    ],
    question: 'In which country is Mount Kilimanjaro?',
    answer: 'Mount Kilimanjaro is in Tanzania.',
  },
];

export const VERIFYING_QUESTION_INSTRUCTION =
  'A step of reasoning towards answering a question is given. Write one question that checks the fact ' +
  'this step states, asking for the information the original question needs. Reply with the question only.';

export const VERIFYING_ANSWER_INSTRUCTION =
  'Answer the question in one full sentence, using only the facts given.';

export function verifyingQuestionPrompt(question: string, sentence: string, shots: number): ChatMessage[] {
  const user = (q: string, s: string) => `Original question: ${q}\nStep: ${s}`;
  return fewShot(
    VERIFYING_QUESTION_INSTRUCTION,
    VERIFYING_QUESTION_SHOTS.slice(0, shots).map((s) => ({ user: user(s.question, s.sentence), assistant: s.verifyingQuestion })),
    user(question, sentence),
  );
}

export function verifyingAnswerPrompt(question: string, facts: string[], shots: number): ChatMessage[] {
  const block = (fs: string[]) => (fs.length ? fs.map((f) => `- ${f}`).join('\n') : '- (no facts found)');
  const user = (fs: string[], q: string) => `Facts:\n${block(fs)}\n\nQuestion: ${q}`;
  return fewShot(
    VERIFYING_ANSWER_INSTRUCTION,
    VERIFYING_ANSWER_SHOTS.slice(0, shots).map((s) => ({ user: user(s.facts, s.question), assistant: s.answer })),
    user(facts, question),
  );
}
