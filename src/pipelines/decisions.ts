/**
 * The decisions every built-in pipeline writes, as one schema discriminated by `kind`: each
 * method's own schema (src/pipelines/<method>/decisions.ts, carried by its registry entry). A
 * trace read back from a run parses with it into a typed, narrowable value.
 */
import { z } from 'zod';
import { baselineDecisionsSchema, selfConsistencyDecisionsSchema } from './baselines/decisions';
import { comboDecisionsSchema } from './combo/decisions';
import { divaDecisionsSchema } from './diva/decisions';
import { tocDecisionsSchema } from './toc/decisions';
import { veDecisionsSchema } from './verify-edit/decisions';

export const builtinDecisionsSchema = z.discriminatedUnion('kind', [
  tocDecisionsSchema,
  veDecisionsSchema,
  divaDecisionsSchema,
  comboDecisionsSchema,
  selfConsistencyDecisionsSchema,
  baselineDecisionsSchema,
]);
export type BuiltinDecisions = z.infer<typeof builtinDecisionsSchema>;
