/** The four baselines' registry entries (one folder, four pipelines). */
import { definePipeline } from '../entry';
import { cotScAnalysis, cotScFigures } from './analysis';
import { baselineDecisionsSchema, selfConsistencyDecisionsSchema } from './decisions';

/** The single-call baselines record the passages they were shown (and CoT its rationale). */
const baselineMethod = { kind: 'baseline', decisionsSchema: baselineDecisionsSchema } as const;
import { ClosedBookPipeline } from './closed-book';
import { CotPipeline } from './cot';
import { CotScPipeline } from './cot-sc';
import { closedBookOptionsSchema, cotOptionsSchema, cotScOptionsSchema, vanillaRagOptionsSchema } from './options';
import { VanillaRagPipeline } from './vanilla-rag';

export const closedBookEntry = definePipeline({
  name: 'closed-book',
  description: 'few-shot answer from the model alone, no retrieval',
  optionsSchema: closedBookOptionsSchema,
  needs: { retriever: false, embedder: false },
  create: (options) => new ClosedBookPipeline(options),
  method: baselineMethod,
});

export const vanillaRagEntry = definePipeline({
  name: 'vanilla-rag',
  description: 'retrieve passages, answer from them in one call',
  optionsSchema: vanillaRagOptionsSchema,
  needs: { retriever: true, embedder: false },
  create: (options) => new VanillaRagPipeline(options),
  method: baselineMethod,
});

export const cotEntry = definePipeline({
  name: 'cot',
  description: 'chain-of-thought, one greedy sample',
  optionsSchema: cotOptionsSchema,
  needs: { retriever: false, embedder: false },
  create: (options) => new CotPipeline(options),
  method: baselineMethod,
});

export const cotScEntry = definePipeline({
  name: 'cot-sc',
  description: 'self-consistency: n chain-of-thought samples, majority vote (medoid for long answers)',
  optionsSchema: cotScOptionsSchema,
  needs: { retriever: false, embedder: false },
  create: (options) => new CotScPipeline(options),
  method: { kind: 'cot-sc', decisionsSchema: selfConsistencyDecisionsSchema, analysis: cotScAnalysis, figures: cotScFigures },
});
