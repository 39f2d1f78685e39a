/** The pipelines' public surface: the registry, the contract, demos and the pipeline classes. */
export {
  createPipeline,
  defaultPipelineOptions,
  isPipelineName,
  parsePipelineOptions,
  pipelineNames,
  pipelineOptionsSchema,
  pipelineOptionsSchemas,
  builtinPipelines,
  describePipelines,
  methodCatalog,
  pipelineEntries,
  pipelineEntry,
  pipelineNeeds,
  registerPipeline,
  type BuiltinPipelineName,
  type PipelineOptions,
  type PipelineOptionsInput,
  type RegisteredPipelineOptions,
} from './registry';
export { definePipeline, type PipelineEntry, type PipelineNeeds } from './entry';
export type { Demo, DemoSelectOptions, DemoSelector, Pipeline, PipelineContext, PipelineOutput } from './types';
export { buildDemoPool, demoFromExample, FixedDemoSelector, KnnDemoSelector } from './demos';
export { ClosedBookPipeline } from './baselines/closed-book';
export { VanillaRagPipeline } from './baselines/vanilla-rag';
export { CotPipeline } from './baselines/cot';
export { CotScPipeline } from './baselines/cot-sc';
export { TocPipeline } from './toc';
export { VerifyEditPipeline } from './verify-edit';
export { DivaPipeline } from './diva';
export { ComboPipeline, type ComboScorers } from './combo';
export type { ConsistencyScorer, EvidentialityScorer, ScorerEnv } from './combo/scorers';
export { maxWeightAssignment, minCostAssignment } from './combo/hungarian';
