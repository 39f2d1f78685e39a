import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  ChatHistoryItem,
  ChatWrapper,
  ControlledEvaluateInputItem,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from 'node-llama-cpp';
import { packageRoot } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { readModelManifest } from '../../config/models';
import { LlmRequestError } from '../errors';
import type {
  ChatMessage,
  FinishReason,
  LanguageModelProvider,
  NormalisedJudgeRequest,
  NormalisedRequest,
  ProviderBatch,
  ProviderCompletion,
  ProviderJudgement,
} from '../types';

/**
 * The embedded model: a GGUF file run in-process by llama.cpp (node-llama-cpp 3.22.1, CPU).
 *
 * - One loaded model per file, shared by every client in the process (a module-level registry):
 *   loading costs seconds and memory, and runs open many clients.
 * - Explicit `threads` always: node-llama-cpp's default picked 4 threads on a 2-core machine and
 *   was 20× slower (see `defaultThreads`).
 * - One context per (file, contextSize, threads, sequences, decoding settings), holding `sequences` context
 *   sequences (slots). Calls on a context are serialised by a promise chain; one call may use
 *   several slots at once (the samples of a batch).
 * - Prefix reuse: each slot keeps the tokens it has evaluated (KV cache). A call runs on the slot
 *   whose tokens share the longest prefix with its prompt and evaluates only the rest, so the
 *   instruction and few-shot part of prompts is read once, not once per call.
 * - Batched samples: the n samples of one request decode as n slots of one context; node-llama-cpp
 *   evaluates the slots' pending tokens together in one batch per step. The prompt is evaluated
 *   once and its state copied into the other slots (llama.cpp sequence state save/load).
 * - Judgments (`doJudge`) evaluate the prompt once and read the next-token distribution: no
 *   decoding, one forward pass (plus one token per label prefix that two labels share).
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

/**
 * Threads when none are configured: `AMBIQA_LLM_THREADS`, else every core when the machine is
 * idle as the process first asks, else one fewer than the cores.
 * llama.cpp's threads wait for each other at every step, so when any other work competes for a
 * core (another job, a parallel test worker) a thread per core collapses: measured on the 2-core
 * machine under load, 1 thread gave 12–20 tokens/s and 2 threads 0.7–1.2. On an idle machine
 * the other core is worth having: a 1,361-token prompt plus 40 tokens took 17–18 s with 1 thread
 * and 10–12 s with 2 (same process, alternating). The pipelines never run the embedder and the
 * model at once within a process (`concurrency: 1`, the configs' default), so idle at start means
 * the model has the machine; the test suite pins `AMBIQA_LLM_THREADS=1` (its workers compete).
 */
export function defaultThreads(env: NodeJS.ProcessEnv = process.env, idle: () => boolean = machineLooksIdle): number {
  const fromEnv = Number(env.AMBIQA_LLM_THREADS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  const cores = availableParallelism();
  if (cores <= 1) return 1;
  return idle() ? cores : cores - 1;
}

/** Busy share of all cores below which the machine counts as idle. */
export const IDLE_BUSY_SHARE = 0.2;

let idleVerdict: boolean | undefined;

/**
 * Is the machine idle? The share of CPU time all cores spent busy over `sampleMs`, sampled once
 * per process (so every model and every logged `threads` param of a process agrees).
 */
export function machineLooksIdle(sampleMs = 250): boolean {
  if (idleVerdict !== undefined) return idleVerdict;
  const before = cpuTotals();
  // A synchronous pause: config resolution is synchronous, and this happens once per process.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, sampleMs);
  const after = cpuTotals();
  idleVerdict = busyShare(before, after) < IDLE_BUSY_SHARE;
  return idleVerdict;
}

/** Busy share between two `cpuTotals()` samples (0 when no time passed). */
export function busyShare(before: { busy: number; total: number }, after: { busy: number; total: number }): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : 0;
}

function cpuTotals(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

type NodeLlamaCpp = typeof import('node-llama-cpp');

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

interface ContextEntry {
  context: LlamaContext;
  slots: Slot[];
  contextSize: number;
  /** Tail of the queue of calls on this context. */
  tail: Promise<void>;
  /** Set when fewer slots than asked for could be created (the context fell back to one). */
  warning?: string;
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
/** node-llama-cpp's entry file as ambiqa's package resolves it (not the caller's working directory). */
function nodeLlamaCppEntry(): string {
  return createRequire(join(packageRoot, 'package.json')).resolve('node-llama-cpp');
}

async function importNodeLlamaCpp(): Promise<NodeLlamaCpp> {
  try {
    return await import('node-llama-cpp');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_REQUIRE_ASYNC_MODULE' && code !== 'ERR_REQUIRE_ESM') throw error;
    const resolved = nodeLlamaCppEntry();
    const dynamicImport = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<NodeLlamaCpp>;
    return dynamicImport(pathToFileURL(resolved).href);
  }
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

/** The SIMD sets node-llama-cpp chooses among its per-generation CPU libraries by. */
const KERNEL_FEATURES = [
  'sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'avx512_bf16', 'avx_vnni', 'amx_tile', // x86
  'asimd', 'asimddp', 'i8mm', 'sve', 'sve2', 'sme', // Arm
];

/**
 * The CPU's model and the features that choose llama.cpp's CPU kernels, which floating-point
 * results can depend on (an AVX-512 and an AVX2 dot product sum in different orders): the same
 * request on another machine may give other bits, so a run states the CPU it ran on (`llm.cpu`).
 * On Linux from the x86 `flags` / Arm `Features` line of /proc/cpuinfo.
 */
export function describeCpu(cpuinfo: string | undefined, model: string): string {
  const line = cpuinfo?.split('\n').find((l) => /^(flags|Features)\s*:/.test(l));
  const have = new Set(line ? line.slice(line.indexOf(':') + 1).trim().split(/\s+/) : []);
  const features = KERNEL_FEATURES.filter((f) => have.has(f));
  return features.length > 0 ? `${model.trim()}; ${features.join(' ')}` : model.trim();
}

let cpuDescription: string | undefined;

/** `describeCpu` for this machine, read once. */
export function embeddedCpu(): string {
  if (cpuDescription === undefined) {
    let cpuinfo: string | undefined;
    try {
      cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      /* not Linux: the model name alone */
    }
    cpuDescription = describeCpu(cpuinfo, cpus()[0]?.model ?? 'unknown CPU');
  }
  return cpuDescription;
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

function getContext(
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
        throw new AmbiqaError(
          `cannot create a ${size}-token context with ${sequences} sequence(s)${flashAttention ? ' and flash attention' : ''} for ${path}: ${reason}`,
          'lower `contextSize` or `sequences` in the llm config',
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
export async function unloadEmbeddedModels(): Promise<void> {
  const entries = [...models.values()];
  models.clear();
  for (const p of entries) {
    const m = await p.catch(() => null);
    if (!m) continue;
    for (const c of m.contexts.values()) await (await c.catch(() => null))?.context.dispose();
    await m.model.dispose();
  }
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  stateDir = null;
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

// ------------------------------------------------------------------ sequence state copies

let stateDir: string | null = null;

/** A private folder for the sequence-state files that copy an evaluated prompt between slots. */
function sequenceStateDir(): string {
  if (!stateDir) {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-kv-'));
    stateDir = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return stateDir;
}
let stateFileCounter = 0;

/**
 * Prompt tokens a slot must be missing before its state is copied from the primary slot instead
 * of evaluated: below this, evaluating the few tokens costs less than writing and reading a file.
 */
const COPY_MIN_TOKENS = 32;

/**
 * A slot is resumed only when it holds at least this many of the prompt's leading tokens. Every
 * prompt shares a chat template's opening tokens with every slot; taking a slot for those few
 * would overwrite the few-shot prefix it holds — in ToC each self-verification prompt took the
 * slot of the expansion prompt and the next expansion re-read all its demonstrations.
 */
const MIN_RESUMED_PREFIX = 64;

// ------------------------------------------------------------------ label probabilities

/** A token tree over every surface form of every label; `labels` are the labels passing through. */
interface LabelNode {
  labels: Set<number>;
  children: Map<Token, LabelNode>;
}

/**
 * The spellings a model may start a label with: as given, lower case, upper case and capitalised,
 * each with and without a leading space (tokenizers give " True" and "True" different tokens).
 */
export function labelSurfaceForms(label: string): string[] {
  const t = label.trim();
  const cased = [t, t.toLowerCase(), t.toUpperCase(), t.charAt(0).toUpperCase() + t.slice(1).toLowerCase()];
  return [...new Set(cased.flatMap((c) => [c, ` ${c}`]))];
}

/** Label tokens deeper than this are not followed (labels sharing three tokens are not told apart). */
const MAX_LABEL_DEPTH = 3;

/**
 * P(label) from next-token distributions, without decoding. Every surface form of every label is
 * tokenized into a tree. A label's mass is the probability of the first token at which its forms
 * part from every other label's: at the root that is usually the first token ("True" vs "False");
 * where two labels share a first token ("Use|ful" vs "Use|less") the shared token is evaluated
 * and the next distribution is read, at most `MAX_LABEL_DEPTH` deep. A form that ends where
 * another label's form continues is not counted. Returns the probabilities renormalised over
 * the labels and the mass they had before (`labelMass`).
 */
export async function labelProbabilities(
  labels: string[],
  tokenize: (text: string) => Token[],
  distributionAfter: (path: Token[]) => Promise<Map<Token, number>>,
): Promise<{ probabilities: number[]; labelMass: number; extraTokens: number }> {
  const root: LabelNode = { labels: new Set(), children: new Map() };
  for (const [index, label] of labels.entries()) {
    for (const form of labelSurfaceForms(label)) {
      let node = root;
      for (const token of tokenize(form)) {
        let child = node.children.get(token);
        if (!child) node.children.set(token, (child = { labels: new Set(), children: new Map() }));
        child.labels.add(index);
        node = child;
      }
    }
  }
  const mass = labels.map(() => 0);
  let extraTokens = 0;
  const visit = async (node: LabelNode, path: Token[], pathProbability: number): Promise<void> => {
    const distribution = await distributionAfter(path);
    for (const [token, child] of node.children) {
      const p = pathProbability * (distribution.get(token) ?? 0);
      if (p <= 0) continue;
      if (child.labels.size === 1) {
        mass[[...child.labels][0]!]! += p;
      } else if (child.children.size > 0 && path.length + 1 < MAX_LABEL_DEPTH && p > 1e-6) {
        extraTokens += 1;
        await visit(child, [...path, token], p);
      }
    }
  };
  await visit(root, [], 1);
  const labelMass = mass.reduce((a, b) => a + b, 0);
  return {
    probabilities: labelMass > 0 ? mass.map((m) => m / labelMass) : mass,
    labelMass,
    extraTokens,
  };
}

// ------------------------------------------------------------------ the provider

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
          await this.primeSlots(slots, prompt.tokens);
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
      if (!this.prefixReuse) await this.clearSlot(slot!);
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

  /**
   * The `count` slots to run on: first those that hold at least `MIN_RESUMED_PREFIX` of the
   * prompt's leading tokens, longest shared prefix first; then the least recently used (empty
   * slots first), so that recent prefixes survive. Without prefix reuse always the first slots.
   */
  private chooseSlots(ctx: ContextEntry, tokens: Token[], count: number): Slot[] {
    let chosen: Slot[];
    if (!this.prefixReuse) {
      chosen = ctx.slots.slice(0, count);
    } else {
      chosen = ctx.slots
        .map((slot) => {
          const common = slot.sequence.compareContextTokens(tokens).firstDifferentIndex;
          return { slot, resumed: common >= MIN_RESUMED_PREFIX ? common : 0 };
        })
        .sort((a, b) => b.resumed - a.resumed || a.slot.lastUsed - b.slot.lastUsed)
        .slice(0, count)
        .map((x) => x.slot);
    }
    for (const slot of chosen) slot.lastUsed = ++this.tick;
    this.lastSlots = chosen.map((slot) => ctx.slots.indexOf(slot));
    return chosen;
  }

  /**
   * Before a batch: evaluate the prompt (all but its last token, which generation evaluates)
   * canonically in the first slot, then copy that state into every other slot that lacks much of
   * it, so the prompt is read once per batch instead of once per sample; a slot that lacks only a
   * little evaluates it itself. One slot at a time: evaluations of several slots at once would be
   * merged into one batch by node-llama-cpp, which changes their bits. Afterwards every slot holds
   * the prefix canonically, and the samples' decoding (which is batched across slots, see
   * `batchSamples`) starts at the last prompt token.
   */
  private async primeSlots(slots: Slot[], tokens: Token[]): Promise<void> {
    const prefix = tokens.slice(0, -1);
    const [primary, ...others] = slots;
    if (!primary) return;
    if (!this.prefixReuse) {
      // Every sample re-reads the prompt (what `prefixReuse: false` means), one slot at a time.
      for (const slot of slots) {
        await this.clearSlot(slot);
        this.stats.promptTokensEvaluated += (await evaluateCanonically(slot, prefix, { logitsAtEnd: false })).evaluated;
      }
      return;
    }
    this.stats.promptTokensEvaluated += (await evaluateCanonically(primary, prefix, { logitsAtEnd: false })).evaluated;
    let file: string | null = null;
    try {
      for (const slot of others) {
        const common = Math.min(slot.sequence.compareContextTokens(prefix).firstDifferentIndex, slot.canonical, prefix.length);
        if (prefix.length - common < COPY_MIN_TOKENS) {
          this.stats.promptTokensEvaluated += (await evaluateCanonically(slot, prefix, { logitsAtEnd: false })).evaluated;
          continue;
        }
        if (!file) {
          file = join(sequenceStateDir(), `${process.pid}-${++stateFileCounter}.state`);
          await primary.sequence.saveStateToFile(file);
        }
        await slot.sequence.loadStateFromFile(file, { acceptRisk: true });
        // The same cells, hence the same bits: as canonical as the primary's.
        slot.canonical = primary.canonical;
        this.stats.stateCopies += 1;
      }
    } finally {
      if (file) rmSync(file, { force: true });
    }
  }

  /** Empty a slot (no prefix reuse). */
  private async clearSlot(slot: Slot): Promise<void> {
    await slot.sequence.clearHistory();
    slot.canonical = 0;
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
      if (!this.prefixReuse) await this.clearSlot(slot);
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
        ...(signal ? { signal } : {}),
      });
      this.stats.completionTokens += generated.length;
      const logprob = request.logprobs ? await this.completionLogprob(slot, prompt.tokens, generated) : undefined;
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

  /**
   * Sum of the model's log-probabilities of the generated tokens (temperature 1, no truncation:
   * the model's own distribution, whatever the sampling options were). The generated tokens are
   * evaluated again in one batch with their next-token distributions.
   */
  private async completionLogprob(slot: Slot, prompt: Token[], generated: Token[]): Promise<number> {
    if (generated.length === 0) return 0;
    const sequence = slot.sequence;
    const full = [...prompt, ...generated];
    const from = prompt.length - 1; // the position whose distribution predicts generated[0]
    const common = Math.min(sequence.compareContextTokens(full).firstDifferentIndex, from);
    slot.canonical = Math.min(slot.canonical, common);
    if (common < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: common, end: sequence.nextTokenIndex }]);
    const input: ControlledEvaluateInputItem[] = full
      .slice(common, full.length - 1)
      .map((token, i) => (common + i >= from ? [token, { generateNext: { probabilities: true } }] : token));
    const out = await sequence.controlledEvaluate(input);
    let sum = 0;
    for (const [i, token] of generated.entries()) {
      const p = out[from - common + i]?.next.probabilities?.get(token) ?? 0;
      sum += Math.log(Math.max(p, Number.MIN_VALUE));
    }
    return sum;
  }
}

/**
 * Tokens per chunk of a canonical evaluation. llama.cpp's CPU kernels compute a token's row with
 * other arithmetic depending on how many rows the batch has (and where the row sits in it), so
 * the same prompt evaluated in other splits gives other bits — by hand, P moved by up to 0.02.
 * A canonical evaluation always splits a prompt at multiples of this size, counted from position
 * 0, so every token is computed in the same batch whatever was evaluated before; resuming a slot
 * is allowed only at such a boundary. Small enough that a resumed prompt re-reads little (at most
 * this many tokens minus one), large enough that chunks stay efficient matrix products.
 */
export const CANONICAL_CHUNK = 64;

/**
 * Make `slot` hold `tokens`, evaluated canonically: everything from the last chunk boundary at or
 * below the prefix the slot already holds canonically is evaluated again, in chunks that end at
 * multiples of `chunk`. With `logitsAtEnd`, the last token is always evaluated (its next-token
 * distribution is returned) — so its chunk is always re-read, as it would be in a fresh slot.
 * The resulting state and distribution are bit-identical to evaluating `tokens` in an empty slot,
 * whatever the slot evaluated before (given the same model, threads and kernels).
 */
export async function evaluateCanonically(
  slot: Slot,
  tokens: Token[],
  options: { logitsAtEnd: boolean; chunk?: number },
): Promise<{ distribution?: Map<Token, number>; evaluated: number }> {
  const chunk = options.chunk ?? CANONICAL_CHUNK;
  const sequence = slot.sequence;
  const common = Math.min(sequence.compareContextTokens(tokens).firstDifferentIndex, slot.canonical, tokens.length);
  // The slot already holds exactly these tokens, evaluated canonically, and no logits are needed.
  if (!options.logitsAtEnd && common === tokens.length && slot.canonical === tokens.length) {
    if (sequence.nextTokenIndex > tokens.length) await sequence.eraseContextTokenRanges([{ start: tokens.length, end: sequence.nextTokenIndex }]);
    return { evaluated: 0 };
  }
  const resumable = options.logitsAtEnd ? Math.min(common, tokens.length - 1) : common;
  const start = Math.floor(resumable / chunk) * chunk;
  if (start < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  slot.canonical = start;
  let distribution: Map<Token, number> | undefined;
  for (let from = start; from < tokens.length; from += chunk) {
    const to = Math.min(from + chunk, tokens.length);
    const wantLogits = options.logitsAtEnd && to === tokens.length;
    const out = await sequence.controlledEvaluate(
      tokens.slice(from, to).map((token, i): ControlledEvaluateInputItem => (wantLogits && from + i === to - 1 ? [token, { generateNext: { probabilities: true } }] : token)),
    );
    if (wantLogits) distribution = out[to - from - 1]?.next.probabilities;
    slot.canonical = to;
  }
  if (options.logitsAtEnd && !distribution) throw new LlmRequestError('the embedded model returned no next-token probabilities', { kind: 'other' });
  return { ...(distribution ? { distribution } : {}), evaluated: tokens.length - start };
}

/**
 * The model's distribution over the token after `tokens` (softmax of the logits, temperature 1,
 * no truncation), evaluating only what `sequence` does not already hold (at least the last token,
 * whose logits are needed). Used for the label tokens after a canonically evaluated prompt: they
 * are always evaluated one path at a time right after it, so their split never varies.
 */
async function nextTokenDistribution(
  sequence: LlamaContextSequence,
  tokens: Token[],
): Promise<{ distribution: Map<Token, number>; evaluated: number }> {
  const common = Math.min(sequence.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
  if (common < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: common, end: sequence.nextTokenIndex }]);
  const suffix = tokens.slice(common);
  const last = suffix.length - 1;
  // No sampling options: the greedy sampler keeps the whole vocabulary, so these are the raw
  // softmax probabilities.
  const out = await sequence.controlledEvaluate(
    suffix.map((token, i): ControlledEvaluateInputItem => (i === last ? [token, { generateNext: { probabilities: true } }] : token)),
  );
  const distribution = out[last]?.next.probabilities;
  if (!distribution) throw new LlmRequestError('the embedded model returned no next-token probabilities', { kind: 'other' });
  return { distribution, evaluated: suffix.length };
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
