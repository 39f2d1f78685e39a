/**
 * ambiqa's public entry: `import { run, loadRun, show } from 'ambiqa'` in a notebook, a script or
 * another project that depends on this repository. Everything here is documented in
 * docs/notebooks.md (the library section); anything not exported here is internal and may change.
 *
 *   experiments  run, sweep, resume, score, reproduce; loadRun, loadSweep; the config types
 *   pipelines    createPipeline, the pipeline classes and their option types
 *   llm          createLanguageModel, LlmClient, ScriptedProvider (tests), the model contract
 *   retrieval    corpora, createRetriever / createReranker, BM25, dense, hybrid, MiniLM
 *   datasets     loadDataset and the example type
 *   metrics      the papers' metrics (SQuAD EM/F1, STR-EM, ROUGE, D-F1, DR, AUC, AC@k)
 *   figures      the plots built from run files, and their HTML/PNG export
 *   reports      buildReport, writeReport, buildBundle (a study as one static site)
 *   notebook     show, showTable, showTrace, showTree, toDataFrame, runRows, resultRows, judgeDiagnostics
 */
import type { ExperimentInput } from './experiments/config';
import type { ProgressSink } from './experiments/progress';
import {
  closeSession,
  resolveConfig,
  resumeInProcess,
  runInProcess,
  rescoreInProcess,
  scoreRun,
  sweepInProcess,
  type SessionRun,
  type SessionRunOptions,
  type SessionSweep,
  type SessionSweepOptions,
} from './experiments/session';
import { defaultProgress } from './notebook/progress';
import { reproduceInProcess, type ReproduceOptions } from './experiments/reproduce-session';
import type { Reproduction } from './experiments/reproduce';

// ---------------------------------------------------------------- experiments

export type { ExperimentConfig, ExperimentInput, PipelineSectionInput } from './experiments/config';
export type { SessionRun, SessionRunOptions, SessionSweep, SessionSweepOptions, ScoredRun, SessionRescoreOptions } from './experiments/session';
export type { RescoreOutcome, RescoredRun, ScoringEntry } from './experiments/rescore';
export type { ProgressSink, ProgressState } from './experiments/progress';

type WithProgress<T> = Omit<T, 'progress'> & { progress?: ProgressSink | ((label: string) => ProgressSink) | false };

function progressOption<T extends { progress?: unknown }>(options: T): SessionRunOptions['progress'] {
  if (options.progress === false) return undefined;
  return (options.progress as SessionRunOptions['progress']) ?? ((label: string) => defaultProgress(label) ?? { update() {}, finish() {} });
}

/**
 * Run an experiment in this process: validate the config (same rules and messages as a YAML
 * file), answer the questions, score them, write `artifacts/runs/<name>/` and log to MLflow.
 * In a notebook the progress updates in place; a kernel interrupt stops the run cleanly and
 * calling `run` again resumes it. Models stay loaded for the next call.
 */
export function run(config: ExperimentInput, options: WithProgress<SessionRunOptions> = {}): Promise<SessionRun> {
  return runInProcess(config, { ...options, progress: progressOption(options) });
}

/** Run a config's `sweep:` grid as one parent and one run per point, sharing loaded models. */
export function sweep(config: ExperimentInput, options: WithProgress<SessionSweepOptions> = {}): Promise<SessionSweep> {
  return sweepInProcess(config, { ...options, progress: progressOption(options) });
}

/** Finish (or extend) a run by name or directory, with the config it was started with. */
export function resume(nameOrDir: string, options: WithProgress<Omit<SessionRunOptions, 'existing' | 'name'>> = {}): Promise<SessionRun> {
  return resumeInProcess(nameOrDir, { ...options, progress: progressOption(options) });
}

/** Score a run's outputs again (other metrics, another reader) without re-answering. */
export const score = scoreRun;

/** Re-score a run or sweep in place (`ambiqa score --run`): scores into its rows, the old ones kept, MLflow updated. */
export const rescore = rescoreInProcess;

/**
 * Run a recorded run again and compare every output (docs/experiments.md, "Reproducing a run"):
 * a run folder, the runs of a bundle folder, or an MLflow run id. Refuses, naming it, what differs
 * on this machine (code, model or data checksums, engine build) unless `allowDifferent` says so.
 */
export function reproduce(target: string, options: WithProgress<ReproduceOptions> = {}): Promise<Reproduction[]> {
  return reproduceInProcess(target, { ...options, progress: progressOption(options) });
}
export { describeReproduction, reproduced, type Reproduction, type RowComparison, type MetricDifference } from './experiments/reproduce';
export type { ReproduceOptions } from './experiments/reproduce-session';
export type { RunProvenance } from './run-files';

/** Check a config object without running it; returns the resolved config (defaults filled in). */
export const checkConfig = resolveConfig;

/** Unload the models this process loaded (the embedded LLM, MiniLM) and stop a local MLflow server. */
export const unloadModels = closeSession;

export { loadRun, loadSweep, type LoadedRun, type LoadedSweep } from './report/load';
export type { ExampleResult, MetricAggregate, QuestionRecord, QuestionScore, QuestionScores, QuestionTarget, RunMetrics, Trace, TraceSummary } from './run-files';
/** A results row's scores as numbers (`Record<string, number>`), for code that needs only the values. */
export { scoreValues } from './run-files';
/** A row's key within its run (`id`, or `id#t` for trial t > 0 under `trials: k`) and its trace's, to join them. */
export { rowKey, traceKey } from './run-files';
export { artifactsDir, dataDir, examplesDir, packageRoot, projectRoot } from './config/paths';
export { AmbiqaError } from './errors';

// ---------------------------------------------------------------- pipelines

export {
  createPipeline,
  parsePipelineOptions,
  pipelineNames,
  pipelineOptionsSchemas,
  definePipeline,
  registerPipeline,
  pipelineEntries,
  methodCatalog,
  describePipelines,
  ClosedBookPipeline,
  VanillaRagPipeline,
  CotPipeline,
  CotScPipeline,
  TocPipeline,
  VerifyEditPipeline,
  DivaPipeline,
  ComboPipeline,
  type Pipeline,
  type PipelineContext,
  type PipelineOutput,
  type PipelineOptions,
  type PipelineOptionsInput,
  type PipelineEntry,
  type PipelineNeeds,
  type BuiltinPipelineName,
  type RegisteredPipelineOptions,
} from './pipelines/index';
export type { PipelineName } from './trace/types';
/** For pipelines defined outside ambiqa: records every LLM call and builds the trace a pipeline returns. */
export { TraceRecorder } from './trace/recorder';

// ---------------------------------------------------------------- llm

export {
  LlmClient,
  createLanguageModel,
  ScriptedProvider,
  OpenAICompatibleProvider,
  LlamaCppProvider,
  wrapModel,
  type ModelMiddleware,
  type LanguageModel,
  type LlmConfig,
  type LlmConfigInput,
  type GenerateRequest,
  type GenerateResult,
  type JudgeRequest,
  type JudgeResult,
  type TokenUsage,
  type Usage,
  type UsageTotals,
} from './llm/index';

// ---------------------------------------------------------------- retrieval and data

export {
  loadCorpus,
  saveCorpus,
  buildCorpus,
  createRetriever,
  createReranker,
  Bm25Retriever,
  DenseRetriever,
  HybridRetriever,
  MultiQueryRetriever,
  MiniLmEmbedder,
  type Corpus,
  type CorpusSource,
  type Retriever,
  type RetrieverConfig,
  type RetrieverConfigInput,
  type RerankerConfigInput,
} from './retrieval/index';
export type { Passage, ScoredPassage, Embedder, Reranker } from './retrieval/types';
export { measureCoverage, readAsqaCoverageItems, type CoverageResult } from './retrieval/coverage';
export { loadDataset, datasetNames, type DatasetName, type Example } from './datasets/index';

// ---------------------------------------------------------------- metrics

export {
  exactMatch,
  tokenF1,
  maxOverGolds,
  strEm,
  strHit,
  disambigF1,
  drScore,
  answerF1,
  answerCoverage,
  coverageCurve,
  accuracyCoverageAuc,
  bootstrapInterval,
  scoreExample,
  aggregate,
  metricNames,
  defaultMetrics,
  decisionStatistics,
  type DecisionStatistics,
  labelJudgments,
  judgeQuality,
  runJudgeDiagnostics,
  judgePurposes,
  type JudgeQualityOptions,
  type MethodAnalyses,
  type MethodAnalysis,
  type MethodJudge,
} from './metrics/index';
export type { JudgeDiagnostics, LabelledJudgment, ReliabilityBin } from './run-files';
export { rougeL, rougeLsum } from './metrics/rouge';

// ---------------------------------------------------------------- paired comparisons

export { compare, comparisonRows, comparisonQuestionRows, type Comparable, type ComparisonResult, type CompareCallOptions } from './notebook/compare';
export { compareRuns, type CompareRunInput, type CompareOptions } from './metrics/compare';
export { pairedDelta, signFlipTest, holm, questionsForPower, type PairedDelta } from './metrics/paired';
export { pairedTrialDelta, trialMean, trialSplit, type PairedTrialDelta, type PairedTrialSplit, type TrialPower } from './metrics/trials';
export { readComparison } from './report/compare';
export type { Comparison, ComparedRun, PairedRow, ComparedQuestion } from './run-files/comparison';

// ---------------------------------------------------------------- figures and reports

// Each method's decisions, read from a trace: `tocDecisionsOf(trace)?.nodes` — undefined for
// another method's trace. Trace.decisions is generic (the trace layer knows no method), so these
// accessors are how a notebook narrows it to one method's typed record.
export { tocDecisionsOf, type TocDecisions } from './pipelines/toc/decisions';
export { veDecisionsOf, type VeDecisions } from './pipelines/verify-edit/decisions';
export { divaDecisionsOf, type DivaDecisions } from './pipelines/diva/decisions';
export { comboDecisionsOf, type ComboDecisions } from './pipelines/combo/decisions';
export { selfConsistencyDecisionsOf, type SelfConsistencyDecisions } from './pipelines/baselines/decisions';

export * from './plots/index';
// The methods' own figure builders (each method's folder holds what its traces draw).
export * from './pipelines/toc/tree-figure';
export * from './pipelines/toc/pruning-figure';
export * from './pipelines/verify-edit/threshold-figure';
export { exportFigures, writeFigureHtml, figurePageHtml } from './plots/export';
export { writeReport, type BuiltReport } from './report/build';
export { buildReport, buildBundle } from './notebook/report';
export { readBundleManifest, type BuiltBundle, type BundleManifest, type BundleOptions } from './report/bundle';

// ---------------------------------------------------------------- notebook display

export { show, showTable, showTrace, showTree } from './notebook/display';
export { toDataFrame } from './notebook/frame';
export { runRows, resultRows, llmCallRows, tocNodeRows } from './notebook/records';
export { NotebookProgress } from './notebook/progress';
export { judgeDiagnostics, judgeRows, type JudgeDiagnosticsView } from './notebook/judges';
