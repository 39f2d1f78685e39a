/**
 * Study-bundle benchmark (a script, not a test):
 *
 *   npx tsx bench/bundle.ts [--runs 20] [--questions 1000] [--traces compact|none|full] [--repeats 3] [--keep]
 *
 * Writes `--runs` synthetic Verify-and-Edit run folders of `--questions` questions each through
 * the run-files writers (results.jsonl, traces.jsonl, metrics.json, run.json, config.yaml), with
 * outputs and traces of the size real runs have here (an ASQA-style long answer of ~500
 * characters; a trace of ~9 KB: a 5-sample CoT call with 4 few-shot demos, a verifying-question
 * call, an edit call with passages for the questions below threshold, a retrieval of 5 hits —
 * this machine's vanilla-RAG traces are ~8 KB a question, ToC's ~110 KB), bundles them with
 * `buildBundle` (what `ambiqa bundle` runs), and prints the bundle's size on disk (total,
 * assets, largest page, downloads) and the load time of the index and of one run page in
 * headless Chromium from file://: navigation start to the load event, and to every figure drawn,
 * the median of `--repeats` fresh pages; beside them the same run as a single `ambiqa report`
 * file (plotly.js inlined). Writes `<artifacts>/bench/bundle.json`.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { stringify } from 'yaml';
import { writeFileAtomic, writeJsonlAtomic } from '../src/common/jsonl';
import { mulberry32 } from '../src/common/random';
import { artifactsDir } from '../src/config/paths';
import { aggregateResults } from '../src/experiments/bindings';
import { methodCatalog } from '../src/pipelines/registry';
import { CHROMIUM_ARGS, chromiumPath } from '../src/plots/export';
import { buildReport, writeReport } from '../src/report/build';
import { buildBundle } from '../src/report/bundle';
import { RUN_FORMAT, runFiles, scoresOf, writeRunJson, type ExampleResult, type RunMetrics } from '../src/run-files';
import type { Trace } from '../src/trace/types';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    questions: { type: 'string', default: '1000' },
    traces: { type: 'string', default: 'compact' },
    repeats: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
  },
});
const nRuns = Number(values.runs);
const nQuestions = Number(values.questions);
const repeats = Number(values.repeats);
const traceMode = values.traces as 'compact' | 'none' | 'full';
const work = mkdtempSync(join(tmpdir(), 'ambiqa-bench-bundle-'));

const WORDS = 'the of and in to a was is for on by with as at from his her that which first film album song team season world cup won released written directed played president city river state country war national league award year series character novel'.split(' ');

function text(random: () => number, chars: number): string {
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const w = WORDS[Math.floor(random() * WORDS.length)]!;
    out.push(w);
    length += w.length + 1;
  }
  return out.join(' ') + '.';
}

function questionTrace(random: () => number, id: string, question: string, output: string, threshold: number): Trace {
  const n = 5;
  const majority = text(random, 12);
  const votesForMajority = 1 + Math.floor(random() * n);
  const samples = Array.from({ length: n }, (_, i) => ({ rationale: text(random, 220), answer: i < votesForMajority ? majority : text(random, 12) }));
  const votes: Record<string, number> = {};
  for (const s of samples) votes[s.answer] = (votes[s.answer] ?? 0) + 1;
  const edited = votesForMajority < threshold;
  const params = { temperature: 0.7, topP: 1, maxTokens: 256, stop: [], n, seed: null };
  const demos = Array.from({ length: 4 }, () => [
    { role: 'user' as const, content: `Question: ${text(random, 80)}` },
    { role: 'assistant' as const, content: text(random, 320) },
  ]).flat();
  const completion = (t: string) => ({ text: t, finishReason: 'stop', promptTokens: 900, completionTokens: 70, latencySeconds: 1.2, cacheHit: false });
  const llmCalls: Trace['llmCalls'] = [
    { index: 0, purpose: 've.cot', messages: [{ role: 'system', content: text(random, 300) }, ...demos, { role: 'user', content: `Question: ${question}` }], params, completions: samples.map((s) => completion(`${s.rationale} So the answer is ${s.answer}`)), wallSeconds: 6 },
    { index: 1, purpose: 've.verifying-question', messages: [{ role: 'user', content: text(random, 600) }], params: { ...params, temperature: 0, n: 1 }, completions: [completion(text(random, 80))], wallSeconds: 1 },
  ];
  if (edited) {
    llmCalls.push({ index: 2, purpose: 've.edit', messages: [{ role: 'user', content: `Passages: ${text(random, 1500)}` }], params: { ...params, temperature: 0, n: 1 }, completions: [completion(text(random, 200))], wallSeconds: 2 });
  }
  return {
    pipeline: 'verify-edit',
    questionId: id,
    question,
    llm: { provider: 'llama-cpp', model: 'qwen2.5-1.5b-instruct-q4_k_m' },
    demoIds: ['d1', 'd2', 'd3', 'd4'],
    llmCalls,
    retrievals: [{ index: 0, purpose: 've.verify', retriever: 'bm25', query: text(random, 80), k: 5, hits: Array.from({ length: 5 }, (_, i) => ({ id: `p${Math.floor(random() * 1e7)}`, score: 20 - i })) }],
    parseFailures: [],
    decisions: { kind: 'verify-edit', samples, votes, majorityAnswer: majority, consistency: votesForMajority / n, threshold, edited, edits: [], finalAnswer: output } as never,
    summary: { llmCalls: llmCalls.length, promptTokens: 900 * (n + llmCalls.length - 1), completionTokens: 70 * (n + llmCalls.length - 1), cacheHits: 0, seconds: 9, retrievals: 1, parseFailures: 0 },
    output,
  };
}

function writeRun(dir: string, r: number): void {
  mkdirSync(dir, { recursive: true });
  const random = mulberry32(1000 + r);
  const threshold = 2 + (r % 3);
  const rows: ExampleResult[] = [];
  const traces: Trace[] = [];
  for (let q = 0; q < nQuestions; q++) {
    const id = `q${String(q).padStart(5, '0')}`;
    const question = `Who ${text(random, 50)}?`;
    const output = text(random, 500);
    const trace = questionTrace(random, id, question, output, threshold);
    traces.push(trace);
    rows.push({
      format: RUN_FORMAT,
      id,
      index: q,
      question,
      target: { answers: [text(random, 15), text(random, 15)], qaPairs: [{ question: text(random, 60), shortAnswers: [text(random, 15)] }, { question: text(random, 60), shortAnswers: [text(random, 15)] }], longAnswers: [text(random, 400)] },
      output,
      scores: scoresOf({ str_em: random() < 0.4 ? 100 : random() < 0.5 ? 50 : 0, rougeLsum: 20 + 20 * random(), d_f1: 10 + 30 * random() }),
      usage: trace.summary,
      confidence: (trace.decisions as unknown as { consistency: number }).consistency,
    });
  }
  const name = `ve-bench-${String(r).padStart(2, '0')}`;
  writeFileAtomic(join(dir, runFiles.config), stringify({ format: RUN_FORMAT, name, dataset: { name: 'asqa', split: 'dev' }, pipeline: { name: 'verify-edit', options: { threshold } } }));
  writeJsonlAtomic(join(dir, runFiles.results), rows);
  writeJsonlAtomic(join(dir, runFiles.traces), traces);
  const metrics: RunMetrics = {
    n: rows.length,
    metrics: aggregateResults(rows),
    usage: { llm_calls: rows.reduce((a, x) => a + x.usage.llmCalls, 0), prompt_tokens: 0, completion_tokens: 0, cache_hits: 0, wall_seconds: 9 * rows.length },
  };
  writeRunJson(join(dir, runFiles.metrics), 'metrics', metrics);
  const now = new Date().toISOString();
  writeRunJson(join(dir, runFiles.state), 'state', { status: 'FINISHED', wallSeconds: 9 * rows.length, sessions: 1, startedAt: now, updatedAt: now, total: rows.length, done: rows.length });
}

function bytesOf(path: string): number {
  const s = statSync(path);
  return s.isDirectory() ? readdirSync(path).reduce((a, n) => a + bytesOf(join(path, n)), 0) : s.size;
}
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

let started = performance.now();
const dirs = Array.from({ length: nRuns }, (_, r) => join(work, 'runs', `run-${r}`));
dirs.forEach((d, r) => writeRun(d, r));
const inputBytes = bytesOf(join(work, 'runs'));
console.log(`wrote ${nRuns} run folders × ${nQuestions} questions (${mb(inputBytes)}; traces ${mb(bytesOf(join(dirs[0]!, runFiles.traces)))} a run) in ${((performance.now() - started) / 1000).toFixed(1)} s`);

started = performance.now();
const out = join(work, 'bundle');
const built = await buildBundle(dirs, { out, methods: methodCatalog(), traces: traceMode });
const buildSeconds = (performance.now() - started) / 1000;
const runPage = built.manifest.entries.find((e) => e.kind === 'run')!.page;
const runDir = join(out, runPage, '..');
const sizes = {
  totalBytes: built.bytes,
  assetsBytes: bytesOf(join(out, 'assets')),
  indexBytes: bytesOf(join(out, 'index.html')),
  runPageBytes: bytesOf(join(out, runPage)),
  runCsvBytes: bytesOf(join(runDir, 'results.csv')),
  runJsonlBytes: bytesOf(join(runDir, 'results.jsonl')),
};
console.log(`bundled in ${buildSeconds.toFixed(1)} s (traces: ${traceMode}): ${mb(sizes.totalBytes)} on disk — assets ${mb(sizes.assetsBytes)} (once), index ${(sizes.indexBytes / 1e3).toFixed(0)} kB, a run page ${mb(sizes.runPageBytes)}, its results.csv ${mb(sizes.runCsvBytes)} and results.jsonl ${mb(sizes.runJsonlBytes)}`);
// The same run as a single `ambiqa report` file (plotly.js inlined), for the load-time comparison.
const single = join(work, 'single-report.html');
writeReport(buildReport(dirs[0]!, { methods: methodCatalog(), traces: traceMode }), single);
const singleBytes = bytesOf(single);
console.log(`  the first run as a single \`ambiqa report\` file: ${mb(singleBytes)}; ${nRuns} of them inline plotly.js ${nRuns} times (${mb(nRuns * sizes.assetsBytes)} of it)`);

const profile = mkdtempSync(join(tmpdir(), 'ambiqa-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
const load: Record<string, { loadMs: number; drawnMs: number }> = {};
try {
  for (const [label, page] of [['index', 'index.html'], ['run page', runPage], ['single report of that run', relative(out, single)]] as const) {
    const loads: number[] = [];
    const drawn: number[] = [];
    for (let i = 0; i < repeats; i++) {
      const p = await context.newPage();
      const t0 = performance.now();
      await p.goto(pathToFileURL(join(out, page)).href, { waitUntil: 'load', timeout: 300_000 });
      loads.push(performance.now() - t0);
      await p.waitForFunction(() => Array.from(document.querySelectorAll('.ambiqa-figure')).every((d) => d.querySelector('.main-svg') !== null), null, { timeout: 300_000 });
      drawn.push(performance.now() - t0);
      await p.close();
    }
    load[label] = { loadMs: median(loads), drawnMs: median(drawn) };
    const drawnText = page === 'index.html' ? '' : `, figures drawn ${(median(drawn) / 1000).toFixed(2)} s`;
    console.log(`${label}: load event ${(median(loads) / 1000).toFixed(2)} s${drawnText} (median of ${repeats}; load events ${loads.map((x) => (x / 1000).toFixed(2)).join(', ')} s)`);
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

const report = { runs: nRuns, questions: nQuestions, traces: traceMode, inputBytes, buildSeconds, sizes, singleReportBytes: singleBytes, load, at: new Date().toISOString() };
mkdirSync(join(artifactsDir(), 'bench'), { recursive: true });
writeFileSync(join(artifactsDir(), 'bench', 'bundle.json'), JSON.stringify(report, null, 2) + '\n');
if (values.keep) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
