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
 *
 * The folder, by job:
 *   engine.ts     node-llama-cpp, the process-wide model and context registry, the file's sha256
 *   cpu.ts        threads from the machine's cores and load; the CPU and its kernel features
 *   slots.ts      choosing slots by shared prefix, priming a batch's slots, state copies
 *   canonical.ts  evaluation that gives the same bits whatever a slot held; label and reply logprobs
 *   judge.ts      P(label) from next-token distributions over the labels' tokens
 *   provider.ts   `LlamaCppProvider` (doGenerate, doGenerateBatch, doJudge) and its options
 */
import { unloadModels } from './engine';
import { removeSequenceStates } from './slots';

export {
  DEFAULT_CONTEXT_SIZE,
  DEFAULT_FLASH_ATTENTION,
  DEFAULT_SEQUENCES,
  LlamaCppProvider,
  toChatHistory,
  type EmbeddedEvaluationStats,
  type LlamaCppOptions,
} from './provider';
export { busyShare, defaultThreads, describeCpu, embeddedCpu, IDLE_BUSY_SHARE, machineLooksIdle } from './cpu';
export { embeddedEngine, embeddedEngineBuild, embeddedModelFromManifest, fileSha256, loadEmbeddedEngine, loadedEmbeddedModels, type Slot } from './engine';
export { CANONICAL_CHUNK, evaluateCanonically } from './canonical';
export { labelProbabilities, labelSurfaceForms } from './judge';

/** Free every loaded model and context (tests, long-lived notebooks). */
export async function unloadEmbeddedModels(): Promise<void> {
  await unloadModels();
  removeSequenceStates();
}
