/**
 * The language-model contract. Providers implement `LanguageModelProvider.doGenerate` (one
 * sample, no caching, no retries); everything else goes through `LanguageModel.generate`, which
 * `LlmClient` (client.ts) implements with the cache, the limiter and usage accounting in one place.
 * Pipelines only ever see `LanguageModel`.
 */

export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** Sampling parameters. Every one of them is part of the cache key. */
export interface SamplingOptions {
  /** 0 means greedy. Default 0. */
  temperature?: number;
  /** Nucleus sampling mass. Default 1. */
  topP?: number;
  /** Upper bound on generated tokens. Default 256. */
  maxTokens?: number;
  /** Generation stops before any of these strings. */
  stop?: string[];
  /** Seed for providers that honour one; the sample index is added to it per sample. */
  seed?: number;
}

export interface GenerateRequest extends SamplingOptions {
  /** Chat messages; give `prompt` instead for a single user message. */
  messages?: ChatMessage[];
  prompt?: string;
  /** Number of independent samples (self-consistency). Default 1. */
  n?: number;
  /** What the call is for, e.g. `toc.rac` or `ve.verifying-question`; recorded in traces. */
  purpose?: string;
  signal?: AbortSignal;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export type FinishReason = 'stop' | 'length' | 'other';

/** One generated sample. */
export interface Completion {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  /** Seconds the provider spent on this sample; 0 for cache hits. */
  latencySeconds: number;
  /** True when this sample was replayed from the persistent cache. */
  cacheHit: boolean;
  /** 0..n-1: the sample's index, part of its cache key. */
  sampleIndex: number;
}

export interface GenerateResult {
  /** The request as normalised (messages resolved, defaults filled) — what the cache key hashes. */
  request: NormalisedRequest;
  completions: Completion[];
  /** Sum over completions. */
  usage: TokenUsage;
  /** Wall seconds for the whole call, cache lookups included. */
  wallSeconds: number;
}

/** A request with every default filled in; what providers receive and the cache keys on. */
export interface NormalisedRequest {
  messages: ChatMessage[];
  temperature: number;
  topP: number;
  maxTokens: number;
  stop: string[];
  n: number;
  seed: number | null;
  purpose: string;
}

/** What a provider returns for one sample. */
export interface ProviderCompletion {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
}

export interface LanguageModelProvider {
  /** e.g. `openai-compatible`, `llama-cpp`, `scripted`. Part of the cache key. */
  readonly provider: string;
  /** Model name or model file checksum. Part of the cache key. */
  readonly model: string;
  /**
   * Generate one sample. `sampleIndex` lets providers derive a per-sample seed. Callers should
   * go through `LanguageModel.generate`, which adds caching, retries and accounting.
   */
  doGenerate(
    request: NormalisedRequest,
    sampleIndex: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderCompletion>;
  /** Release native resources (loaded models, sockets). */
  dispose?(): Promise<void>;
}

/** What pipelines use. */
export interface LanguageModel {
  readonly provider: string;
  readonly model: string;
  generate(request: GenerateRequest): Promise<GenerateResult>;
}

/** Running totals for a run or a question. */
export interface UsageTotals {
  calls: number;
  samples: number;
  promptTokens: number;
  completionTokens: number;
  cacheHits: number;
  /** Seconds spent in providers (cache hits cost none). */
  liveSeconds: number;
}

export function emptyUsage(): UsageTotals {
  return { calls: 0, samples: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, liveSeconds: 0 };
}
