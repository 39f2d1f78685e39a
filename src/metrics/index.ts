/**
 * The papers' metrics, one file per family (each checkable against METHODS.md line by line):
 * squad.ts (normalisation, EM, F1) · str-em.ts (STR-EM, STR-HIT) · rouge.ts (ROUGE-L, ROUGE-Lsum)
 * with porter.ts and sentences.ts (Punkt) · disambig-f1.ts (+ qa-onnx-reader.ts) · dr.ts ·
 * answer-f1.ts · coverage.ts (AC@k) · fever.ts · calibration.ts (accuracy–coverage AUC) ·
 * bootstrap.ts (CIs). Each family file exports its registry entry; registry.ts lists them and
 * example.ts (scoreExample, aggregate) scores with them. docs/metrics.md has the table.
 */
export type { MetricFamily, MetricRow, Score, Scorer, ScoringInput, SyncScorer } from './score';
export {
  checkMetrics,
  defaultMetrics,
  familyOf,
  isMetricName,
  metricFamilies,
  metricNames,
  metricsFor,
  planMetrics,
  readerMetricNames,
  splitterMetricNames,
  withRequirements,
  type MetricName,
} from './registry';
export { decideMetrics, type MetricCatalog, type MetricPlan } from './plan';
export { ExactMatch, F1, squadFamily, answerTokens, exactMatch, maxOverGolds, normalizeAnswer, tokenF1 } from './squad';
export { StrEm, StrHit, strEmFamily, dqHits, exactPresence, strEm, strHit } from './str-em';
export { porterStem } from '../text/porter';
export {
  PunktSentenceSplitter,
  RuleBasedSentenceSplitter,
  defaultPunktDir,
  defaultSentenceSplitter,
  loadPunktParameters,
  type PunktParameters,
  type SentenceSplitter,
} from './sentences';
export {
  RougeL,
  RougeLsum,
  rougeFamily,
  lcsIndices,
  lcsLength,
  lsumSentences,
  maxFOverReferences,
  rougeL,
  rougeLsum,
  rougeTokenize,
  scoreLcs,
  summaryLevelLcs,
  unionLcs,
  type RougeScore,
} from './rouge';
export { DisambigF1, LlmSpanReader, READER_PROMPT_VERSION, disambigF1Family, disambigF1, parseReaderReply, readerMessages, type DisambigReader, type DisambigF1Result } from './disambig-f1';
export { drFamily, drScore } from './dr';
export { answerF1, meanAnswerF1 } from './answer-f1';
export { answerCoverage, coverageCurve, hasAnswer } from './coverage';
export { FeverAccuracy, feverFamily, normalizeFeverLabel } from './fever';
export { accuracyCoverageAuc, calibrationFamily, accuracyCoverageCurve, type AccuracyCoverageOptions, type CoveragePoint, type TieRule } from './calibration';
export { bootstrapInterval, bootstrapMean, percentile, type BootstrapOptions } from './bootstrap';
export { aggregate, scoreExample, type ExampleScores, type Prediction, type ScoreOptions } from './example';
export { decisionStatistics, type DecisionStatistics, type RunJudgeMode } from './decisions';
export { goldAnswerMatcher, goldShortAnswers, judgePurposes, labelJudgments, silverLabel, type JudgePurpose, type PassageText } from './judge-labels';
export type { MethodAnalyses, MethodAnalysis, MethodJudge } from './methods';
export {
  auc,
  clusteredAucInterval,
  DEFAULT_MIN_PER_CLASS,
  judgeQuality,
  judgeVerdict,
  labelHistogram,
  reliabilityBins,
  runJudgeDiagnostics,
  type JudgeQualityOptions,
} from './judge-quality';

/** The ONNX QA reader loads transformers.js; import it lazily: `await import('./qa-onnx-reader')`. */
export type { OnnxQaReader, OnnxQaReaderOptions } from './qa-onnx-reader';
