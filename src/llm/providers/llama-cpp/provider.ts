import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ChatHistoryItem, ChatWrapper, Token } from 'node-llama-cpp';
import { AmbiqaError } from '../../../errors';
import { LlmRequestError } from '../../errors';
import type {
  ChatMessage,
  FinishReason,
  LanguageModelProvider,
  NormalisedJudgeRequest,
  NormalisedRequest,
  ProviderBatch,
  ProviderCompletion,
  ProviderJudgement,
} from '../../types';
import { completionLogprob, evaluateCanonically, nextTokenDistribution } from './canonical';
import { defaultThreads } from './cpu';
import {
  embeddedEngine,
  embeddedModelFromManifest,
  fileSha256,
  getContext,
  getLlamaInstance,
  loadModel,
  serialise,
  type ContextEntry,
  type ModelEntry,
  type NodeLlamaCpp,
  type Slot,
} from './engine';
import { labelProbabilities } from './judge';
import { chooseSlots, clearSlot, primeSlots } from './slots';

/**
 * The embedded provider: options, and `LlamaCppProvider` putting the folder's parts together
 * (index.ts says how). It classifies its own failures for the limiter (errors.ts): a model file
 * or context that cannot be loaded is `config`, a prompt longer than the context `client`, neither
 * retried; an abort passes through as the caller's.
 */
export interface LlamaCppOptions {
  /** The .gguf file. Default: the embedded model of `ambiqa setup` (its manifest). */
  modelPath?: string;
  /** The file's sha256; default from the manifest when the file is the manifest's, else computed. */
  sha256?: string;
  /** CPU threads for evaluation. Default `defaultThreads()`. */
  threads?: number;
  /** Context window in tokens (prompt + completion) of each slot. Default 4096, capped at the model's. */
  contextSize?: number;
  /**
   * Context sequences (slots) of the context: how many samples decode in one batch, and how many
   * distinct prompt prefixes stay evaluated. Each costs KV-cache memory (about 12 KB per token of
   * `contextSize` for the default 0.5B model). Default 8.
   */
  sequences?: number;
  /** Reuse the evaluated prompt prefix a slot already holds. Default true; false re-reads every prompt. */
  prefixReuse?: boolean;
  /**
   * Decode the n samples of a request as parallel slots in one batch. Default true; false decodes
   * them one by one, each resuming the evaluated prompt. Needs node-llama-cpp >= 3.22: 3.21.1
   * garbled samples decoded in parallel (docs/llm.md).
   */
  batchSamples?: boolean;
  /**
   * llama.cpp's flash-attention kernel. node-llama-cpp's default (`auto`) lets llama.cpp decide,
   * and on this CPU it turns it on (its log: "Flash Attention enabled"); set explicitly so that the
   * logged `llm.flashAttention` says what ran. Off, prompts were read about 1.2× slower here
   * (163–165 against 181–217 tokens/s over a 2,276-token prompt, 2 threads, idle machine). It
   * changes the order of floating-point sums, so greedy replies can differ late, as with another
   * thread count. Default `DEFAULT_FLASH_ATTENTION` (true).
   */
  flashAttention?: boolean;
  /**
   * Names the slot pool. Providers with equal settings share one pool (the clients of a run
   * should); a benchmark running two modes with equal settings side by side gives each its own
   * name, so that neither resumes prompts the other evaluated. Default: one shared pool.
   */
  pool?: string;
}

export const DEFAULT_SEQUENCES = 8;

export const DEFAULT_FLASH_ATTENTION = true;

export const DEFAULT_CONTEXT_SIZE = 4096;

/** What the embedded provider evaluated: the prompt tokens asked for vs those read by a forward pass. */
export interface EmbeddedEvaluationStats {
  /** Generations and judgments. */
  calls: number;
  /** Prompt tokens of every sample and judgment (what `usage.promptTokens` adds up to). */
  promptTokens: number;
  /** Prompt tokens that went through a forward pass; the rest came from a slot's evaluated prefix. */
  promptTokensEvaluated: number;
  completionTokens: number;
  /** Seconds spent in calls. */
  seconds: number;
  /** Samples decoded in a batch of more than one slot. */
  batchedSamples: number;
  /** Evaluated prompt states copied from one slot into another for a batch. */
  stateCopies: number;
}

function emptyStats(): EmbeddedEvaluationStats {
  return { calls: 0, promptTokens: 0, promptTokensEvaluated: 0, completionTokens: 0, seconds: 0, batchedSamples: 0, stateCopies: 0 };
}

interface Resources {
  lib: NodeLlamaCpp;
  modelEntry: ModelEntry;
  ctx: ContextEntry;
}

interface RenderedPrompt {
  tokens: Token[];
  stopTriggers: ReturnType<ChatWrapper['generateContextState']>['stopGenerationTriggers'];
}

export class LlamaCppProvider implements LanguageModelProvider {
  readonly provider = 'llama-cpp';
  /** The GGUF file's sha256 (the cache key's model id). */
  readonly model: string;
  /** `node-llama-cpp@<version>`: part of the cache key (see `LanguageModelProvider.engine`). */
  readonly engine = embeddedEngine();
  readonly modelPath: string;
  readonly threads: number;
  readonly contextSize: number;
  readonly sequences: number;
  readonly prefixReuse: boolean;
  readonly batchSamples: boolean;
  readonly flashAttention: boolean;
  readonly pool: string;
  /** Totals since construction or `resetStats()` (benchmarks read them). */
  stats: EmbeddedEvaluationStats = emptyStats();
  /** Indexes (in the pool) of the slots the last call ran on; tests read it. */
  lastSlots: number[] = [];
  private tick = 0;

  constructor(options: LlamaCppOptions = {}) {
    let sha256 = options.sha256;
    if (options.modelPath) {
      this.modelPath = resolve(options.modelPath);
    } else {
      const fromManifest = embeddedModelFromManifest();
      this.modelPath = fromManifest.path;
      sha256 ??= fromManifest.sha256;
    }
    if (!existsSync(this.modelPath)) {
      throw new AmbiqaError(
        `embedded model file not found: ${this.modelPath}`,
        options.modelPath
          ? 'fix `model` in the llm config (a .gguf file), or run `npx ambiqa setup` and leave `model` unset'
          : 'run `npx ambiqa setup` to fetch the embedded models',
      );
    }
    if (!sha256) {
      // A file given by path: ask the manifest first (cheap), hash it only if it is not there.
      try {
        const fromManifest = embeddedModelFromManifest();
        if (resolve(fromManifest.path) === this.modelPath) sha256 = fromManifest.sha256;
      } catch {
        /* no manifest: hash the file below */
      }
    }
    this.model = sha256 ?? fileSha256(this.modelPath);
    this.threads = Math.max(1, Math.floor(options.threads ?? defaultThreads()));
    this.contextSize = Math.max(64, Math.floor(options.contextSize ?? DEFAULT_CONTEXT_SIZE));
    this.sequences = Math.max(1, Math.floor(options.sequences ?? DEFAULT_SEQUENCES));
    this.prefixReuse = options.prefixReuse ?? true;
    this.batchSamples = options.batchSamples ?? true;
    this.flashAttention = options.flashAttention ?? DEFAULT_FLASH_ATTENTION;
    this.pool = options.pool ?? '';
  }

  /** Return the totals so far and start counting from zero. */
  resetStats(): EmbeddedEvaluationStats {
    const out = this.stats;
    this.stats = emptyStats();
    return out;
  }

  /** Load the model and context now instead of on the first call (e.g. to time loading apart). */
  async load(): Promise<void> {
    await this.resources();
  }

  private async resources(): Promise<Resources> {
    const { lib } = await getLlamaInstance();
    const modelEntry = await loadModel(this.modelPath);
    const decoding = `reuse=${this.prefixReuse},batch=${this.batchSamples},pool=${this.pool}`;
    const ctx = await getContext(modelEntry, this.modelPath, this.contextSize, this.threads, this.sequences, decoding, this.flashAttention);
    return { lib, modelEntry, ctx };
  }

  async doGenerate(
    request: NormalisedRequest,
    sampleIndex: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderCompletion> {
    const r = await this.resources();
    return this.timed(r.ctx, async () => {
      options.signal?.throwIfAborted();
      const prompt = this.render(r, request.messages);
      const [slot] = this.chooseSlots(r.ctx, prompt.tokens, 1);
      return this.generateOn(r, slot!, prompt, request, sampleIndex, options.signal);
    });
  }

  /**
   * Several samples of one request. With `batchSamples`, up to `sequences` of them decode at once
   * as parallel slots (more are done in rounds); the prompt is evaluated once and copied into the
   * other slots. Each sample keeps its own seed (seed + sample index), so it is the same sample
   * whether it was drawn alone or in a batch of any size — only the floating-point order of a
   * batched evaluation may differ.
   */
  async doGenerateBatch(
    request: NormalisedRequest,
    sampleIndices: number[],
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderBatch> {
    const r = await this.resources();
    return this.timed(r.ctx, async () => {
      const prompt = this.render(r, request.messages);
      const width = this.batchSamples ? r.ctx.slots.length : 1;
      const completions: ProviderCompletion[] = [];
      for (let start = 0; start < sampleIndices.length; start += width) {
        options.signal?.throwIfAborted();
        const round = sampleIndices.slice(start, start + width);
        const slots = this.chooseSlots(r.ctx, prompt.tokens, round.length);
        if (round.length > 1) {
          const primed = await primeSlots(slots, prompt.tokens, this.prefixReuse);
          this.stats.promptTokensEvaluated += primed.evaluated;
          this.stats.stateCopies += primed.copies;
          this.stats.batchedSamples += round.length;
        }
        // allSettled, not all: a failed sample must not leave its siblings running on the context
        // while the next call starts.
        const settled = await Promise.allSettled(
          round.map((sampleIndex, j) => this.generateOn(r, slots[j]!, prompt, request, sampleIndex, options.signal, round.length > 1)),
        );
        for (const s of settled) if (s.status === 'rejected') throw s.reason;
        completions.push(...settled.map((s) => (s as PromiseFulfilledResult<ProviderCompletion>).value));
      }
      const warnings = this.batchSamples && r.ctx.warning && sampleIndices.length > 1 ? [r.ctx.warning] : [];
      return { completions, ...(warnings.length > 0 ? { warnings } : {}) };
    });
  }

  /**
   * A judgment from one evaluation of the prompt (the assistant turn opened) and its next-token
   * distribution over the labels' first tokens; nothing is decoded.
   */
  async doJudge(
    request: NormalisedJudgeRequest,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderJudgement> {
    const r = await this.resources();
    return this.timed(r.ctx, async () => {
      options.signal?.throwIfAborted();
      const prompt = this.render(r, request.messages);
      const [slot] = this.chooseSlots(r.ctx, prompt.tokens, 1);
      const sequence = slot!.sequence;
      if (!this.prefixReuse) await clearSlot(slot!);
      this.stats.promptTokens += prompt.tokens.length;
      const model = r.modelEntry.model;
      // The prompt canonically (the same bits whatever the slot held), then each label path
      // right after it.
      const { probabilities, labelMass } = await labelProbabilities(
        request.labels,
        (text) => model.tokenize(text, false),
        async (path) => {
          if (path.length === 0) {
            const { distribution, evaluated } = await evaluateCanonically(slot!, prompt.tokens, { logitsAtEnd: true });
            this.stats.promptTokensEvaluated += evaluated;
            return distribution!;
          }
          const { distribution, evaluated } = await nextTokenDistribution(sequence, [...prompt.tokens, ...path]);
          this.stats.promptTokensEvaluated += evaluated;
          return distribution;
        },
      );
      const usage = { promptTokens: prompt.tokens.length, completionTokens: 0 };
      // No label token had any probability (cannot happen with a full softmax, but a model could
      // put every label below float precision): let the client parse a greedy reply instead.
      if (!(labelMass > 0)) return { probabilities: request.labels.map(() => 0), labelMass: 0, mode: 'text', usage };
      return { probabilities, labelMass, mode: 'probability', usage };
    });
  }

  /** The model is shared process-wide; see `unloadEmbeddedModels` to free it. */
  async dispose(): Promise<void> {}

  private timed<T>(ctx: ContextEntry, fn: () => Promise<T>): Promise<T> {
    return serialise(ctx, async () => {
      const t0 = performance.now();
      try {
        return await fn();
      } finally {
        this.stats.calls += 1;
        this.stats.seconds += (performance.now() - t0) / 1000;
      }
    });
  }

  /** The chat-templated prompt as tokens, the assistant turn opened; too long → a clear error. */
  private render(r: Resources, messages: ChatMessage[]): RenderedPrompt {
    const state = r.modelEntry.chatWrapper.generateContextState({ chatHistory: toChatHistory(messages) });
    const tokens: Token[] = state.contextText.tokenize(r.modelEntry.model.tokenizer);
    if (tokens.length >= r.ctx.contextSize) {
      throw new LlmRequestError(
        `the prompt has ${tokens.length} tokens but the embedded model's context holds ${r.ctx.contextSize}`,
        { kind: 'client', hint: 'raise `contextSize` in the llm config, or shorten the prompt (fewer passages or demonstrations)' },
      );
    }
    return { tokens, stopTriggers: state.stopGenerationTriggers };
  }

  /** `chooseSlots` (slots.ts) for this provider, remembering which slots it took (`lastSlots`). */
  private chooseSlots(ctx: ContextEntry, tokens: Token[], count: number): Slot[] {
    const chosen = chooseSlots(ctx.slots, tokens, count, { prefixReuse: this.prefixReuse, tick: () => ++this.tick });
    this.lastSlots = chosen.map((slot) => ctx.slots.indexOf(slot));
    return chosen;
  }

  /**
   * One sample on one slot. Unless `primed` (a batch's `primeSlots` did it), the prompt but its
   * last token is first evaluated canonically, so a greedy reply is the same whatever the slot
   * held; LlamaCompletion then evaluates the last prompt token alone and decodes.
   */
  private async generateOn(
    r: Resources,
    slot: Slot,
    prompt: RenderedPrompt,
    request: NormalisedRequest,
    sampleIndex: number,
    signal: AbortSignal | undefined,
    primed = false,
  ): Promise<ProviderCompletion> {
    const sequence = slot.sequence;
    this.stats.promptTokens += prompt.tokens.length;
    if (!primed) {
      if (!this.prefixReuse) await clearSlot(slot);
      this.stats.promptTokensEvaluated += (await evaluateCanonically(slot, prompt.tokens.slice(0, -1), { logitsAtEnd: false })).evaluated;
    }
    // What LlamaCompletion evaluates: the last prompt token (its logits start the reply).
    this.stats.promptTokensEvaluated += 1;
    const completion = new r.lib.LlamaCompletion({ contextSequence: sequence });
    const generated: Token[] = [];
    try {
      const result = await completion.generateCompletionWithMeta(prompt.tokens, {
        maxTokens: request.maxTokens,
        temperature: request.temperature,
        topP: request.topP,
        // Per-sample seed: n samples at temperature > 0 differ, and each is reproducible.
        seed: (request.seed ?? 0) + sampleIndex,
        customStopTriggers: [...prompt.stopTriggers, ...request.stop],
        // Stop at a full context instead of silently dropping the start of the prompt.
        disableContextShift: true,
        onToken: (tokens) => {
          generated.push(...tokens);
        },
        // Stop after the token in flight rather than reject at once: node-llama-cpp rejects on an
        // abort while the context's batch is still decoding this completion's token, and the
        // `finally` below then disposes the completion under that decode, which throws a
        // DisposedError outside any await — an uncaught exception that turned a clean Ctrl-C
        // (exit 130) into a crash (exit 1). The abort is raised here once the decode has returned.
        ...(signal ? { signal, stopOnAbortSignal: true } : {}),
      });
      signal?.throwIfAborted();
      this.stats.completionTokens += generated.length;
      const logprob = request.logprobs ? await completionLogprob(slot, prompt.tokens, generated) : undefined;
      return {
        text: result.response,
        finishReason: mapStopReason(result.metadata.stopReason),
        usage: { promptTokens: prompt.tokens.length, completionTokens: generated.length },
        ...(logprob !== undefined ? { logprob } : {}),
      };
    } finally {
      completion.dispose({ disposeSequence: false });
    }
  }
}

/**
 * Chat messages as node-llama-cpp's history. A trailing assistant message is kept as the start
 * of the model's reply (the model continues it); otherwise an empty reply is opened.
 */
export function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((m): ChatHistoryItem => {
    if (m.role === 'system') return { type: 'system', text: m.content };
    if (m.role === 'user') return { type: 'user', text: m.content };
    return { type: 'model', response: [m.content] };
  });
  if (messages[messages.length - 1]?.role !== 'assistant') history.push({ type: 'model', response: [] });
  return history;
}

function mapStopReason(reason: string): FinishReason {
  if (reason === 'maxTokens') return 'length';
  if (reason === 'eogToken' || reason === 'stopGenerationTrigger' || reason === 'customStopTrigger') return 'stop';
  return 'other';
}
