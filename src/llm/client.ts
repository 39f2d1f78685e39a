import type {
  ChatMessage,
  Completion,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  LanguageModelProvider,
  NormalisedRequest,
} from './types';
import { AmbiqaError } from '../errors';

/**
 * The one place every model call goes through: request normalisation, the persistent cache,
 * the limiter (concurrency, retries, timeouts) and usage accounting. No pipeline calls a
 * provider directly.
 *
 * NOTE (skeleton): cache, limiter and usage are being added in src/llm/{cache,limiter,usage}.ts.
 */
export interface LlmClientOptions {
  /** Placeholder until the cache/limiter land; see the llm issue. */
  [key: string]: unknown;
}

export const DEFAULT_MAX_TOKENS = 256;

export function normaliseRequest(request: GenerateRequest): NormalisedRequest {
  const messages: ChatMessage[] =
    request.messages ?? (request.prompt !== undefined ? [{ role: 'user', content: request.prompt }] : []);
  if (messages.length === 0) {
    throw new AmbiqaError('LLM request has neither `messages` nor `prompt`', 'pass a prompt string or chat messages');
  }
  const n = request.n ?? 1;
  if (!Number.isInteger(n) || n < 1) throw new AmbiqaError(`LLM request option n=${n} must be a positive integer`);
  return {
    messages,
    temperature: request.temperature ?? 0,
    topP: request.topP ?? 1,
    maxTokens: request.maxTokens ?? DEFAULT_MAX_TOKENS,
    stop: request.stop ?? [],
    n,
    seed: request.seed ?? null,
    purpose: request.purpose ?? 'unspecified',
  };
}

export class LlmClient implements LanguageModel {
  constructor(
    readonly backend: LanguageModelProvider,
    readonly options: LlmClientOptions = {},
  ) {}

  get provider(): string {
    return this.backend.provider;
  }

  get model(): string {
    return this.backend.model;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    const started = performance.now();
    const normalised = normaliseRequest(request);
    const completions: Completion[] = [];
    for (let i = 0; i < normalised.n; i++) {
      const t0 = performance.now();
      const c = await this.backend.doGenerate(normalised, i, { signal: request.signal });
      completions.push({ ...c, latencySeconds: (performance.now() - t0) / 1000, cacheHit: false, sampleIndex: i });
    }
    return {
      request: normalised,
      completions,
      usage: {
        promptTokens: completions.reduce((s, c) => s + c.usage.promptTokens, 0),
        completionTokens: completions.reduce((s, c) => s + c.usage.completionTokens, 0),
      },
      wallSeconds: (performance.now() - started) / 1000,
    };
  }
}
