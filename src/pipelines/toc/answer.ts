/**
 * The answer step: one call with the RAC template for the ambiguous question, up to
 * `answerNodes` valid pairs in BFS order (released `_get_tree`: the first `max_nodes` valid
 * pairs), the answer passages, and demos by kNN on the ambiguous question from what is left of
 * the demo pool; temperature `answerTemperature` (0).
 */
import type { Passage } from '../../retrieval/types';
import type { TocNode } from './decisions';
import { checkAborted, selectDemos } from '../common/context';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { pairsAsSentences, readLongAnswer } from '../common/outputs';
import { answerPrompt } from './prompts';
import { demoFilter, type TocSession } from './session';
import { validNodes } from './tree';

export interface TreeAnswer {
  output: string;
  /** The valid nodes the prompt showed, BFS order. */
  answerNodes: TocNode[];
  passages: Passage[];
}

/** The answer step, as the trace span `answer`. */
export function answerTree(s: TocSession): Promise<TreeAnswer> {
  return s.rec.span('answer', {}, () => answerFromTree(s));
}

async function answerFromTree(s: TocSession): Promise<TreeAnswer> {
  checkAborted(s.ctx);
  const { o, rec, ctx, example } = s;
  const answerNodes = validNodes(s.nodes).slice(0, o.answerNodes);
  const pairs = answerNodes.map((n) => ({ question: n.question, answer: n.answer! }));
  const passages = await s.pool.forAnswer(example.question, pairs);
  const demos = await selectDemos(rec, ctx, 'toc', example, o.nShots, 'toc.answer.demos', demoFilter(s));
  const { texts } = await callLlm(rec, ctx, {
    purpose: 'toc.answer',
    messages: answerPrompt(demos, example.question, pairs, passages, o.racPrompt),
    temperature: o.answerTemperature,
    maxTokens: o.maxTokens,
    stop: DEMO_STOPS,
    topP: o.topP,
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
  });
  // A reply that is DQ/DA lines again becomes the tree's valid pairs as sentences (a parse failure).
  let output = readLongAnswer(rec, texts[0], 'toc.answer', { fallbackPairs: pairs });
  if (output === '') {
    rec.parseFailure('toc.answer', 'empty long answer', texts[0], 'the valid DQ/DA pairs as sentences');
    output = pairsAsSentences(pairs);
  }
  return { output, answerNodes, passages };
}
