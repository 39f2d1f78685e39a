/**
 * Where a decode step's time goes on this CPU (a script, not a test):
 *
 *   npx tsx bench/decode.ts [--tokens 96] [--repeats 2]
 *   npm run bench -- decode
 *
 * Batching the n samples of one request into one context (the provider's `batchSamples`) gained
 * only 1.14–1.17× on 2 cores (bench/llm.ts). This measures why, with the embedded model alone and
 * short prompts (so decoding dominates), side by side in one run:
 *   - one context with `threads` = all cores, k = 1, 2, 3, 5 sequences decoded together (a step
 *     of k sequences against a step of one);
 *   - the same k with one thread (does a single-sequence step use a second core at all?);
 *   - two one-thread contexts decoding at once, one sequence each, against one all-core context
 *     batching the same two sequences.
 * Greedy decoding of counting prompts (long, predictable continuations). It prints generated
 * tokens per second and milliseconds per decode step; ratios are within this run.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { loadAverage } from './machine';
import type { LlamaContext } from 'node-llama-cpp';
import { manifestPath, readModelManifest } from '../src/config/models';
import { loadEmbeddedEngine, unloadEmbeddedModels } from '../src/llm/providers/llama-cpp';

const { values } = parseArgs({
  options: {
    tokens: { type: 'string', default: '96' },
    repeats: { type: 'string', default: '2' },
  },
});
const maxTokens = Number(values.tokens);
const repeats = Number(values.repeats);
if (!Number.isInteger(maxTokens) || maxTokens < 8) fail(`--tokens ${values.tokens}: must be an integer ≥ 8`);
if (!Number.isInteger(repeats) || repeats < 1) fail(`--repeats ${values.repeats}: must be a positive integer`);
if (!existsSync(manifestPath())) {
  console.log(`bench decode: skipped — no embedded model (${manifestPath()} is absent; run \`npx ambiqa setup\`)`);
  process.exit(0);
}

// Prompts whose continuations are long and need no knowledge, so that every sequence decodes
// close to `maxTokens` tokens and the steps compared do the same amount of work.
const PROMPTS = [
  'Count from 1 to 300, separated by commas: 1, 2, 3,',
  'List the numbers from 500 upward, one per line:\n500\n501\n',
  'Write the even numbers from 2 to 600 separated by spaces: 2 4 6',
  'Count down from 900 by ones, separated by commas: 900, 899, 898,',
  'Count from 1000 to 1300, separated by commas: 1000, 1001,',
];

const cores = availableParallelism();
// Loaded as the provider loads it, so that the engine timed is the one pipelines use.
const { lib, model } = await loadEmbeddedEngine(readModelManifest().llm.file);
console.log(
  `Decode-step benchmark: ${model.filename ?? 'embedded model'}, ${cores} cores, up to ${maxTokens} tokens per sequence, load average ${loadAverage()} at start`,
);

interface Timing {
  tokens: number;
  seconds: number;
  /** Decode steps: the tokens of the longest sequence. */
  steps: number;
}

/** Decode one prompt per sequence, all at once, across the given contexts; then dispose them. */
async function decodeTogether(contexts: LlamaContext[], sequencesPerContext: number): Promise<Timing> {
  const completions = contexts.flatMap((context) =>
    Array.from({ length: sequencesPerContext }, () => new lib.LlamaCompletion({ contextSequence: context.getSequence() })),
  );
  const started = performance.now();
  const outputs = await Promise.all(
    completions.map((completion, i) => completion.generateCompletion(PROMPTS[i % PROMPTS.length]!, { maxTokens, temperature: 0 })),
  );
  const seconds = (performance.now() - started) / 1000;
  const lengths = outputs.map((text) => model.tokenize(text).length);
  for (const context of contexts) await context.dispose();
  return { tokens: lengths.reduce((a, b) => a + b, 0), seconds, steps: Math.max(...lengths) };
}

const contextFor = (sequences: number, threads: number): Promise<LlamaContext> =>
  model.createContext({ sequences, threads, contextSize: 512 * Math.max(2, sequences) });

function line(label: string, t: Timing, baseline?: Timing): string {
  const perSecond = t.tokens / t.seconds;
  const ratio = baseline ? `  ×${(perSecond / (baseline.tokens / baseline.seconds)).toFixed(2)} tokens/s` : '';
  return `  ${label.padEnd(46)} ${String(t.tokens).padStart(4)} tokens ${t.seconds.toFixed(2).padStart(6)} s  ${perSecond
    .toFixed(1)
    .padStart(5)} tokens/s  ${((1000 * t.seconds) / t.steps).toFixed(0).padStart(4)} ms/step${ratio}`;
}

// One throwaway decode pages the weights in before anything is timed.
await decodeTogether([await contextFor(1, cores)], 1);

for (let repeat = 1; repeat <= repeats; repeat++) {
  console.log(`\n repeat ${repeat} of ${repeats}`);
  for (const threads of [...new Set([cores, 1])]) {
    let single: Timing | undefined;
    for (const k of [1, 2, 3, 5]) {
      const t = await decodeTogether([await contextFor(k, threads)], k);
      single ??= t;
      console.log(line(`one context, ${threads} thread(s), ${k} sequence(s) batched`, t, k > 1 ? single : undefined));
    }
  }
  if (cores >= 2) {
    const batched = await decodeTogether([await contextFor(2, cores)], 2);
    console.log(line(`one context, ${cores} threads, 2 sequences batched`, batched));
    const apart = await decodeTogether([await contextFor(1, 1), await contextFor(1, 1)], 1);
    console.log(line('two 1-thread contexts at once, 1 sequence each', apart, batched));
  }
}
await unloadEmbeddedModels();

function fail(message: string): never {
  console.error(`bench decode: ${message}`);
  process.exit(2);
}
