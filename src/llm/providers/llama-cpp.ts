import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  ChatHistoryItem,
  ChatWrapper,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from 'node-llama-cpp';
import { projectRoot } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { readModelManifest } from '../../setup/manifest';
import { LlmRequestError } from '../errors';
import type { ChatMessage, FinishReason, LanguageModelProvider, NormalisedRequest, ProviderCompletion } from '../types';

/**
 * The embedded model: a GGUF file run in-process by llama.cpp (node-llama-cpp 3.21.1, CPU).
 *
 * - One loaded model per file, shared by every client in the process (a module-level registry):
 *   loading costs seconds and memory, and runs open many clients.
 * - Explicit `threads` always: node-llama-cpp's default picked 4 threads on a 2-core machine and
 *   was 20× slower (see `defaultThreads`).
 * - One context (and one sequence) per (file, contextSize, threads); llama.cpp contexts are not
 *   safe for concurrent use, so generations on it are serialised by a promise chain.
 * - The prompt is rendered with the chat template stored in the GGUF (Jinja), as the model was
 *   trained; prompt and completion tokens are counted with the model's tokenizer.
 * - `model` (part of the cache key) is the file's sha256, not its path, so a cache stays valid
 *   when the cache folder moves and never mixes two different files with the same name.
 */
export interface LlamaCppOptions {
  /** The .gguf file. Default: the embedded model of `ambiqa setup` (its manifest). */
  modelPath?: string;
  /** The file's sha256; default from the manifest when the file is the manifest's, else computed. */
  sha256?: string;
  /** CPU threads for evaluation. Default `defaultThreads()`. */
  threads?: number;
  /** Context window in tokens (prompt + completion). Default 4096, capped at the model's. */
  contextSize?: number;
}

export const DEFAULT_CONTEXT_SIZE = 4096;

/**
 * Threads when none are configured: `AMBIQA_LLM_THREADS`, else one fewer than the cores.
 * llama.cpp's threads wait for each other at every step, so when any other work competes for a
 * core (the Node thread, the embedder, a parallel test worker) a thread per core collapses:
 * measured on the 2-core machine under load, 1 thread gave 12–20 tokens/s and 2 threads 0.7–1.2.
 */
export function defaultThreads(env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = Number(env.AMBIQA_LLM_THREADS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return Math.max(1, availableParallelism() - 1);
}

type NodeLlamaCpp = typeof import('node-llama-cpp');

interface ContextEntry {
  context: LlamaContext;
  sequence: LlamaContextSequence;
  contextSize: number;
  /** Tail of the queue of generations on this context. */
  tail: Promise<void>;
}

interface ModelEntry {
  model: LlamaModel;
  chatWrapper: ChatWrapper;
  trainContextSize: number | undefined;
  contexts: Map<string, Promise<ContextEntry>>;
}

// ------------------------------------------------------------------ process-wide registry

let llamaPromise: Promise<{ lib: NodeLlamaCpp; llama: Llama }> | null = null;
const models = new Map<string, Promise<ModelEntry>>();

/**
 * Load node-llama-cpp, which is ESM with top-level await, so `require` cannot load it. Under
 * tsx and vitest a plain `import()` works; TypeScript compiling to CommonJS (tslab notebooks)
 * turns that `import()` into a `require()`, which fails with ERR_REQUIRE_ASYNC_MODULE — then a
 * Function-built `import()`, which no compiler rewrites, loads it by file URL.
 */
async function importNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  try {
    return await import('node-llama-cpp');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_REQUIRE_ASYNC_MODULE' && code !== 'ERR_REQUIRE_ESM') throw error;
    const resolved = createRequire(join(projectRoot, 'package.json')).resolve('node-llama-cpp');
    const dynamicImport = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<NodeLlamaCpp>;
    return dynamicImport(pathToFileURL(resolved).href);
  }
}

function getLlamaInstance(): Promise<{ lib: NodeLlamaCpp; llama: Llama }> {
  if (!llamaPromise) {
    llamaPromise = (async () => {
      const lib = await importNodeLlamaCpp();
      // build: 'never' — use the prebuilt CPU binary, never compile at run time.
      const llama = await lib.getLlama({
        gpu: false,
        build: 'never',
        maxThreads: availableParallelism(),
        logLevel: lib.LlamaLogLevel.error,
      });
      return { lib, llama };
    })();
    llamaPromise.catch(() => {
      llamaPromise = null;
    });
  }
  return llamaPromise;
}

function loadModel(path: string): Promise<ModelEntry> {
  let entry = models.get(path);
  if (!entry) {
    entry = (async () => {
      const { lib, llama } = await getLlamaInstance();
      let model: LlamaModel;
      try {
        model = await llama.loadModel({ modelPath: path });
      } catch (error) {
        throw new AmbiqaError(
          `cannot load the embedded model ${path}: ${(error as Error).message}`,
          'the file may be truncated or not a GGUF model; run `npx ambiqa setup` again to re-fetch it',
        );
      }
      const metadata = model.fileInfo.metadata as unknown as {
        tokenizer?: { chat_template?: unknown };
        general?: { architecture?: string };
      } & Record<string, { context_length?: number } | undefined>;
      const template = metadata.tokenizer?.chat_template;
      let chatWrapper: ChatWrapper;
      try {
        // The template stored in the file is the one the model was trained with.
        chatWrapper =
          typeof template === 'string'
            ? new lib.JinjaTemplateChatWrapper({ template, tokenizer: model.tokenizer })
            : lib.resolveChatWrapper(model);
      } catch {
        chatWrapper = lib.resolveChatWrapper(model);
      }
      const arch = metadata.general?.architecture;
      const trainContextSize = arch ? metadata[arch]?.context_length : undefined;
      return { model, chatWrapper, trainContextSize, contexts: new Map() };
    })();
    models.set(path, entry);
    entry.catch(() => models.delete(path));
  }
  return entry;
}

function getContext(modelEntry: ModelEntry, path: string, contextSize: number, threads: number): Promise<ContextEntry> {
  const size = modelEntry.trainContextSize ? Math.min(contextSize, modelEntry.trainContextSize) : contextSize;
  const key = `${size}:${threads}`;
  let entry = modelEntry.contexts.get(key);
  if (!entry) {
    entry = (async () => {
      try {
        const context = await modelEntry.model.createContext({ contextSize: size, threads, sequences: 1 });
        return { context, sequence: context.getSequence(), contextSize: size, tail: Promise.resolve() };
      } catch (error) {
        throw new AmbiqaError(
          `cannot create a ${size}-token context for ${path}: ${(error as Error).message}`,
          'lower `contextSize` in the llm config',
        );
      }
    })();
    modelEntry.contexts.set(key, entry);
    entry.catch(() => modelEntry.contexts.delete(key));
  }
  return entry;
}

/** Files whose model is loaded (or loading) in this process. */
export function loadedEmbeddedModels(): string[] {
  return [...models.keys()];
}

/** Free every loaded model and context (tests, long-lived notebooks). */
export async function unloadEmbeddedModels(): Promise<void> {
  const entries = [...models.values()];
  models.clear();
  for (const p of entries) {
    const m = await p.catch(() => null);
    if (!m) continue;
    for (const c of m.contexts.values()) await (await c.catch(() => null))?.context.dispose();
    await m.model.dispose();
  }
}

// ------------------------------------------------------------------ file identity

const shaMemo = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

/** sha256 of a file, remembered per (path, size, mtime) so it is read once per process. */
export function fileSha256(path: string): string {
  const st = statSync(path);
  const memo = shaMemo.get(path);
  if (memo && memo.size === st.size && memo.mtimeMs === st.mtimeMs) return memo.sha256;
  const hash = createHash('sha256');
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(4 << 20);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  const sha256 = hash.digest('hex');
  shaMemo.set(path, { size: st.size, mtimeMs: st.mtimeMs, sha256 });
  return sha256;
}

/** The embedded model's file and checksum from `ambiqa setup`'s manifest. */
export function embeddedModelFromManifest(): { path: string; sha256: string; name: string } {
  const manifest = readModelManifest();
  return { path: manifest.llm.file, sha256: manifest.llm.sha256, name: manifest.llm.name };
}

// ------------------------------------------------------------------ the provider

export class LlamaCppProvider implements LanguageModelProvider {
  readonly provider = 'llama-cpp';
  /** The GGUF file's sha256 (the cache key's model id). */
  readonly model: string;
  readonly modelPath: string;
  readonly threads: number;
  readonly contextSize: number;

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
  }

  /** Load the model and context now instead of on the first call (e.g. to time loading apart). */
  async load(): Promise<void> {
    await getContext(await loadModel(this.modelPath), this.modelPath, this.contextSize, this.threads);
  }

  async doGenerate(
    request: NormalisedRequest,
    sampleIndex: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<ProviderCompletion> {
    const { lib } = await getLlamaInstance();
    const modelEntry = await loadModel(this.modelPath);
    const ctx = await getContext(modelEntry, this.modelPath, this.contextSize, this.threads);
    return serialise(ctx, async () => {
      options.signal?.throwIfAborted();
      const state = modelEntry.chatWrapper.generateContextState({ chatHistory: toChatHistory(request.messages) });
      const promptTokens: Token[] = state.contextText.tokenize(modelEntry.model.tokenizer);
      if (promptTokens.length >= ctx.contextSize) {
        throw new LlmRequestError(
          `the prompt has ${promptTokens.length} tokens but the embedded model's context holds ${ctx.contextSize}`,
          { kind: 'client', hint: 'raise `contextSize` in the llm config, or shorten the prompt (fewer passages or demonstrations)' },
        );
      }
      const completion = new lib.LlamaCompletion({ contextSequence: ctx.sequence });
      let completionTokens = 0;
      try {
        const result = await completion.generateCompletionWithMeta(promptTokens, {
          maxTokens: request.maxTokens,
          temperature: request.temperature,
          topP: request.topP,
          // Per-sample seed: n samples at temperature > 0 differ, and each is reproducible.
          seed: (request.seed ?? 0) + sampleIndex,
          customStopTriggers: [...state.stopGenerationTriggers, ...request.stop],
          // Stop at a full context instead of silently dropping the start of the prompt.
          disableContextShift: true,
          onToken: (tokens) => {
            completionTokens += tokens.length;
          },
          ...(options.signal ? { signal: options.signal } : {}),
        });
        return {
          text: result.response,
          finishReason: mapStopReason(result.metadata.stopReason),
          usage: { promptTokens: promptTokens.length, completionTokens },
        };
      } finally {
        completion.dispose({ disposeSequence: false });
      }
    });
  }

  /** The model is shared process-wide; see `unloadEmbeddedModels` to free it. */
  async dispose(): Promise<void> {}
}

function serialise<T>(ctx: ContextEntry, fn: () => Promise<T>): Promise<T> {
  const run = ctx.tail.then(fn);
  ctx.tail = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
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
