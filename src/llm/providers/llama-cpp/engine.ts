import { readFileSync, statSync } from 'node:fs';
import { sha256OfFile } from '../../../common/file-hash';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChatWrapper, Llama, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import { readToolStamp, requireToolSet, resolveTool } from '../../../config/tools';
import { readModelManifest } from '../../../config/models';
import { LlmRequestError } from '../../errors';

/**
 * The engine and the model registry: node-llama-cpp loaded once per process, one loaded model per
 * GGUF file shared by every provider (loading costs seconds and memory, and runs open many
 * clients), and per model one context per (size, threads, sequences, decoding settings), holding
 * its slots. Calls on a context are serialised by a promise chain (`serialise`).
 */

export type NodeLlamaCpp = typeof import('node-llama-cpp');

export interface Slot {
  sequence: LlamaContextSequence;
  /** Tick of the last call that used it: the least recently used slot is the one overwritten. */
  lastUsed: number;
  /**
   * How many of the slot's leading tokens were evaluated canonically (`evaluateCanonically`):
   * from position 0 in chunks aligned to `CANONICAL_CHUNK`, the last one ending here. Any other
   * evaluation that erases below this lowers it.
   */
  canonical: number;
}

export interface ContextEntry {
  context: LlamaContext;
  slots: Slot[];
  contextSize: number;
  /** Tail of the queue of calls on this context. */
  tail: Promise<void>;
  /** Set when fewer slots than asked for could be created (the context fell back to one). */
  warning?: string;
}

export interface ModelEntry {
  model: LlamaModel;
  chatWrapper: ChatWrapper;
  trainContextSize: number | undefined;
  contexts: Map<string, Promise<ContextEntry>>;
}

// ------------------------------------------------------------------ process-wide registry

let llamaPromise: Promise<{ lib: NodeLlamaCpp; llama: Llama }> | null = null;
const models = new Map<string, Promise<ModelEntry>>();

/**
 * node-llama-cpp's entry file: ambiqa's own copy at the pinned version (a development checkout),
 * else the engine set `ambiqa setup` installed into the tool folder (src/config/tools.ts).
 */
function nodeLlamaCppEntry(): string {
  return resolveTool('engine', 'node-llama-cpp');
}

/**
 * Load node-llama-cpp, which is ESM with top-level await, so `require` cannot load it, and which a
 * project that installed ambiqa does not have in its node_modules: it is imported by file URL from
 * where it is installed. Compiled to CommonJS (dist/cjs, tslab's cells) TypeScript would rewrite a
 * plain `import()` into a `require()`, so a Function-built `import()`, which no compiler rewrites,
 * comes first. Code that runs inside a vm context without a dynamic-import hook (vitest's module
 * runner) cannot use that one (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING); there the sources are ES
 * modules, so the plain `import()` is a real one.
 */
async function importNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  const url = pathToFileURL(nodeLlamaCppEntry()).href;
  const dynamicImport = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<NodeLlamaCpp>;
  try {
    return await dynamicImport(url);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING') throw error;
    return (await import(url)) as NodeLlamaCpp;
  }
}

/** The GPU build `ambiqa setup --gpu` added to the engine set, if any (else the CPU build runs). */
function engineGpu(): 'cuda' | 'vulkan' | false {
  if (requireToolSet('engine').source !== 'tools') return false;
  const gpu = readToolStamp('engine')?.gpu ?? [];
  if (gpu.includes('cuda') || gpu.includes('cuda-ext')) return 'cuda';
  if (gpu.includes('vulkan')) return 'vulkan';
  return false;
}

let engineName: string | undefined;

/**
 * `node-llama-cpp@<version>` as installed, read from its package.json (which the package does not
 * export, hence the path next to its entry point). The cache keys samples on it.
 */
export function embeddedEngine(): string {
  if (engineName === undefined) {
    let version = 'unknown';
    try {
      const entry = nodeLlamaCppEntry();
      version = (JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version?: string }).version ?? version;
    } catch {
      /* not installed: loading the model fails later with its own message */
    }
    engineName = `node-llama-cpp@${version}`;
  }
  return engineName;
}

/**
 * The engine build a run records for `ambiqa reproduce`: node-llama-cpp's version and the
 * llama.cpp release its binaries were built from (`llama/llama.cpp.info.json` of the package),
 * read from files only — nothing is loaded and nothing is fetched. `llamaCpp` is absent when
 * the package does not say.
 */
export function embeddedEngineBuild(): { nodeLlamaCpp: string; llamaCpp?: string } {
  const nodeLlamaCpp = embeddedEngine().replace(/^node-llama-cpp@/, '');
  try {
    const root = join(dirname(nodeLlamaCppEntry()), '..');
    const info = JSON.parse(readFileSync(join(root, 'llama', 'llama.cpp.info.json'), 'utf8')) as { tag?: unknown; llamaCppGithubRepo?: unknown };
    if (typeof info.tag === 'string') {
      const repo = typeof info.llamaCppGithubRepo === 'string' ? `${info.llamaCppGithubRepo}@` : '';
      return { nodeLlamaCpp, llamaCpp: `${repo}${info.tag}` };
    }
  } catch {
    /* not installed, or a layout without the file: the version alone */
  }
  return { nodeLlamaCpp };
}

export function getLlamaInstance(): Promise<{ lib: NodeLlamaCpp; llama: Llama }> {
  if (!llamaPromise) {
    llamaPromise = (async () => {
      const lib = await importNodeLlamaCpp();
      // build: 'never' — use a prebuilt binary (the CPU one unless `setup --gpu` added another),
      // never compile at run time.
      const llama = await lib.getLlama({
        gpu: engineGpu(),
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

export function loadModel(path: string): Promise<ModelEntry> {
  let entry = models.get(path);
  if (!entry) {
    entry = (async () => {
      const { lib, llama } = await getLlamaInstance();
      let model: LlamaModel;
      try {
        model = await llama.loadModel({ modelPath: path });
      } catch (error) {
        // A file that does not load will not load on a retry: a config error.
        throw new LlmRequestError(`cannot load the embedded model ${path}: ${(error as Error).message}`, {
          kind: 'config',
          hint: 'the file may be truncated or not a GGUF model; run `npx ambiqa setup` again to re-fetch it',
        });
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

export function getContext(
  modelEntry: ModelEntry,
  path: string,
  contextSize: number,
  threads: number,
  sequences: number,
  decoding: string,
  flashAttention: boolean,
): Promise<ContextEntry> {
  const size = modelEntry.trainContextSize ? Math.min(contextSize, modelEntry.trainContextSize) : contextSize;
  // Providers with other decoding settings get a pool of their own: otherwise one resumes the
  // prefixes the other evaluated, and a side-by-side comparison credits it with the other's work.
  const key = `${size}:${threads}:${sequences}:${decoding}:fa=${flashAttention}`;
  let entry = modelEntry.contexts.get(key);
  if (!entry) {
    entry = (async () => {
      const create = async (n: number): Promise<ContextEntry> => {
        const context = await modelEntry.model.createContext({ contextSize: size, threads, sequences: n, flashAttention });
        const slots = Array.from({ length: n }, () => ({ sequence: context.getSequence(), lastUsed: 0, canonical: 0 }));
        return { context, slots, contextSize: context.contextSize, tail: Promise.resolve() };
      };
      try {
        return await create(sequences);
      } catch (error) {
        const reason = (error as Error).message;
        if (sequences > 1) {
          // Many slots need memory the machine may not have; one slot still works, sequentially.
          try {
            const single = await create(1);
            single.warning =
              `could not create ${sequences} context sequences of ${size} tokens (${reason}); ` +
              'samples are decoded one by one — lower `sequences` or `contextSize` in the llm config';
            process.emitWarning(single.warning, 'AmbiqaLlmWarning');
            return single;
          } catch {
            /* report the original failure below */
          }
        }
        throw new LlmRequestError(
          `cannot create a ${size}-token context with ${sequences} sequence(s)${flashAttention ? ' and flash attention' : ''} for ${path}: ${reason}`,
          { kind: 'config', hint: 'lower `contextSize` or `sequences` in the llm config' },
        );
      }
    })();
    modelEntry.contexts.set(key, entry);
    entry.catch(() => modelEntry.contexts.delete(key));
  }
  return entry;
}

/**
 * node-llama-cpp and a model, loaded as the provider loads them (the prebuilt CPU binary, its
 * thread cap and log level, the same process registry), for benchmarks that time the engine
 * below the LLM client. `unloadEmbeddedModels()` frees the model.
 */
export async function loadEmbeddedEngine(path: string): Promise<{ lib: NodeLlamaCpp; model: LlamaModel }> {
  const { lib } = await getLlamaInstance();
  const { model } = await loadModel(path);
  return { lib, model };
}

/** Files whose model is loaded (or loading) in this process. */
export function loadedEmbeddedModels(): string[] {
  return [...models.keys()];
}

/** Free every loaded model and context (tests, long-lived notebooks). */
/**
 * Free every loaded model and its contexts. `unloadEmbeddedModels` (index.ts) also removes the
 * slots' state files.
 */
export async function unloadModels(): Promise<void> {
  const entries = [...models.values()];
  models.clear();
  for (const p of entries) {
    const m = await p.catch(() => null);
    if (!m) continue;
    for (const c of m.contexts.values()) {
      const entry = await c.catch(() => null);
      if (!entry) continue;
      // A call the client stopped waiting for (an abort rejects at once, common/abort.ts
      // raceAbort) may still be decoding here; disposing under it throws inside node-llama-cpp,
      // where nothing can catch it, and a Ctrl-C'd run died of it after its clean stop. Such a
      // generation ends after the token in flight (stopOnAbortSignal, provider.ts), so this wait
      // is short.
      await entry.tail;
      await entry.context.dispose();
    }
    await m.model.dispose();
  }
}

/** Run `fn` after every call queued on `ctx` before it (one call on a context at a time). */
export function serialise<T>(ctx: ContextEntry, fn: () => Promise<T>): Promise<T> {
  const run = ctx.tail.then(fn);
  ctx.tail = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

// ------------------------------------------------------------------ file identity

const shaMemo = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

/** sha256 of a file, remembered per (path, size, mtime) so it is read once per process. */
export function fileSha256(path: string): string {
  const st = statSync(path);
  const memo = shaMemo.get(path);
  if (memo && memo.size === st.size && memo.mtimeMs === st.mtimeMs) return memo.sha256;
  const sha256 = sha256OfFile(path);
  shaMemo.set(path, { size: st.size, mtimeMs: st.mtimeMs, sha256 });
  return sha256;
}

/** The embedded model's file and checksum from `ambiqa setup`'s manifest. */
export function embeddedModelFromManifest(): { path: string; sha256: string; name: string } {
  const manifest = readModelManifest();
  return { path: manifest.llm.file, sha256: manifest.llm.sha256, name: manifest.llm.name };
}
