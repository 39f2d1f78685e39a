import { definePipeline } from '../entry';
import { DivaPipeline } from './index';
import { divaOptionsSchema } from './options';
import { divaAnalysis } from './analysis';
import { divaDecisionsSchema } from './decisions';

export const divaEntry = definePipeline({
  name: 'diva',
  description: 'Diva: diversify interpretations, verify each against retrieved passages, answer the kept ones',
  optionsSchema: divaOptionsSchema,
  needs: { retriever: true, embedder: true },
  create: (options) => new DivaPipeline(options),
  method: { kind: 'diva', decisionsSchema: divaDecisionsSchema, analysis: divaAnalysis },
});
