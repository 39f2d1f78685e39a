/**
 * Cache-replay benchmark (a script, not a test):
 *
 *   npx tsx bench/cache-replay.ts [--provider embedded|scripted] [--questions 50] [--max-tokens 48]
 *                                 [--latency-ms 800] [--pipeline closed-book]
 *
 * Runs an experiment over N ASQA questions with a fresh LLM cache (every call live), then runs
 * the same experiment again into a new run dir: every call is now a cache hit. Target: the
 * replay takes under 5% of the original wall time. Prints both times, the ratio, and the LLM
 * numbers that show the replay paid for nothing; writes `<artifacts>/bench/cache-replay.json`.
 *
 * `--provider embedded` (default when `ambiqa setup` has fetched the model) uses the real GGUF
 * model on the CPU. `--provider scripted` stands in for a hosted model: a fixed latency per
 * call (default 800 ms, a typical round trip for a short completion from an OpenAI-compatible
 * service) and canned text. Each run is timed from building its components (a fresh composer,
 * hence a fresh LLM client) to its metrics on disk; MLflow is off, since it is not what is
 * measured. Questions: ASQA dev from the shared data when present, else generated ones.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir, dataDir } from '../src/config/paths';
import { createComposer } from '../src/experiments/compose';
import { resolveExperimentConfig } from '../src/experiments/config';
import { runExperiment, type RunOutcome } from '../src/experiments/runner';
import { manifestPath } from '../src/config/models';

const { values } = parseArgs({
  options: {
    provider: { type: 'string' },
    questions: { type: 'string', default: '50' },
    'max-tokens': { type: 'string', default: '48' },
    'latency-ms': { type: 'string', default: '800' },
    pipeline: { type: 'string', default: 'closed-book' },
  },
});

const provider = values.provider ?? (existsSync(manifestPath()) ? 'embedded' : 'scripted');
const questions = Number(values.questions);
const work = mkdtempSync(join(tmpdir(), 'ambiqa-bench-replay-'));
const cachePath = join(work, 'llm-cache.sqlite');

const asqa = join(dataDir(), 'asqa', 'ASQA_dev.json');
const datasetPath = existsSync(asqa) ? asqa : writeQuestions(work, questions);

const llm =
  provider === 'embedded'
    ? { provider: 'embedded', cache: { path: cachePath } }
    : {
        provider: 'scripted',
        cycle: ['It happened in 1990, and again in 2001.', 'Several answers are possible: 1985 and 1999.', 'Most sources say 2004.'],
        latencyMs: Number(values['latency-ms']),
        cache: cachePath,
      };

const raw = {
  dataset: { name: 'asqa', path: datasetPath, limit: questions },
  pipeline: { name: values.pipeline, options: { nShots: 0, maxTokens: Number(values['max-tokens']) } },
  llm,
  tracking: { enabled: false },
  concurrency: 1,
};

async function timed(name: string): Promise<{ seconds: number; outcome: RunOutcome }> {
  const started = performance.now();
  const composer = createComposer();
  try {
    const config = resolveExperimentConfig(raw, composer.registry, { source: 'bench/cache-replay', name });
    const outcome = await runExperiment({
      config,
      runDir: join(work, 'runs', name),
      components: await composer.components(config),
      tracking: null,
    });
    if (outcome.status !== 'FINISHED') throw new Error(`${name} ended ${outcome.status}: ${outcome.error ?? ''}`);
    return { seconds: (performance.now() - started) / 1000, outcome };
  } finally {
    await composer.close();
  }
}

const providerNote =
  provider === 'embedded'
    ? 'embedded GGUF model (llama.cpp, CPU)'
    : `scripted provider with ${values['latency-ms']} ms per call (stands in for a hosted OpenAI-compatible model)`;
console.log(`cache replay: ${questions} ASQA questions, ${values.pipeline}, ${providerNote}`);
console.log(`  data ${datasetPath}\n  cache ${cachePath}`);

const original = await timed('original');
console.log(`  original: ${original.seconds.toFixed(2)} s (${original.outcome.metrics.usage.llm_calls} calls, ${original.outcome.metrics.usage.cache_hits} cache hits)`);
const replay = await timed('replay');
console.log(`  replay:   ${replay.seconds.toFixed(3)} s (${replay.outcome.metrics.usage.llm_calls} calls, ${replay.outcome.metrics.usage.cache_hits} cache hits)`);

const samples = replay.outcome.results.reduce((s, r) => s + (r.usage.samples ?? r.usage.llmCalls), 0);
const allHits = replay.outcome.metrics.usage.cache_hits === samples;
const sameOutputs = JSON.stringify(original.outcome.results.map((r) => r.output)) === JSON.stringify(replay.outcome.results.map((r) => r.output));
const ratio = replay.seconds / original.seconds;
const pass = ratio < 0.05 && allHits && sameOutputs;
console.log(`  ratio:    ${(100 * ratio).toFixed(2)}% of the original wall time (target < 5%) — ${pass ? 'PASS' : 'FAIL'}`);
console.log(`  every replayed call a cache hit: ${allHits}; identical outputs: ${sameOutputs}`);

const out = join(artifactsDir(), 'bench');
mkdirSync(out, { recursive: true });
writeFileSync(
  join(out, 'cache-replay.json'),
  JSON.stringify(
    {
      provider: providerNote,
      questions,
      pipeline: values.pipeline,
      originalSeconds: original.seconds,
      replaySeconds: replay.seconds,
      ratio,
      allHits,
      sameOutputs,
      pass,
      original: original.outcome.metrics,
      replay: replay.outcome.metrics,
      at: new Date().toISOString(),
    },
    null,
    2,
  ),
);
console.log(`  written to ${join(out, 'cache-replay.json')}`);
process.exitCode = pass ? 0 : 1;

/** ASQA-layout questions for machines without the shared data. */
function writeQuestions(dir: string, n: number): string {
  const dev: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    dev[`bench-${i}`] = {
      ambiguous_question: `When was landmark number ${i} built?`,
      qa_pairs: [{ question: `When was landmark number ${i} first built?`, short_answers: [String(1900 + i)], context: '', wikipage: `Landmark ${i}` }],
      wikipages: [],
      annotations: [{ long_answer: `Landmark number ${i} was first built in ${1900 + i}.`, knowledge: [] }],
    };
  }
  const path = join(dir, 'asqa-bench.json');
  writeFileSync(path, JSON.stringify({ dev }));
  return path;
}
