/**
 * Embedded-model compute benchmark (a script, not a test):
 *
 *   npx tsx bench/llm.ts [--questions 3] [--pipelines toc,ve,cot-sc] [--modes before,after]
 *                        [--threads N] [--toc-max-nodes N] [--toc-calibration none|content-free]
 *   npm run bench -- llm
 *
 * Runs ToC and CoT-SC on the same ASQA dev questions and Verify-and-Edit on the same adversarial
 * HotpotQA questions, each question once per mode, side by side in one process, with the LLM
 * cache off so that every call reaches the model:
 *
 * - `before`: prefix reuse off (every prompt read in full), samples one by one, one sequence;
 * - `after`: the defaults — prefix reuse on, the n samples of a request decoded as parallel
 *   sequences of one context (`batchSamples: true`);
 * - `one-by-one`: reuse on, samples one by one, each resuming the evaluated prompt
 *   (`batchSamples: false`) — what batching adds on top of reuse;
 * - `single-slot`: one context sequence, reuse on, no batching (what the provider did before
 *   the slot pool: node-llama-cpp reused the prefix of the previous call only);
 * - `flash` / `no-flash`: reuse and batching on, llama.cpp's flash-attention kernel on / off
 *   (`after` is whichever the default is);
 * - `fixed-demos`: the defaults, with the pool's first nShots demos for every question
 *   (`dataset.demoSelection: fixed`) instead of kNN demos per question, so the few-shot prefix
 *   is the same from question to question. It changes the prompts, hence the answers: compare
 *   quality with `ambiqa run` before adopting it.
 *
 * The modes alternate in order from question to question, so a change in the machine's load
 * hits both alike. Per pipeline and mode it prints seconds per question, prompt tokens asked
 * and prompt tokens actually evaluated (the rest came from an evaluated prefix), generated
 * tokens, generated tokens per second, and the before/after wall-time ratio; it writes
 * `<artifacts>/bench/llm.json`. Retrieval is BM25 and reranking off for every pipeline, so that
 * the time measured is the model's; model loading happens before the clock starts.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir } from '../src/config/paths';
import { createComposer } from '../src/experiments/compose';
import { loadExperimentConfig } from '../src/experiments/config';
import { LlmClient } from '../src/llm/client';
import { LlamaCppProvider, defaultThreads, unloadEmbeddedModels, type EmbeddedEvaluationStats } from '../src/llm/providers/llama-cpp';
import { manifestPath } from '../src/config/models';
import { FixedDemoSelector, KnnDemoSelector } from '../src/pipelines/demos';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: '3' },
    pipelines: { type: 'string', default: 'toc,ve,cot-sc' },
    modes: { type: 'string', default: 'before,after' },
    threads: { type: 'string' },
    // A smaller ToC tree to fit a slow machine's time budget (the paper's is 10); stated in the output.
    'toc-max-nodes': { type: 'string' },
    // ToC's judge calibration: with the raw 0.5B judge the tree rarely grows past the root's
    // children, so there are few calls sharing a prefix; `content-free` keeps (and expands) nodes.
    'toc-calibration': { type: 'string' },
  },
});

const MODES = {
  before: { prefixReuse: false, batchSamples: false, sequences: 1 },
  after: { prefixReuse: true, batchSamples: true },
  'one-by-one': { prefixReuse: true, batchSamples: false },
  'single-slot': { prefixReuse: true, batchSamples: false, sequences: 1 },
  flash: { prefixReuse: true, batchSamples: true, flashAttention: true },
  'no-flash': { prefixReuse: true, batchSamples: true, flashAttention: false },
  // The defaults with `dataset.demoSelection: fixed`: the pool's first demos for every question.
  'fixed-demos': { prefixReuse: true, batchSamples: true, pool: 'fixed-demos' },
} as const;
/** Modes that show every question the same demos (the others: the config's kNN demos). */
const FIXED_DEMO_MODES: ReadonlySet<string> = new Set(['fixed-demos']);
type Mode = keyof typeof MODES;

const CONFIGS: Record<string, string> = {
  toc: 'experiments/toc-asqa.yaml',
  've': 'experiments/ve-hotpotqa.yaml',
  'cot-sc': 'experiments/cot-sc-asqa.yaml',
};

const questions = Number(values.questions);
if (!Number.isInteger(questions) || questions < 1) fail(`--questions ${values.questions}: must be a positive integer`);
const pipelines = values.pipelines.split(',').map((s) => s.trim());
for (const p of pipelines) if (!CONFIGS[p]) fail(`--pipelines: unknown pipeline '${p}' (known: ${Object.keys(CONFIGS).join(', ')})`);
const modes = values.modes.split(',').map((s) => s.trim()) as Mode[];
for (const m of modes) if (!(m in MODES)) fail(`--modes: unknown mode '${m}' (known: ${Object.keys(MODES).join(', ')})`);
if (values['toc-calibration'] !== undefined && !['none', 'content-free'].includes(values['toc-calibration'])) {
  fail(`--toc-calibration ${values['toc-calibration']}: must be none or content-free`);
}
const threads = values.threads ? Number(values.threads) : defaultThreads();
if (!existsSync(manifestPath())) {
  // Nothing to measure without the model; `npm run bench` goes on with the other benchmarks.
  console.log(`bench llm: skipped — no embedded model (${manifestPath()} is absent; run \`npx ambiqa setup\`)`);
  process.exit(0);
}

interface Tally {
  questions: number;
  seconds: number;
  failures: number;
  stats: EmbeddedEvaluationStats;
  llmCalls: number;
  /** Sum of the question-level quality metric (EM for VE, STR-EM otherwise) over answered questions. */
  quality: number;
}

const machine = `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), load average at start ${loadavg()
  .map((l) => l.toFixed(1))
  .join(' / ')}, llama.cpp threads ${threads}`;
console.log(`LLM compute benchmark: ${questions} question(s) per pipeline, modes ${modes.join(' vs ')}, LLM cache off`);
console.log(`  machine: ${machine}`);

const composer = createComposer({ notify: () => undefined });
const providers = Object.fromEntries(
  modes.map((m) => [m, new LlamaCppProvider({ threads, ...MODES[m] })]),
) as Record<Mode, LlamaCppProvider>;
for (const p of Object.values(providers)) await p.load();
// Warm-up before the clock: the first evaluation pages the model's weights in from disk and
// allocates compute buffers, which would otherwise be charged to whichever mode goes first on
// question 1. An unrelated prompt, so that no mode gets a head start on a pipeline's prefix.
for (const p of Object.values(providers)) {
  await new LlmClient(p, { cache: null }).generate({ prompt: 'Count from one to five.', maxTokens: 8, n: 2, temperature: 0.7 });
  p.resetStats();
}

const report: Record<string, Record<string, Tally & { perQuestion: Record<string, number> }>> = {};
try {
  for (const name of pipelines) {
    const config = loadExperimentConfig(CONFIGS[name]!, composer.registry, {
      limit: questions,
      overrides: [
        // Same retrieval for every pipeline, cheap to build: the clock should time the model.
        ...(name === 'cot-sc' ? [] : [{ path: ['retriever'], value: { type: 'bm25' }, text: 'retriever: bm25' }]),
        { path: ['reranker'], value: undefined, text: 'reranker: none' },
        { path: ['metrics'], value: name === 've' ? ['em'] : ['str_em'], text: 'metrics without a reader' },
        { path: ['llm'], value: { provider: 'embedded', cache: { mode: 'off' } }, text: 'llm cache off' },
        ...(name === 'toc' && values['toc-max-nodes']
          ? [{ path: ['pipeline', 'options', 'maxNodes'], value: Number(values['toc-max-nodes']), text: `maxNodes=${values['toc-max-nodes']}` }]
          : []),
        ...(name === 'toc' && values['toc-calibration']
          ? [{ path: ['pipeline', 'options', 'judgeCalibration'], value: values['toc-calibration'], text: `judgeCalibration=${values['toc-calibration']}` }]
          : []),
      ],
    });
    const components = await composer.components(config);
    console.log(`  ${name}: ${CONFIGS[name]} with ${JSON.stringify(config.pipeline.options)}`);
    const examples = components.examples.slice(0, questions);
    const qualityMetric = name === 've' ? 'em' : 'str_em';
    const knn = components.context.demos;
    const fixedContext = {
      ...components.context,
      ...(knn instanceof KnnDemoSelector ? { demos: new FixedDemoSelector(knn.pool) } : {}),
    };
    report[name] = {};
    const rows = report[name]!;
    for (const m of modes) rows[m] = { questions: 0, seconds: 0, failures: 0, stats: providers[m].resetStats(), llmCalls: 0, quality: 0, perQuestion: {} };
    for (const m of modes) providers[m].resetStats();
    for (const [qi, example] of examples.entries()) {
      // Alternate which mode goes first, so that drifting load favours neither.
      const order = qi % 2 === 0 ? modes : [...modes].reverse();
      for (const m of order) {
        const provider = providers[m];
        const client = new LlmClient(provider, { cache: null, limiter: { maxConcurrency: 1, timeoutMs: 600_000 } });
        const t0 = performance.now();
        let ok = true;
        try {
          const context = FIXED_DEMO_MODES.has(m) ? fixedContext : components.context;
          const out = await components.pipeline.answer(example, { ...context, llm: client });
          rows[m]!.llmCalls += out.trace.summary.llmCalls;
          const scores = await components.score(example, out);
          rows[m]!.quality += scores[qualityMetric]?.value ?? 0;
        } catch (error) {
          ok = false;
          console.log(`  ${name} ${m} ${example.id}: failed: ${(error as Error).message}`);
        }
        const seconds = (performance.now() - t0) / 1000;
        rows[m]!.questions += 1;
        rows[m]!.seconds += seconds;
        if (!ok) rows[m]!.failures += 1;
        rows[m]!.perQuestion[example.id] = seconds;
        console.log(`  ${name.padEnd(6)} ${m.padEnd(11)} ${example.id}: ${seconds.toFixed(1)} s`);
      }
    }
    for (const m of modes) rows[m]!.stats = providers[m].resetStats();
    printTable(name, rows);
  }
} finally {
  await composer.close();
  await unloadEmbeddedModels();
}

const out = join(artifactsDir(), 'bench');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'llm.json'), JSON.stringify({ machine, questions, modes, report, at: new Date().toISOString() }, null, 2));
console.log(`  written to ${join(out, 'llm.json')}`);

function printTable(name: string, rows: Record<string, Tally & { perQuestion: Record<string, number> }>): void {
  console.log(`\n  ${name}: per question (mean over ${questions})`);
  const metric = name === 've' ? 'EM' : 'STR-EM';
  console.log(`    mode         s/question  LLM calls  prompt tok  evaluated  generated  gen tok/s  batched  copies  ${metric}`);
  for (const m of modes) {
    const r = rows[m]!;
    const q = Math.max(1, r.questions);
    const s = r.stats;
    console.log(
      `    ${m.padEnd(11)}  ${(r.seconds / q).toFixed(1).padStart(10)}  ${(r.llmCalls / q).toFixed(1).padStart(9)}  ${(s.promptTokens / q)
        .toFixed(0)
        .padStart(10)}  ${(s.promptTokensEvaluated / q).toFixed(0).padStart(9)}  ${(s.completionTokens / q).toFixed(0).padStart(9)}  ${(
        s.completionTokens / Math.max(1e-9, r.seconds)
      )
        .toFixed(1)
        .padStart(9)}  ${String(s.batchedSamples).padStart(7)}  ${String(s.stateCopies).padStart(6)}  ${(r.quality / q).toFixed(1).padStart(6)}${r.failures ? `  (${r.failures} failed)` : ''}`,
    );
  }
  const ratio = (a: string, b: string) => {
    if (!rows[a] || !rows[b] || rows[b]!.seconds <= 0) return;
    const per = Object.keys(rows[a]!.perQuestion)
      .filter((id) => rows[b]!.perQuestion[id])
      .map((id) => rows[a]!.perQuestion[id]! / rows[b]!.perQuestion[id]!)
      .sort((x, y) => x - y);
    const median = per.length ? (per[(per.length - 1) >> 1]! + per[per.length >> 1]!) / 2 : NaN;
    console.log(
      `    wall time ${a}/${b}: ${(rows[a]!.seconds / rows[b]!.seconds).toFixed(2)}× on the means; per question median ${median.toFixed(2)}×, range ${per[0]?.toFixed(2)}–${per[per.length - 1]?.toFixed(2)}×`,
    );
  };
  ratio('before', 'after');
  ratio('one-by-one', 'after');
  ratio('no-flash', 'flash');
  ratio('after', 'fixed-demos');
}

function fail(message: string): never {
  console.error(`bench llm: ${message}`);
  process.exit(2);
}
