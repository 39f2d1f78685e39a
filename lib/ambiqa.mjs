// The package entry for `import … from 'ambiqa'` in ES modules. The library is loaded once,
// through the CommonJS entry (tsx compiles the TypeScript sources on load); its names are listed
// here because ES modules need them statically. test/library/entry.test.ts checks that this list
// is exactly what src/index.ts exports.
import { createRequire } from 'node:module';

const lib = createRequire(import.meta.url)('./ambiqa.cjs');

export const {
  AmbiqaError, Bm25Retriever, CORRECTNESS_METRICS, ClosedBookPipeline, ComboPipeline, CotPipeline,
  CotScPipeline, DenseRetriever, DivaPipeline, HybridRetriever, LlamaCppProvider, LlmClient,
  MiniLmEmbedder, MultiQueryRetriever, NotebookProgress, OpenAICompatibleProvider, PRUNING_STAGES,
  QUALITY_METRICS, ScriptedProvider, TocPipeline, TraceRecorder, VanillaRagPipeline,
  VerifyEditPipeline, accuracyCoverageAuc, aggregate, answerCoverage, answerF1, artifactsDir,
  baseLayout, bootstrapInterval, buildCorpus, buildReport, checkConfig, clarificationTreeFigure,
  colors, commonMetric, compare, compareRuns, comparisonFigure, comparisonQuestionRows,
  comparisonRows, consistencyKdeFigure, consistencyPoints, correctness, costPoints,
  costQualityFigure, coverageCurve, coverageFigure, createLanguageModel, createPipeline,
  createReranker, createRetriever, dataDir, datasetNames, decisionStatistics, defaultMetrics,
  definePipeline, describePipelines, disambigF1, drScore, exactMatch, examplesDir, exportFigures,
  figurePageHtml, findOption, gaussianKde, goldDqsFromExamples, inStage, kdeCurve, layoutTree,
  linspace, llmCallRows, loadCorpus, loadDataset, loadRun, loadSweep, majorityVotes, maxOverGolds,
  mean, measureCoverage, metricNames, metricOf, noDataAnnotation, nodeCapFigure, nodeCapPoints,
  nodeStatus, parseCoverage, pairedDelta, parsePipelineOptions, perQuestionUsage, pickMetric,
  pipelineEntries, pipelineNames, pipelineOf, pipelineOptionsSchemas, plotlyText, projectRoot,
  pruningEffect, pruningEffectFigure, holm, questionsForPower, readAsqaCoverageItems,
  readComparison, readCoverageFile, registerPipeline, resultRows, resume, rougeL, rougeLsum, run,
  runRows, sampleStd, saveCorpus, score, scoreExample, scottBandwidth, show, showTable, showTrace,
  showTree, signFlipTest, strEm, strHit, sweep, thresholdAblationFigure,
  thresholdAblationFromSweep, thresholdAblationFromTraces, toDataFrame, tocAblationFigure,
  tocAblationPoints, tocNodeRows, tocTrace, tokenF1, truncate, unloadModels, wrapForHover,
  writeFigureHtml, writeReport, judgeDiagnostics, judgePurposes, judgeQuality, judgeRows,
  labelJudgments, runJudgeDiagnostics, judgeFigureSlug, judgeHistogramFigure,
  judgeReliabilityFigure, judgesOf
} = lib;
export default lib;
