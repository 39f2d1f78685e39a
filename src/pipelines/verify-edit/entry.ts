import { definePipeline } from '../entry';
import { VerifyEditPipeline } from './index';
import { verifyEditOptionsSchema } from './options';
import { veAnalysis } from './analysis';
import { veDecisionsSchema } from './decisions';
import { veFigures } from './figures';

export const verifyEditEntry = definePipeline({
  name: 'verify-edit',
  description: 'Verify-and-Edit: CoT-SC, and low-consistency answers edited against retrieved evidence',
  optionsSchema: verifyEditOptionsSchema,
  needs: { retriever: true, embedder: true },
  create: (options) => new VerifyEditPipeline(options),
  method: { kind: 'verify-edit', decisionsSchema: veDecisionsSchema, analysis: veAnalysis, figures: veFigures },
});
