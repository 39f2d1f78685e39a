/**
 * The LLM layer's public surface, for notebooks and other domains. Pipelines see only
 * `LanguageModel` (types.ts); experiments build clients with `createLanguageModel` (config.ts).
 */
export * from './types';
export { LlmClient, normaliseRequest, DEFAULT_MAX_TOKENS, type LlmClientOptions } from './client';
export { llmConfigSchema, createLanguageModel, describeLlmConfig, resolveLlmConfig, type LlmConfig, type LlmConfigInput } from './config';
export { LlmCache, cacheKey, defaultCachePath, type CacheMode, type CacheOptions } from './cache';
export { Limiter, type LimiterOptions, type RetryEvent } from './limiter';
export { wrapModel, abortOn, type ModelMiddleware } from './middleware';
export { runModel, runMiddleware, type RunModelParts } from './run-model';
export { inTrial, trialNow, trialSamples, TRIAL_SAMPLE_STRIDE } from './trial';
export { routeJudgments, judgeLayers } from './judge-routing';
export { UsageMeter, meterUsage, usageOf, usageOfJudgement, addUsage, diffUsage, tokensOf } from './usage';
export { CostCap, CostLimitError, spendCap } from './budget';
export { LlmRequestError, redactSecrets, type ErrorClassification, type LlmErrorKind } from './errors';
export { ScriptedProvider } from './providers/scripted';
export { OpenAICompatibleProvider, classifyOpenAIError } from './providers/openai-compatible';
export { LlamaCppProvider, unloadEmbeddedModels } from './providers/llama-cpp';
