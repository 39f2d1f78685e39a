/**
 * The language-model contract. Providers implement `LanguageModelProvider.doGenerate` (one
 * sample, no caching, no retries); everything else goes through `LanguageModel.generate`, which
 * `LlmClient` (client.ts) implements with the cache, the limiter and usage accounting in one place.
 * Pipelines only ever see `LanguageModel`; what a run adds around it (cap, meter, signal, judge
 * routing, trace recording) are layers folded on once (middleware.ts).
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
  /**
   * Ask the provider for the log-probability of each sample's generated text (Verify-and-Edit's
   * `consistency: logprob`). Part of the cache key only when true.
   */
  logprobs?: boolean;
}

export interface GenerateRequest extends SamplingOptions {
  /** Chat messages; give `prompt` instead for a single user message. */
  messages?: ChatMessage[];
  prompt?: string;
  /** Number of independent samples (self-consistency). Default 1. */
  n?: number;
  /**
   * Index of the first sample: the call draws samples firstSample … firstSample + n − 1. Drawing
   * in rounds (adaptive self-consistency) continues where the last round stopped, with the same
   * per-sample seeds and cache keys as one call for all of them. Default 0.
   */
  firstSample?: number;
  /** What the call is for, e.g. `toc.rac` or `ve.verifying-question`; recorded in traces. */
  purpose?: string;
  signal?: AbortSignal;
  /** The run's cost cap, attached by its `spendCap` layer (budget.ts); pipelines never set it. */
  spendGuard?: SpendGuard;
  /**
   * Who stores what this call computes in the persistent cache: the run, as `<run folder>@<its
   * first start>`, attached by the run model's `cache-writer` layer (run-model.ts); pipelines
   * never set it. Not part of the cache key. A later replay reports it as `cachedFrom`.
   */
  cacheWriter?: string;
}

/**
 * What a run may spend (`llm.maxCostUsd`, `--max-cost`; `CostCap` in budget.ts implements it).
 * A layer of the run's model (`spendCap`, built once per session by `runModel`) attaches it to
 * every call as `spendGuard`; the client asks it before every live call (cache hits cost nothing
 * and are never refused) and tells it what the call cost.
 */
export interface SpendGuard {
  /** Before a live call: throws `CostLimitError` when it would pass the cap; else returns the settle function. */
  open(): (costUsd: number | undefined) => void;
}

/**
 * Token counts as a provider reports them for one sample (or a call's samples together).
 * `undefined` where the provider did not say — an OpenAI-compatible server that sends no `usage` —
 * which is unknown, never 0. Cache rows and run files written before issue 37 stored 0 for
 * "not reported" as well as for a real 0; read back, such a 0 may mean either.
 */
export interface TokenUsage {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  /** Prompt tokens the endpoint served from its own prompt cache, when it says (billed at the cached rate). */
  cachedPromptTokens?: number | undefined;
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
  /**
   * A replay: the `cacheWriter` of the call that computed it (a run, possibly another one), when
   * it recorded one; entries stored before ambiqa recorded writers have none.
   */
  cachedFrom?: string;
  /** 0..n-1: the sample's index, part of its cache key. */
  sampleIndex: number;
  /** Sum of token log-probabilities, when the request asked for `logprobs` and the provider knows. */
  logprob?: number;
  /** US dollars this sample cost (0 for cache hits and the embedded model); absent when no price is known. */
  costUsd?: number;
}

export interface GenerateResult {
  /** The request as normalised (messages resolved, defaults filled) — what the cache key hashes. */
  request: NormalisedRequest;
  completions: Completion[];
  /** Sum over completions. */
  usage: TokenUsage;
  /** Wall seconds for the whole call, cache lookups included. */
  wallSeconds: number;
  /** Conditions the provider worked around (recorded as trace warnings). */
  warnings?: string[];
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
  /** Present (true) only when log-probabilities were asked for, so older cache keys stay valid. */
  logprobs?: true;
  /** First sample index, present only when > 0 (not part of the key: each sample's index is). */
  firstSample?: number;
}

/** What a provider returns for one sample. */
export interface ProviderCompletion {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  /** Sum of the generated tokens' natural-log probabilities, when `logprobs` was asked and known. */
  logprob?: number;
}

/** What a provider returns for several samples of one request (`doGenerateBatch`). */
export interface ProviderBatch {
  /** One per requested sample index, in the order asked. */
  completions: ProviderCompletion[];
  /** Conditions worked around (e.g. a context that could not hold the batch, sampled one by one). */
  warnings?: string[];
}

// ---------------------------------------------------------------- graded judgments

/**
 * A closed-label judgment (True/False, Yes/No, Useful/Useless…) read from the model's next-token
 * distribution over the labels' first tokens instead of parsed from generated text, so that a
 * threshold on P(label 0) is a real knob. Pipelines call `LanguageModel.judge`.
 */
export interface JudgeRequest {
  messages?: ChatMessage[];
  prompt?: string;
  /**
   * The labels, the positive one first (e.g. `['True', 'False']`). At least two, non-empty, and
   * distinct in their first token; `JudgeResult.p` is the probability of `labels[0]`.
   */
  labels: string[];
  /** What the call is for, e.g. `toc.verify`; recorded in traces. */
  purpose?: string;
  signal?: AbortSignal;
  /** The run's cost cap, attached by its `spendCap` layer (budget.ts); pipelines never set it. */
  spendGuard?: SpendGuard;
  /**
   * Who stores what this call computes in the persistent cache: the run, as `<run folder>@<its
   * first start>`, attached by the run model's `cache-writer` layer (run-model.ts); pipelines
   * never set it. Not part of the cache key. A later replay reports it as `cachedFrom`.
   */
  cacheWriter?: string;
}

/** A judge request with every default filled in; what providers receive and the cache keys on. */
export interface NormalisedJudgeRequest {
  messages: ChatMessage[];
  labels: string[];
  purpose: string;
}

/**
 * `probability`: read from next-token probabilities (one forward pass, no decoding);
 * `text`: the provider or endpoint gave no probabilities, so a greedy reply was parsed and
 * P ∈ {0, 1}. Recorded per judgment and as the run param `judge_mode`.
 */
export type JudgeMode = 'probability' | 'text';

/**
 * Why a judgment asked for probabilities came back in text mode: the endpoint sent no
 * log-probabilities, refused the parameter, sent some but none for a label, or refused the
 * request for another reason.
 */
export type JudgeFallback = 'no-logprobs' | 'rejected' | 'no-label' | 'other';

/** What a provider returns for one judgment. */
export interface ProviderJudgement {
  /** One per label, in the request's order, renormalised over the labels (sums to 1). */
  probabilities: number[];
  /** Probability mass the labels had before renormalisation (1 in text mode). */
  labelMass: number;
  mode: JudgeMode;
  /** Text mode after a probability request: why (absent when text was asked for, or replayed from the cache). */
  fallback?: JudgeFallback;
  /** Text mode: the reply that was parsed. */
  text?: string;
  /** Text mode: the reply named none of the labels (then every probability is 0). */
  unparsed?: boolean;
  usage: TokenUsage;
}

export interface JudgeResult {
  request: NormalisedJudgeRequest;
  /** One per label, request order. */
  probabilities: number[];
  /** P(labels[0]): the graded verdict pipelines threshold. 0 when a text reply did not parse. */
  p: number;
  /** The most probable label; null when a text reply named none. */
  label: string | null;
  labelMass: number;
  mode: JudgeMode;
  /** Text mode after a probability request: why (see `JudgeFallback`). */
  fallback?: JudgeFallback;
  text?: string;
  usage: TokenUsage;
  /** Seconds the provider spent; 0 for cache hits. */
  latencySeconds: number;
  cacheHit: boolean;
  /** A replay: who computed it (`Completion.cachedFrom`). */
  cachedFrom?: string;
  /** Wall seconds for the whole call, cache lookup included. */
  wallSeconds: number;
  /** US dollars this judgment cost (0 for cache hits and the embedded model); absent when no price is known. */
  costUsd?: number;
}

export interface LanguageModelProvider {
  /** e.g. `openai-compatible`, `llama-cpp`, `scripted`. Part of the cache key. */
  readonly provider: string;
  /** Model name or model file checksum. Part of the cache key. */
  readonly model: string;
  /**
   * Where the model is served (an API root, without credentials), for providers that call a
   * server. Part of the cache key: two servers that serve the same model name are two models as
   * far as the cache is concerned, so a broken endpoint can never look healthy by replaying
   * another's answers. In-process providers leave it out.
   */
  readonly endpoint?: string;
  /**
   * The in-process engine that computes the samples (library and version, e.g.
   * `node-llama-cpp@3.22.1`). Part of the cache key: a sample is reproducible only by the engine
   * that drew it, and an engine upgraded for a bug must not replay what the broken one stored
   * (node-llama-cpp 3.21.1 garbled batched samples). Providers that call a server leave it out.
   */
  readonly engine?: string;
  /**
   * Generate one sample. `sampleIndex` lets providers derive a per-sample seed. Callers should
   * go through `LanguageModel.generate`, which adds caching, retries and accounting.
   */
  doGenerate(
    request: NormalisedRequest,
    sampleIndex: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderCompletion>;
  /**
   * Several samples of one request at once (e.g. decoded as parallel sequences in one batch).
   * `sampleIndices` are the samples to draw (the cache misses); each keeps its per-sample seed,
   * so a sample is the same whichever way it was drawn. Optional: without it the client calls
   * `doGenerate` per sample.
   */
  doGenerateBatch?(
    request: NormalisedRequest,
    sampleIndices: number[],
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderBatch>;
  /**
   * One judgment from next-token probabilities over the labels' first tokens. Providers that
   * cannot give probabilities leave this out (or return `mode: 'text'`), and the client falls
   * back to a short greedy `doGenerate` parsed for a label.
   */
  doJudge?(
    request: NormalisedJudgeRequest,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderJudgement>;
  /** Release native resources (loaded models, sockets). */
  dispose?(): Promise<void>;
}

/** What pipelines use. */
export interface LanguageModel {
  readonly provider: string;
  readonly model: string;
  /**
   * Set when `judge` is served by another model than `provider`/`model` (a run's `judge:`
   * section, routed by the `routeJudgments` layer): who answers the judgments, so traces say so.
   */
  readonly judgeModel?: { provider: string; model: string };
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** A graded closed-label judgment (see `JudgeRequest`); cached and counted like `generate`. */
  judge(request: JudgeRequest): Promise<JudgeResult>;
}

/**
 * What model calls used: the one usage shape for a call, a question, a session and a run, added
 * up by one function (`addUsage`, usage.ts) wherever usage is summed — the client's meter, a
 * question's trace summary, a run's metrics. Token counts are as in `TokenUsage`: a sum is
 * unknown (`undefined`) when any call in it did not report its tokens.
 */
export interface Usage extends TokenUsage {
  /** Model calls: a `generate` (whatever its n) or a judgment is one. */
  calls: number;
  /** Samples drawn (a judgment is one). */
  samples: number;
  /** Samples replayed from the cache or shared with an identical call in flight. */
  cacheHits: number;
  /** Seconds spent in providers (cache hits cost none). */
  liveSeconds: number;
  /** US dollars of the live calls; absent when no call had a known price. */
  costUsd?: number;
}

/** The old name of `Usage`, kept for library users. */
export type UsageTotals = Usage;

/** No calls yet: every count 0, tokens known to be 0. */
export function emptyUsage(): Usage {
  return { calls: 0, samples: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, liveSeconds: 0 };
}
