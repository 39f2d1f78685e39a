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
 * The reminder closing the RAC turn with `racPrompt: format-reminder` (ambiqa before issue 41):
 * the demo turns hold only a question, the real turn passages and a question, and the line was
 * meant to keep a small model in the demos' format. The 0.5B model copies it into its answers
 * (`DA 1: start with "DQ 1:", then "DA 1:", and so on`), and the released prompt (dsp's
 * completion template, toc/templates/load.py `get_rac_template`) has no such line, so it is off
 * by default.
 */
export const RAC_FORMAT_REMINDER = 'Reply as in the examples: start with "DQ 1:", then "DA 1:", and so on.';

/** Which RAC prompt: the released template's content (default), or with the format reminder. */
export type RacPromptStyle = 'released' | 'format-reminder';

/**
 * With `racPrompt: released`, the reply is opened with this, as the released completion prompt
 * ends with the "Disambiguations:" field its demos answer with `DQ 1: …` lines (dsp completes the
 * template after the field's prefix). CHOICE: in chat turns the demos' replies open with "DQ 1:",
 * so the same words open the model's reply; without them the 0.5B model answered the first
 * held-out question directly ("Answer: The original artist …", no DQ line).
 */
export const RAC_REPLY_PREFIX = 'DQ 1:';

/** The RAC turns without the reply's opening: instruction, demos, context and question (and the reminder when asked for). */
function racTurns(demos: Demo[], question: string, passages: Passage[], style: RacPromptStyle): ChatMessage[] {
  const reminder = style === 'format-reminder' ? `\n\n${RAC_FORMAT_REMINDER}` : '';
  return fewShot(RAC_INSTRUCTION, inPromptOrder(demos).map(clarifyingShot), `Context:\n${formatContext(passages)}\n\nQuestion: ${question}${reminder}`);
}

/**
 * Clarify `question` (a tree node) with the given passages: the instruction (the released
 * template's instructions and format description, in ambiqa's words), the kNN demos, then the
 * context and the question — as the released completion prompt orders them; `released` opens the
 * model's reply with `RAC_REPLY_PREFIX` (a server that does not continue a final assistant
 * message answers in a new turn; `racReplyText` reads either).
 */
export function racPrompt(demos: Demo[], question: string, passages: Passage[], style: RacPromptStyle = 'released'): ChatMessage[] {
  const turns = racTurns(demos, question, passages, style);
  return style === 'released' ? [...turns, { role: 'assistant', content: RAC_REPLY_PREFIX }] : turns;
}

/** The RAC reply as the reader should see it: with the prefix the prompt opened it with, unless the reply repeats it. */
export function racReplyText(reply: string, style: RacPromptStyle = 'released'): string {
  if (style !== 'released' || /^\s*[*_]*\s*DQ\s*\d*\s*:/i.test(reply)) return reply;
  return `${RAC_REPLY_PREFIX}${/^\s/.test(reply) ? '' : ' '}${reply}`;
}

/**
 * The final long answer (METHODS.md: "same template as RAC"): the RAC prompt for the ambiguous
 * question with the answer passages, and the model's reply opened with the tree's valid DQ/DA
 * pairs in BFS order and "Answer:", so the model writes only the long answer — as the released
 * code completes its RAC prompt. Sharing the instruction and demos with the RAC calls also lets
 * the embedded model reuse their evaluated prefix. A chat server that does not continue a final
 * assistant message answers in a new turn; `parseLongAnswer` reads either.
 */
export function answerPrompt(demos: Demo[], question: string, pairs: Pair[], passages: Passage[], style: RacPromptStyle = 'released'): ChatMessage[] {
  return [
    ...racTurns(demos, question, passages, style),
    { role: 'assistant', content: `${pairs.length > 0 ? `${pairLines(pairs)}\n` : ''}Answer:` },
  ];
}

/** Which worked examples the verification prompt shows: none (the paper's zero-shot prompt) or one of each label. */
export type VerifyDemos = 'none' | 'balanced';

/**
 * How the verification question is put. `released`: could the proposed answer be correct, given
 * the passage — the meaning of the released prompt (toc/templates/load.py `get_ver_prompt`: an
 * instruction, the context, the *original* question, the proposed answer, "True" or "False"),
 * in ambiqa's words. `any-reading`: ambiqa's wording before issue 34, which adds "under one of its
 * possible readings"; the released prompt has no such clause.
 */
export type VerifyWording = 'released' | 'any-reading';

/** The verification question, instance slots filled. */
function verifyTurn(rootQuestion: string, answer: string, passage: string, wording: VerifyWording = 'released'): string {
  const reading = wording === 'any-reading' ? ' under one of its possible readings' : '';
  return (
    `Passage: ${passage}\n\n` +
    `Question: ${rootQuestion}\n` +
    `Proposed answer: ${answer}\n\n` +
    `Based on the passage, could the proposed answer be a correct answer to the question${reading}? ` +
    'Reply with True or False only.'
  );
}

/**
 * `verifyDemos: balanced`: one unsupported and one supported example of our own, on topics no
 * ASQA question is about. A small judge that says "False" to everything zero-shot sees that both
 * replies occur; the unsupported one (a passage on the right topic stating another figure) comes
 * first, so the turn right before the real question is not the negative label it already prefers.
 */
export function balancedVerifyShots(wording: VerifyWording = 'released'): ReadonlyArray<{ user: string; assistant: string }> {
  return [
    {
      user: verifyTurn(
        'How high is the waterfall on the river Vell?',
        '212 metres',
        'Vell Falls; The Vell drops 64 metres over a basalt ledge near the village of Ardo, the highest fall on the river.',
        wording,
      ),
      assistant: 'False',
    },
    {
      user: verifyTurn(
        'Who designed the clock tower in Marrow Square?',
        'Edda Lindqvist',
        'Marrow Square; The square is dominated by its clock tower, designed by the engineer Edda Lindqvist and finished in 1911.',
        wording,
      ),
      assistant: 'True',
    },
  ];
}

/**
 * Self-verification: could `answer` be a correct answer to the *original* question, given the
 * evidence passage? The reply is True or False. Zero-shot by default (the paper's prompt);
 * `demos: 'balanced'` puts the two worked examples before it as chat turns.
 */
export function verifyPrompt(
  rootQuestion: string,
  answer: string,
  evidence: Passage | null,
  demos: VerifyDemos = 'none',
  wording: VerifyWording = 'released',
): ChatMessage[] {
  const passage = evidence ? formatPassage(evidence) : '(no passage was found)';
  const shots: ChatMessage[] =
    demos === 'balanced'
      ? balancedVerifyShots(wording).flatMap((s) => [
          { role: 'user' as const, content: s.user },
          { role: 'assistant' as const, content: s.assistant },
        ])
      : [];
  return [...shots, { role: 'user', content: verifyTurn(rootQuestion, answer, passage, wording) }];
}
