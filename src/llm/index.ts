/**
 * The LLM layer's public surface, for notebooks and other domains. Pipelines see only
 * `LanguageModel` (types.ts); experiments build clients with `createLanguageModel` (config.ts).
 */
export * from './types';
export { LlmClient, normaliseRequest, DEFAULT_MAX_TOKENS, type LlmClientOptions } from './client';
export { llmConfigSchema, createLanguageModel, describeLlmConfig, resolveLlmConfig, type LlmConfig, type LlmConfigInput } from './config';
export { LlmCache, cacheKey, defaultCachePath, type CacheMode, type CacheOptions } from './cache';
export { Limiter, type LimiterOptions, type RetryEvent } from './limiter';
export { withJudge } from './judge-routing';
export { UsageMeter, meteredModel, usageOf, usageOfJudgement, addUsage, diffUsage, tokensOf } from './usage';
export { CostCap, CostLimitError, withSpendGuard } from './budget';
export { LlmRequestError, redactSecrets, type ErrorClassification, type LlmErrorKind } from './errors';
export { ScriptedProvider } from './providers/scripted';
export { OpenAICompatibleProvider, classifyOpenAIError } from './providers/openai-compatible';
export { LlamaCppProvider, unloadEmbeddedModels } from './providers/llama-cpp';
