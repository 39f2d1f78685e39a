/**
 * Trace-export overhead benchmark (a script, not a test):
 *
 *   npx tsx bench/trace-export.ts [--questions 50] [--latency-ms 800] [--repeats 2] [--concurrency 4]
 *
 * The same 50-question scripted-model run (closed-book, fresh LLM cache each time, so every call
 * pays its latency), logged to a real MLflow server with each question's trace exported to MLflow
 * Tracing (`tracking.traces: true`) and without (`false`), alternated `--repeats` times in one
 * process. Everything else is identical: params, metrics and artifacts go to MLflow in both.
 * Target: the median run with export is less than 5% slower than the median without.
 *
 * The scripted provider stands in for a hosted model with a fixed latency per call (default
 * 800 ms, as in bench/cache-replay.ts). The export happens in the background while questions are
 * answered (batches of 32 traces per OTLP request, one link-to-run call per batch, the metric
 * feedback in parallel); the run waits for it before it is marked finished, and that wait is in
 * the time measured. Also prints the absolute cost in seconds, so it can be compared with other
 * latencies. Uses MLFLOW_TRACKING_URI when set, else starts a local server on a temporary store.
 * Writes `<artifacts>/bench/trace-export.json`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir } from '../src/config/paths';
import { createComposer } from '../src/experiments/compose';
import { resolveExperimentConfig } from '../src/experiments/config';
import { runExperiment } from '../src/experiments/runner';
import { MlflowClient } from '../src/tracking/client';
import { openTracking } from '../src/tracking/index';
import { startLocalServer, type LocalServer } from '../src/tracking/server';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: '50' },
    'latency-ms': { type: 'string', default: '800' },
    repeats: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '4' },
  },
});
const questions = Number(values.questions);
const repeats = Number(values.repeats);
const work = mkdtempSync(join(tmpdir(), 'ambiqa-bench-traces-'));

let server: LocalServer | undefined;
let uri = process.env.MLFLOW_TRACKING_URI?.trim();
if (!uri) {
  const started = performance.now();
  server = await startLocalServer({ storeDir: join(work, 'mlflow') });
  uri = server.uri;
  console.log(`  started MLflow at ${uri} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
const client = new MlflowClient(uri);
const experiment = `bench-trace-export-${Date.now()}`;
const datasetPath = writeQuestions(work, questions);

function rawConfig(traces: boolean, cache: string): Record<string, unknown> {
  return {
    dataset: { name: 'asqa', path: datasetPath, limit: questions },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 48 } },
    llm: {
      provider: 'scripted',
      cycle: ['It happened in 1990, and again in 2001.', 'Several answers are possible: 1985 and 1999.', 'Most sources say 2004.'],
      latencyMs: Number(values['latency-ms']),
      cache,
    },
    tracking: { experiment, traces },
    concurrency: Number(values.concurrency),
  };
}

async function timed(name: string, traces: boolean): Promise<{ seconds: number; runId: string; experimentId: string }> {
  const composer = createComposer();
  try {
    const config = resolveExperimentConfig(rawConfig(traces, join(work, `${name}.sqlite`)), composer.registry, { source: 'bench/trace-export', name });
    const components = await composer.components(config);
    const started = performance.now();
    const outcome = await runExperiment({
      config,
      runDir: join(work, 'runs', name),
      components,
      tracking: (runDir) => openTracking({ uri: uri!, bufferDir: runDir, notify: (m) => console.log(`  ${m}`) }),
    });
    const seconds = (performance.now() - started) / 1000;
    if (outcome.status !== 'FINISHED' || !outcome.mlflow) throw new Error(`${name} ended ${outcome.status}: ${outcome.error ?? ''}`);
    return { seconds, runId: outcome.mlflow.runId, experimentId: outcome.mlflow.experimentId };
  } finally {
    await composer.close();
  }
}

console.log(`trace export: ${questions} questions, closed-book, scripted provider with ${values['latency-ms']} ms per call, concurrency ${values.concurrency}, MLflow ${(await client.serverVersion()) ?? '?'}`);
// One untimed warm-up of each kind: the server's first OTLP request imports its protobuf code
// (seconds, once per server), which no later run pays.
await timed('warmup-on', true);
await timed('warmup-off', false);
const off: number[] = [];
const on: number[] = [];
let lastOn: { runId: string; experimentId: string } | undefined;
for (let i = 0; i < repeats; i++) {
  const a = await timed(`off-${i}`, false);
  off.push(a.seconds);
  console.log(`  export off: ${a.seconds.toFixed(2)} s`);
  const b = await timed(`on-${i}`, true);
  on.push(b.seconds);
  lastOn = b;
  console.log(`  export on:  ${b.seconds.toFixed(2)} s`);
}

// The export really happened: one trace per question, linked to the run.
const { traces } = await client.searchTraces({ experimentIds: [lastOn!.experimentId], runId: lastOn!.runId });
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const overhead = median(on) / median(off) - 1;
const withFeedback = traces.filter((t) => t.assessments.length > 0).length;
const pass = overhead < 0.05 && traces.length === questions && withFeedback === questions;
console.log(`  traces on the server for the last run: ${traces.length} of ${questions}, ${withFeedback} with their metric feedback`);
console.log(`  median: off ${median(off).toFixed(2)} s, on ${median(on).toFixed(2)} s — overhead ${(100 * overhead).toFixed(1)}% (${(median(on) - median(off)).toFixed(2)} s; target < 5%) — ${pass ? 'PASS' : 'FAIL'}`);

const outDir = join(artifactsDir(), 'bench');
mkdirSync(outDir, { recursive: true });
writeFileSync(
  join(outDir, 'trace-export.json'),
  JSON.stringify({ questions, latencyMs: Number(values['latency-ms']), concurrency: Number(values.concurrency), off, on, overhead, tracesFound: traces.length, withFeedback, pass }, null, 2) + '\n',
);
if (server) await server.stop();
process.exit(pass ? 0 : 1);

function writeQuestions(dir: string, n: number): string {
  const dev: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    dev[`q${i}`] = {
      ambiguous_question: `When did event ${i} happen?`,
      qa_pairs: [{ question: `When did event ${i} first happen?`, short_answers: [String(1990 + (i % 20))], context: '', wikipage: `Event ${i}` }],
      wikipages: [],
      annotations: [{ long_answer: `Event ${i} happened in ${1990 + (i % 20)}.`, knowledge: [] }],
    };
  }
  const path = join(dir, 'asqa.json');
  writeFileSync(path, JSON.stringify({ dev }));
  return path;
}
