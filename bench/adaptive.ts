/**
 * Adaptive compute against the papers' fixed budgets (a script, not a test):
 *
 *   npx tsx bench/adaptive.ts [--questions 50] [--pipelines cot-sc,ve,toc,diva] [--threads N]
 *   npm run bench -- adaptive --questions 50
 *
 * For each pipeline it runs the shipped config twice on the same questions, through the CLI
 * (`ambiqa run … --no-tracking`): with the option off (the paper's fixed budget) and on —
 * `adaptive: true` for CoT-SC and Verify-and-Edit (adversarial HotpotQA), `earlyExit: true` for
 * ToC and Diva (ASQA dev) — and prints, per question, LLM calls, samples and tokens, the share
 * of questions that stopped early, and the quality metrics with their 95% bootstrap intervals,
 * saying whether the adaptive run's interval overlaps the fixed one's.
 *
 * Both runs of a pipeline share one LLM cache file, fresh for each invocation, and the fixed run
 * goes first. Adaptive sampling keeps each sample's index, seed and cache key, so the samples it
 * draws are the fixed run's first ones and replay from the cache; ToC's and Diva's early exits
 * replay the same root expansion / interpretation call. What the adaptive run does differently
 * (fewer samples, a direct answer) is what it asks for, and counts and quality are read from its
 * own traces; wall seconds are therefore not comparable between the two runs and not printed.
 * Calls, samples and tokens count every request the pipeline made, replayed or not.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir } from '../src/config/paths';
import { manifestPath } from '../src/config/models';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: '50' },
    pipelines: { type: 'string', default: 'cot-sc,ve,toc,diva' },
    threads: { type: 'string' },
  },
});

interface Subject {
  config: string;
  option: 'adaptive' | 'earlyExit';
  /** Metrics compared (the first is the headline one). */
  metrics: string[];
}

const SUBJECTS: Record<string, Subject> = {
  'cot-sc': { config: 'experiments/cot-sc-hotpotqa.yaml', option: 'adaptive', metrics: ['em', 'f1'] },
  ve: { config: 'experiments/ve-hotpotqa.yaml', option: 'adaptive', metrics: ['em', 'f1'] },
  toc: { config: 'experiments/toc-asqa.yaml', option: 'earlyExit', metrics: ['str_em', 'd_f1'] },
  diva: { config: 'experiments/diva-asqa.yaml', option: 'earlyExit', metrics: ['str_em', 'd_f1'] },
};

const questions = Number(values.questions);
if (!Number.isInteger(questions) || questions < 1) fail(`--questions ${values.questions}: must be a positive integer`);
const pipelines = values.pipelines.split(',').map((s) => s.trim());
for (const p of pipelines) if (!SUBJECTS[p]) fail(`--pipelines: unknown pipeline '${p}' (known: ${Object.keys(SUBJECTS).join(', ')})`);
if (values.threads !== undefined && !(Number.isInteger(Number(values.threads)) && Number(values.threads) > 0)) {
  fail(`--threads ${values.threads}: must be a positive integer`);
}
if (!existsSync(manifestPath())) {
  console.log(`bench adaptive: skipped — no embedded model (${manifestPath()} is absent; run \`npx ambiqa setup\`)`);
  process.exit(0);
}

const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
const cacheDir = join(artifactsDir(), 'bench', `adaptive-cache-${stamp}`);
mkdirSync(cacheDir, { recursive: true });
console.log(
  `Adaptive-compute benchmark: ${questions} question(s) per pipeline, fixed budget vs adaptive, ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')} at start`,
);

interface Metric {
  mean: number;
  ciLow: number;
  ciHigh: number;
}
interface RunSummary {
  metrics: Record<string, Metric>;
  calls: number;
  samples: number;
  tokens: number;
  stoppedEarly: number;
  answered: number;
}

let failed = false;
for (const name of pipelines) {
  const subject = SUBJECTS[name]!;
  const cache = join(cacheDir, `${name}.sqlite`);
  const fixed = runOnce(name, subject, false, cache);
  const adaptive = fixed && runOnce(name, subject, true, cache);
  if (!fixed || !adaptive) {
    failed = true;
    continue;
  }
  const per = (r: RunSummary, v: number): string => (v / Math.max(1, r.answered)).toFixed(1);
  console.log(`\n  ${name} (${subject.config}, ${subject.option}), per question over ${fixed.answered} / ${adaptive.answered} answered`);
  console.log(`    run       calls  samples   tokens  stopped early  ${subject.metrics.map((m) => `${m} [95% CI]`.padEnd(22)).join('')}`);
  for (const [label, r] of [
    ['fixed', fixed],
    [subject.option, adaptive],
  ] as const) {
    const quality = subject.metrics
      .map((m) => {
        const x = r.metrics[m];
        return (x ? `${x.mean.toFixed(1)} [${x.ciLow.toFixed(1)}, ${x.ciHigh.toFixed(1)}]` : 'n/a').padEnd(22);
      })
      .join('');
    console.log(
      `    ${label.padEnd(8)} ${per(r, r.calls).padStart(6)} ${per(r, r.samples).padStart(8)} ${per(r, r.tokens).padStart(8)}  ${(
        (100 * r.stoppedEarly) /
        Math.max(1, r.answered)
      )
        .toFixed(0)
        .padStart(12)}%  ${quality}`,
    );
  }
  const saving = (a: number, b: number): string => (a > 0 ? `${((100 * (a - b)) / a).toFixed(0)}%` : 'n/a');
  console.log(
    `    fewer with ${subject.option}: calls ${saving(fixed.calls, adaptive.calls)}, samples ${saving(fixed.samples, adaptive.samples)}, tokens ${saving(
      fixed.tokens,
      adaptive.tokens,
    )}`,
  );
  for (const m of subject.metrics) {
    const a = fixed.metrics[m];
    const b = adaptive.metrics[m];
    if (a && b) console.log(`    ${m}: intervals ${a.ciLow <= b.ciHigh && b.ciLow <= a.ciHigh ? 'overlap' : 'do NOT overlap'}`);
  }
}
rmSync(cacheDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);

function runOnce(name: string, subject: Subject, on: boolean, cache: string): RunSummary | null {
  const runName = `bench-adaptive-${name}-${on ? subject.option : 'fixed'}-${stamp}`;
  const args = [
    'bin/ambiqa.mjs',
    'run',
    subject.config,
    '--name',
    runName,
    '--limit',
    String(questions),
    '--no-tracking',
    '--quiet',
    '--set',
    `pipeline.options.${subject.option}=${on}`,
    '--set',
    `llm.cache={mode: use, path: ${JSON.stringify(cache)}}`,
    ...(values.threads ? ['--set', `llm.threads=${values.threads}`] : []),
  ];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  console.log(`  ${runName}: ${((performance.now() - t0) / 1000).toFixed(0)} s, exit ${r.status}`);
  if (r.status !== 0) return null;
  const dir = join(artifactsDir(), 'runs', runName);
  const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as { metrics: Record<string, Metric> };
  const out: RunSummary = { metrics: metrics.metrics, calls: 0, samples: 0, tokens: 0, stoppedEarly: 0, answered: 0 };
  for (const line of readFileSync(join(dir, 'traces.jsonl'), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const trace = JSON.parse(line) as {
      summary: { llmCalls: number; samples?: number; promptTokens: number; completionTokens: number };
      decisions?: { adaptive?: { stoppedEarly?: boolean }; stopReason?: string; earlyExit?: boolean };
    };
    out.answered += 1;
    out.calls += trace.summary.llmCalls;
    out.samples += trace.summary.samples ?? trace.summary.llmCalls;
    out.tokens += trace.summary.promptTokens + trace.summary.completionTokens;
    const d = trace.decisions;
    if (d?.adaptive?.stoppedEarly || d?.stopReason === 'unambiguous' || d?.earlyExit) out.stoppedEarly += 1;
  }
  return out;
}

function fail(message: string): never {
  console.error(`bench adaptive: ${message}`);
  process.exit(2);
}
