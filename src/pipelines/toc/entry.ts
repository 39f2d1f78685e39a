import { definePipeline } from '../entry';
import { TocPipeline } from './index';
import { tocOptionsSchema } from './options';
import { tocAnalysis } from './analysis';
import { tocDecisionsSchema } from './decisions';
import { tocFigures } from './figures';

export const tocEntry = definePipeline({
  name: 'toc',
  description: 'Tree of Clarifications: a tree of disambiguations, pruned by self-verification, then one long answer',
  optionsSchema: tocOptionsSchema,
  needs: { retriever: true, embedder: true },
  create: (options) => new TocPipeline(options),
  method: { kind: 'toc', decisionsSchema: tocDecisionsSchema, analysis: tocAnalysis, figures: tocFigures },
});
