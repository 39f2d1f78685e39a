import { hasAnswer } from '../../retrieval/has-answer';
import type { Passage } from '../../retrieval/types';

/**
 * Does the passage contain the node's answer? DA lines often hold several answers separated by
 * `;` (ToC's released code splits them the same way); any of them counts.
 */
export function passageHasAnswer(passage: Passage, answer: string): boolean {
  const answers = answer
    .split(/\s*;\s*/)
    .map((a) => a.trim())
    .filter(Boolean);
  return answers.length > 0 && hasAnswer(passage, answers);
}
