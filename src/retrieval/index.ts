/** The retrieval layer: corpora, retrievers, rerankers, answer coverage. */
export * from './types';
export { loadCorpus, saveCorpus, corpusFromPassages, passageId, windowText, type Corpus } from './corpus';
export { buildCorpus, defaultSources, readSource, SOURCE_KINDS, type CorpusSource, type SourceKind, type BuiltCorpus } from './corpus-builder';
export { Bm25Index, Bm25Retriever, DEFAULT_BM25, type Bm25Params, type IndexCacheOptions, type IndexOrigin } from './bm25';
export { DenseRetriever, type DenseOptions } from './dense';
export { MiniLmEmbedder, CachedEmbedder, type MiniLmOptions } from './embedder';
export { ExactIndex, IvfIndex, recallAt, type VectorIndex, type IvfOptions } from './vector-index';
export { HybridRetriever, reciprocalRankFusion, type HybridOptions } from './hybrid';
export { MultiQueryRetriever, type MultiQueryOptions } from './multi-query';
export { EXCLUDE_MODES, ExcludeOwnRetriever, withExclusion, type ExcludeMode } from './exclude';
export { EmbeddingReranker, CrossEncoderReranker, type CrossEncoderOptions } from './rerank';
export { hasAnswer, answerTokens, firstAnswerRanks, coverageAt, type CoverageItem } from './has-answer';
export {
  retrieverConfigSchema,
  rerankerConfigSchema,
  parseRetrieverConfig,
  parseRerankerConfig,
  createRetriever,
  createReranker,
  needsCorpus,
  type ColbertV2Config,
  type RetrieverConfig,
  type RetrieverConfigInput,
  type RerankerConfig,
  type RerankerConfigInput,
  type FactoryOptions,
} from './factory';
export { makeTokenizer, type TokenizerOptions } from './tokenize';
export { ColbertV2Retriever, type ColbertV2Options } from './remote/colbertv2';
export { CachedRetriever, RetrievalCache, retrievalCacheStats, type RetrievalCacheMode, type RetrievalCacheStats } from './remote/cache';
export { preflightRetriever, retrieverParams } from './remote/inspect';
export { UsearchRetriever, buildUsearchIndex, importUsearchIndex, type UsearchMeta, type UsearchQuantization } from './usearch';
