import { z } from 'zod';
import type { Example } from '../../datasets/types';

/**
 * What kind of answer a question wants, which decides the prompt wording and the parser:
 * `long` — an ASQA-style paragraph covering every interpretation; `short` — a name, date or
 * phrase (HotpotQA, SituatedQA); `fact` — a FEVER label.
 */
export type TaskKind = 'long' | 'short' | 'fact';

export const answerStyleSchema = z
  .enum(['auto', 'long', 'short', 'fact'])
  .default('auto')
  .describe('answer format: auto picks long for ASQA/AmbigNQ, fact for FEVER, short otherwise');

export type AnswerStyle = z.infer<typeof answerStyleSchema>;

export function resolveTask(style: AnswerStyle, example: Example): TaskKind {
  if (style !== 'auto') return style;
  if (example.dataset === 'asqa' || example.dataset === 'ambignq') return 'long';
  if (example.dataset === 'fever') return 'fact';
  return 'short';
}
