import { definePipeline } from '../entry';
import { ComboPipeline } from './index';
import { comboOptionsSchema } from './options';
import { comboAnalysis } from './analysis';
import { comboDecisionsSchema } from './decisions';

export const comboEntry = definePipeline({
  name: 'combo',
  description: 'COMBO: match generated knowledge to retrieved passages, score compatibility, answer from the best pairs',
  optionsSchema: comboOptionsSchema,
  needs: { retriever: true, embedder: true },
  create: (options) => new ComboPipeline(options),
  method: { kind: 'combo', decisionsSchema: comboDecisionsSchema, analysis: comboAnalysis },
});
