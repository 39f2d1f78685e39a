/**
 * Adaptive compute against the papers' fixed budgets (a script, not a test):
 *
 *   npx tsx bench/adaptive.ts [--questions 50] [--pipelines cot-sc,ve,toc,diva] [--threads N]
 *                             [--asqa-questions ambiguous|mixed] [--timing]
 *                             [--toc-calibration none|content-free]
 *   npm run bench -- adaptive --questions 50
 *
 * For each pipeline it runs the shipped config twice on the same questions, through the CLI
 * (`ambiqa run … --no-tracking`): with the option off (the paper's fixed budget) and on —
 * `adaptive: true` for CoT-SC and Verify-and-Edit (adversarial HotpotQA; `ve-fever`: Verify-and-Edit
 * on the paper's FEVER claims, not in the default list), `earlyExit: true` for
 * ToC and Diva (ASQA dev) — and prints, per question, LLM calls, samples and tokens, the share
 * of questions that stopped early, and the quality metrics with their 95% bootstrap intervals,
 * saying whether the adaptive run's interval overlaps the fixed one's.
 *
 * Both runs of a pipeline share one LLM cache file, fresh for each invocation, and the fixed run
 * goes first. Adaptive sampling keeps each sample's index, seed and cache key, so the samples it
 * draws are the fixed run's first ones and replay from the cache; ToC's and Diva's early exits
 * replay the same root expansion / interpretation call. What the adaptive run does differently
 * (fewer samples, a direct answer) is what it asks for, and counts and quality are read from its
 * own traces; wall seconds are therefore not comparable between the two runs and not printed
 * (but see `--timing`).
 * Calls, samples and tokens count every request the pipeline made, replayed or not.
 *
 * `--timing` answers the other question — does the option save time on this machine? — by giving
 * both runs the LLM cache off, so that every call is computed and seconds per question (the
 * traces' wall seconds, model loading excluded) compare side by side. Sampled texts can then
 * differ slightly between the runs (a batch of 3 sequences is not bit-identical to a batch of 5),
 * so quality is compared by intervals as always, not question by question.
 *
 * `--toc-calibration content-free` sets ToC's `judgeCalibration` (as in `bench llm`): with the 0.5B
 * model's raw P(true) (0.23–0.33 on every node) the 0.5 rule prunes every child, the tree never
 * grows past the root, and an early exit has nothing to skip but one judgment; calibrated, kept
 * nodes are expanded, so the exit is measured against a tree that does grow.
 *
 * `--asqa-questions mixed` runs ToC and Diva on ASQA's ambiguous questions interleaved with
 * disambiguated ones (dataset option `questions: mixed`): every ASQA question is ambiguous, so on
 * the published set an early exit can only be a missed reading; with unambiguous DQs mixed in,
 * the exit is also a detector, and the benchmark prints calls, exits and quality per kind of
 * question (exits on DQs are savings, exits on AQs are misses), and the most a detector that never
 * erred could save on the same mix (`exit-bound.ts`): a saving above that bound is paid for with
 * exits on ambiguous questions.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { exitBound } from './exit-bound';
import { pairById, pairedSaving } from './paired-saving';
import { loadAverage } from './machine';
import { artifactsDir, dataDir } from '../src/config/paths';
import { manifestPath } from '../src/config/models';
import { asqaQuestionKinds, defaultDatasetFiles, loadDataset } from '../src/datasets/index';
import { bootstrapMean } from '../src/metrics/bootstrap';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: '50' },
    pipelines: { type: 'string', default: 'cot-sc,ve,toc,diva' },
    threads: { type: 'string' },
    'asqa-questions': { type: 'string', default: 'ambiguous' },
    timing: { type: 'boolean', default: false },
    'toc-calibration': { type: 'string' },
  },
});

interface Subject {
  config: string;
  option: 'adaptive' | 'earlyExit';
  /** Whether the config's dataset is ASQA (so `--asqa-questions` applies). */
  asqa: boolean;
  /** Metrics compared (the first is the headline one). */
  metrics: string[];
}

const SUBJECTS: Record<string, Subject> = {
  'cot-sc': { config: 'experiments/cot-sc-hotpotqa.yaml', option: 'adaptive', asqa: false, metrics: ['em', 'f1'] },
  ve: { config: 'experiments/ve-hotpotqa.yaml', option: 'adaptive', asqa: false, metrics: ['em', 'f1'] },
  // The paper's other dataset: three labels, so samples can agree where open answers do not.
  've-fever': { config: 'experiments/ve-fever.yaml', option: 'adaptive', asqa: false, metrics: ['accuracy'] },
  toc: { config: 'experiments/toc-asqa.yaml', option: 'earlyExit', asqa: true, metrics: ['str_em', 'd_f1'] },
  diva: { config: 'experiments/diva-asqa.yaml', option: 'earlyExit', asqa: true, metrics: ['str_em', 'd_f1'] },
};

const questions = Number(values.questions);
if (!Number.isInteger(questions) || questions < 1) fail(`--questions ${values.questions}: must be a positive integer`);
const pipelines = values.pipelines.split(',').map((s) => s.trim());
for (const p of pipelines) if (!SUBJECTS[p]) fail(`--pipelines: unknown pipeline '${p}' (known: ${Object.keys(SUBJECTS).join(', ')})`);
if (values.threads !== undefined && !(Number.isInteger(Number(values.threads)) && Number(values.threads) > 0)) {
  fail(`--threads ${values.threads}: must be a positive integer`);
}
const asqaQuestions = values['asqa-questions'];
if (asqaQuestions !== 'ambiguous' && asqaQuestions !== 'mixed') {
  fail(`--asqa-questions ${asqaQuestions}: must be ambiguous or mixed (of the dataset's ${asqaQuestionKinds.join(', ')})`);
}
const tocCalibration = values['toc-calibration'];
if (tocCalibration !== undefined && tocCalibration !== 'none' && tocCalibration !== 'content-free') {
  fail(`--toc-calibration ${tocCalibration}: must be none or content-free`);
}
if (tocCalibration !== undefined && !pipelines.includes('toc')) {
  fail(`--toc-calibration applies to ToC only, and --pipelines ${values.pipelines} does not include toc`);
}
if (!existsSync(manifestPath())) {
  console.log(`bench adaptive: skipped — no embedded model (${manifestPath()} is absent; run \`npx ambiqa setup\`)`);
  process.exit(0);
}

const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
const cacheDir = join(artifactsDir(), 'bench', `adaptive-cache-${stamp}`);
mkdirSync(cacheDir, { recursive: true });
console.log(
  `Adaptive-compute benchmark: ${questions} question(s) per pipeline, fixed budget vs adaptive, ${availableParallelism()} cores, load average ${loadAverage()} at start` +
    (values.timing ? ', LLM cache off (--timing): seconds compare' : ', one shared LLM cache: calls compare, seconds do not') +
    (tocCalibration !== undefined ? `, ToC judgeCalibration ${tocCalibration}` : ''),
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
  /** Wall seconds summed over the answered questions (the traces' own, model loading excluded). */
  seconds: number;
  stoppedEarly: number;
  answered: number;
  perQuestion: QuestionRow[];
}
/** One answered question of a run: what it cost, whether it stopped early, its scores. */
interface QuestionRow {
  id: string;
  calls: number;
  samples: number;
  tokens: number;
  stoppedEarly: boolean;
  metrics: Record<string, number>;
}

let failed = false;
for (const name of pipelines) {
  const subject = SUBJECTS[name]!;
  const cache = values.timing ? null : join(cacheDir, `${name}.sqlite`);
  const fixed = runOnce(name, subject, false, cache);
  const adaptive = fixed && runOnce(name, subject, true, cache);
  if (!fixed || !adaptive) {
    failed = true;
    continue;
  }
  const per = (r: RunSummary, v: number): string => (v / Math.max(1, r.answered)).toFixed(1);
  console.log(`\n  ${name} (${subject.config}, ${subject.option}), per question over ${fixed.answered} / ${adaptive.answered} answered`);
  const timed = values.timing;
  console.log(`    run       calls  samples   tokens ${timed ? '   s/q ' : ''} stopped early  ${subject.metrics.map((m) => `${m} [95% CI]`.padEnd(22)).join('')}`);
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
      `    ${label.padEnd(8)} ${per(r, r.calls).padStart(6)} ${per(r, r.samples).padStart(8)} ${per(r, r.tokens).padStart(8)} ${
        timed ? per(r, r.seconds).padStart(6) + ' ' : ''
      } ${(
        (100 * r.stoppedEarly) /
        Math.max(1, r.answered)
      )
        .toFixed(0)
        .padStart(12)}%  ${quality}`,
    );
  }
  // The intervals resample the questions both runs answered (paired bootstrap, bench/paired-saving.ts).
  const { rows: pairs, unpaired } = pairById(fixed.perQuestion, adaptive.perQuestion, (q) => q);
  const savedWithInterval = (cost: (q: QuestionRow) => number): string => {
    const s = pairedSaving(pairs.map((p) => ({ fixed: cost(p.fixed), adaptive: cost(p.adaptive) })));
    return `${percent(s.saving)} [95% CI ${percent(s.low)}, ${percent(s.high)}]`;
  };
  console.log(
    `    fewer with ${subject.option}: calls ${savedWithInterval((q) => q.calls)}, samples ${savedWithInterval((q) => q.samples)}, tokens ${savedWithInterval(
      (q) => q.tokens,
    )}${timed ? `, seconds ${saving(fixed.seconds, adaptive.seconds)} (fixed / ${subject.option}: ${(fixed.seconds / Math.max(1e-9, adaptive.seconds)).toFixed(2)}×)` : ''}`,
  );
  if (unpaired > 0) console.log(`    (${unpaired} question(s) answered by one run only are left out of the intervals)`);
  for (const m of subject.metrics) {
    const a = fixed.metrics[m];
    const b = adaptive.metrics[m];
    if (a && b) console.log(`    ${m}: intervals ${a.ciLow <= b.ciHigh && b.ciLow <= a.ciHigh ? 'overlap' : 'do NOT overlap'}`);
  }
  if (subject.asqa && asqaQuestions === 'mixed') printByKind(subject, fixed, adaptive);
}
rmSync(cacheDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);

function runOnce(name: string, subject: Subject, on: boolean, cache: string | null): RunSummary | null {
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
    cache === null ? 'llm.cache.mode=off' : `llm.cache={mode: use, path: ${JSON.stringify(cache)}}`,
    ...(values.threads ? ['--set', `llm.threads=${values.threads}`] : []),
    ...(subject.asqa && asqaQuestions !== 'ambiguous' ? ['--set', `dataset.questions=${asqaQuestions}`] : []),
    ...(name === 'toc' && tocCalibration !== undefined ? ['--set', `pipeline.options.judgeCalibration=${tocCalibration}`] : []),
  ];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  console.log(`  ${runName}: ${((performance.now() - t0) / 1000).toFixed(0)} s, exit ${r.status}`);
  if (r.status !== 0) return null;
  const dir = join(artifactsDir(), 'runs', runName);
  const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as { metrics: Record<string, Metric> };
  const out: RunSummary = { metrics: metrics.metrics, calls: 0, samples: 0, tokens: 0, seconds: 0, stoppedEarly: 0, answered: 0, perQuestion: [] };
  const scores = new Map<string, Record<string, number>>();
  for (const line of readFileSync(join(dir, 'results.jsonl'), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const result = JSON.parse(line) as { id: string; metrics: Record<string, number>; error?: string };
    if (result.error === undefined) scores.set(result.id, result.metrics);
  }
  for (const line of readFileSync(join(dir, 'traces.jsonl'), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const trace = JSON.parse(line) as {
      questionId: string;
      summary: { llmCalls: number; samples?: number; promptTokens: number; completionTokens: number; seconds: number };
      decisions?: { adaptive?: { stoppedEarly?: boolean }; stopReason?: string; earlyExit?: boolean };
    };
    out.answered += 1;
    out.calls += trace.summary.llmCalls;
    out.samples += trace.summary.samples ?? trace.summary.llmCalls;
    out.tokens += trace.summary.promptTokens + trace.summary.completionTokens;
    out.seconds += trace.summary.seconds;
    const d = trace.decisions;
    const stoppedEarly = Boolean(d?.adaptive?.stoppedEarly || d?.stopReason === 'unambiguous' || d?.earlyExit);
    if (stoppedEarly) out.stoppedEarly += 1;
    out.perQuestion.push({
      id: trace.questionId,
      calls: trace.summary.llmCalls,
      samples: trace.summary.samples ?? trace.summary.llmCalls,
      tokens: trace.summary.promptTokens + trace.summary.completionTokens,
      stoppedEarly,
      metrics: scores.get(trace.questionId) ?? {},
    });
  }
  return out;
}

/**
 * The mixed set split by kind of question: ambiguous (ASQA's own) and disambiguated (a DQ loaded
 * as a question, `sourceId` set). Quality per kind with its own bootstrap interval; the exit rate
 * per kind is the detector's behaviour (on DQs the exit is right, on AQs it misses readings).
 */
function printByKind(subject: Subject, fixed: RunSummary, adaptive: RunSummary): void {
  const examples = loadDataset('asqa', join(dataDir(), defaultDatasetFiles.asqa), { questions: 'mixed' });
  const isDq = new Map(examples.map((e) => [e.id, e.sourceId !== undefined]));
  console.log(`    by kind of question (${subject.option} run against the fixed one):`);
  for (const [kind, wantDq] of [
    ['ambiguous (AQ)', false],
    ['disambiguated (DQ)', true],
  ] as const) {
    const pick = (r: RunSummary) => r.perQuestion.filter((q) => (isDq.get(q.id) ?? false) === wantDq);
    const f = pick(fixed);
    const a = pick(adaptive);
    if (f.length === 0) continue;
    const quality = subject.metrics
      .map((m) => {
        const show = (rows: QuestionRow[]) => {
          const values = rows.map((q) => q.metrics[m]).filter((x): x is number => typeof x === 'number');
          if (values.length === 0) return 'n/a';
          const agg = bootstrapMean(values);
          return `${agg.mean.toFixed(1)} [${agg.ciLow.toFixed(1)}, ${agg.ciHigh.toFixed(1)}]`;
        };
        return `${m} ${show(f)} → ${show(a)}`;
      })
      .join('; ');
    const exits = a.filter((q) => q.stoppedEarly).length;
    console.log(
      `      ${kind.padEnd(19)} n=${String(f.length).padStart(3)}  calls ${mean(f, (q) => q.calls).toFixed(2)} → ${mean(a, (q) => q.calls).toFixed(2)}` +
        `  tokens ${mean(f, (q) => q.tokens).toFixed(0)} → ${mean(a, (q) => q.tokens).toFixed(0)}  exits ${exits}/${a.length}  ${quality}`,
    );
  }
  // The ceiling a perfect detector would reach on this mix, from the measured cost of an exit.
  const exited = adaptive.perQuestion.filter((q) => q.stoppedEarly);
  if (exited.length === 0) {
    console.log(`    no exits, so no measured exit cost: the bound for a perfect detector is not computed`);
    return;
  }
  const exitCost = mean(exited, (q) => q.calls);
  const bound = exitBound(fixed.perQuestion, (id) => isDq.get(id) ?? false, exitCost);
  console.log(
    `    at ${exitCost.toFixed(1)} calls per exit, a detector that never erred (exits on every DQ, on no AQ) would save ${percent(bound.perfectDetector)} of the fixed run's calls;` +
      ` exiting on every question ${percent(bound.exitEverywhere)}; this run saved ${saving(fixed.calls, adaptive.calls)}`,
  );
}

/** The share `after` saves against `before`, as a whole percentage ('n/a' when `before` is 0). */
function saving(before: number, after: number): string {
  return before > 0 ? percent((before - after) / before) : 'n/a';
}

/** A share (0–1) as a whole percentage; 'n/a' for NaN. */
function percent(share: number): string {
  return Number.isNaN(share) ? 'n/a' : `${(100 * share).toFixed(0)}%`;
}

function mean(rows: QuestionRow[], value: (q: QuestionRow) => number): number {
  return rows.reduce((s, q) => s + value(q), 0) / Math.max(1, rows.length);
}

function fail(message: string): never {
  console.error(`bench adaptive: ${message}`);
  process.exit(2);
}
