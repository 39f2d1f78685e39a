/**
 * `ambiqa score --run <run dir | sweep dir>`: re-score a finished run (or every point of a sweep)
 * in place, from its stored outputs. Nothing is answered again — no pipeline is built, no
 * generator is called; the only model calls are the D-F1 reader's, made through the LLM cache as
 * a run's are (the reader's client opens the persistent cache, reader.ts).
 *
 * What changes in the run folder, under its lock (run-lock.ts), each file replaced atomically:
 *   results.jsonl  each answered row's scores of the metrics scored are replaced, with `scoredBy`
 *                  set to the new scoring's id; the score each replaces moves to the row's
 *                  `scoreHistory` with the time it was replaced (nothing is lost);
 *   metrics.json   the aggregates recomputed from every row (`aggregateResults`, whatever trial
 *                  handling it has; `groups` by `groupMetrics`, as the run computes them), `settings` updated (`metric.reader` when the reader's metrics
 *                  were scored), and a `scoring` entry appended: {id, at, metrics, reader,
 *                  version, commit}.
 * results.jsonl is written first: a crash between the two leaves rows whose `scoredBy` names no
 * entry yet, and their replaced scores in `scoreHistory` — scoring again repairs it.
 *
 * MLflow: the run of `mlflow.json` is re-opened (its status put back afterwards), gets the
 * changed metric values (MLflow keeps the old ones in the metric's history), tags recording the
 * scoring (`ambiqa.scoring.last`, `ambiqa.scoring.<id>`), and the rewritten files. A sweep's
 * points are each re-scored so, then the sweep's summary (summary.{md,csv,json}, paired deltas)
 * is written again and its parent run updated (sweep.ts `summariseSweep`).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeJsonlAtomic } from '../common/jsonl';
import { AmbiqaError } from '../errors';
import { readResults, readRunJson, readTraces, rowKey, runFiles, runsDir, RUN_FORMAT, writeJson, type ExampleResult, type MlflowRecord, type QuestionScores, type RunMetrics } from '../run-files';
import { aggregateResults, allowedMetrics, checkMetricNames, createScorer, metricWithRequirements, readerMetrics } from './bindings';
import { runExitStatus } from './cli-support';
import { readResolvedConfig, type ExperimentConfig } from './config';
import { expandGrid, gridAxes } from './grid';
import { noteOf, warnOf, type RunEnvironment } from './observers';
import { collectProvenance } from './provenance';
import { createReader, parseReaderSpec, READER_SPEC_HELP, type ReaderHandle, type ReaderSpec } from './reader';
import { acquireDirLock, RUN_LOCK_FILE, SWEEP_LOCK_FILE, type HeldLock } from './run-lock';
import { guard, metricsForMlflow, type TrackingFactory } from './run-tracking';
import { UPLOADS_PENDING, UPLOADS_TAG, uploadManifest } from './shard-group';
import { scoreStoredRows } from './stored-scores';
import { groupMetrics } from '../metrics/groups';
import type { SummaryRow } from './summary';
import { findReferencePoint, summariseSweep, type SweepLayout } from './sweep';
import type { RunTracker } from '../tracking/types';

/** One entry of metrics.json's `scoring`. */
export type ScoringEntry = NonNullable<RunMetrics['scoring']>[number];

export interface RescoreRequest {
  /** A run directory (or a run name under artifacts/runs) or a sweep directory. */
  target: string;
  /** Metrics to score (checked against each run's dataset). Default: every metric the run has. */
  metrics?: string[];
  /** The D-F1 reader spec (reader.ts) for d_f1 / dr. Default: the run's own `reader`. */
  reader?: string;
  /** Opens MLflow for a run dir; null or absent: the folders only. */
  tracking?: TrackingFactory | null;
  /** Warnings (MLflow trouble) and notes. */
  env?: Pick<RunEnvironment, 'warn' | 'note'>;
  /** Printed lines (each run's change, the sweep's table). Default: stdout. */
  log?: (line: string) => void;
  /** What the scoring entry records as `version` and `commit`; default: this ambiqa's (provenance.ts). */
  provenance?: { version: string; commit?: string };
  /** The scoring's time (tests). */
  now?: () => Date;
}

export interface RescoredRun {
  dir: string;
  name: string;
  entry: ScoringEntry;
  /** metrics.json as written. */
  metrics: RunMetrics;
  /** metrics.json's aggregates before. */
  before: RunMetrics['metrics'];
  /** Rows scored (answered ones), and scores moved to a row's `scoreHistory`. */
  rows: number;
  replaced: number;
  /** The MLflow run updated, when the run is tracked and the update went through. */
  mlflowRunId?: string;
}

export interface RescoreOutcome {
  kind: 'run' | 'sweep';
  dir: string;
  runs: RescoredRun[];
  /** Sweep: the points with no results, left as they are. */
  skipped: string[];
  /** Sweep: the summary table as written again. */
  summary?: string;
  /** Sweep: the parent MLflow run updated. */
  parentRunId?: string;
}

/** What `--run` names: a run folder or a sweep folder, refused in one line otherwise. */
export function resolveRescoreTarget(target: string): { kind: 'run' | 'sweep'; dir: string } {
  let dir = resolve(target);
  // A bare run name, as `scoreRun` and `resume` take it.
  if (!existsSync(dir) && !/[\\/]/.test(target) && existsSync(join(runsDir(), target))) dir = join(runsDir(), target);
  const hint = 'pass a run folder written by `ambiqa run` (artifacts/runs/<name>) or a sweep folder (artifacts/sweeps/<name>); a predictions file goes with --dataset and --predictions';
  if (!existsSync(dir)) throw new AmbiqaError(`--run ${target}: no such directory`, hint);
  if (!statSync(dir).isDirectory()) throw new AmbiqaError(`--run ${dir}: not a directory`, hint);
  if (existsSync(join(dir, 'sweep.yaml'))) return { kind: 'sweep', dir };
  if (existsSync(join(dir, runFiles.config)) && existsSync(join(dir, runFiles.results))) return { kind: 'run', dir };
  const why = existsSync(join(dir, runFiles.config)) ? `has no ${runFiles.results} (no question was answered)` : `is not a run or sweep directory (no ${runFiles.config}, no sweep.yaml)`;
  throw new AmbiqaError(`--run ${dir} ${why}`, hint);
}

/** Re-score a run or a sweep in place (see the module comment). */
export async function rescoreInPlace(request: RescoreRequest): Promise<RescoreOutcome> {
  const target = resolveRescoreTarget(request.target);
  const context = new Context(request);
  try {
    return target.kind === 'run' ? await rescoreOneRun(target.dir, context) : await rescoreSweep(target.dir, context);
  } finally {
    await context.close();
  }
}

/** What one re-scoring shares across a sweep's points: time, provenance, readers, output. */
class Context {
  readonly at: string;
  readonly provenance: { version: string; commit?: string };
  readonly warn: (m: string) => void;
  readonly note: (m: string) => void;
  readonly log: (line: string) => void;
  private readonly readers = new Map<string, Promise<ReaderHandle>>();

  constructor(readonly request: RescoreRequest) {
    this.at = (request.now?.() ?? new Date()).toISOString();
    this.provenance = request.provenance ?? ambiqaProvenance();
    this.warn = warnOf(request.env);
    this.note = noteOf(request.env);
    this.log = request.log ?? ((l: string) => process.stdout.write(l + '\n'));
  }

  /** One reader per spec for the whole re-scoring (a sweep's points share it, as a sweep's runs do). */
  reader(text: string, spec: ReaderSpec): Promise<ReaderHandle> {
    let handle = this.readers.get(text);
    if (!handle) {
      handle = createReader(spec, this.request.reader !== undefined ? '--reader' : 'reader');
      this.readers.set(text, handle);
    }
    return handle;
  }

  async close(): Promise<void> {
    for (const handle of this.readers.values()) {
      try {
        await (await handle).close();
      } catch {
        /* a reader that failed to build has nothing to close */
      }
    }
    this.readers.clear();
  }
}

function ambiqaProvenance(): { version: string; commit?: string } {
  const p = collectProvenance();
  return { version: p.ambiqaVersion, ...(p.gitCommit ? { commit: `${p.gitCommit}${p.gitDirty ? '-dirty' : ''}` } : {}) };
}

/** A run checked before anything is written: what it scores, with which reader, in what state. */
interface RunPlan {
  dir: string;
  config: ExperimentConfig;
  /** metrics.json as it is: parsed, and as written (fields this version does not know are kept). */
  before: RunMetrics;
  raw: Record<string, unknown>;
  metrics: string[];
  reader?: { text: string; spec: ReaderSpec };
  status: 'FINISHED' | 'KILLED' | 'FAILED';
  /** What the caller says before scoring (a dependent metric left as it was). */
  notes: string[];
}

/** Check one run (its lock held): refused in one line when it runs, or the metrics or reader do not fit. */
function planRun(dir: string, request: RescoreRequest): RunPlan {
  const config = readResolvedConfig(join(dir, runFiles.config));
  const state = readRunJson(join(dir, runFiles.state), 'state');
  if (state?.status === 'RUNNING') {
    throw new AmbiqaError(
      `--run ${dir}: run ${config.name} is RUNNING (${runFiles.state}); its rows are still being written`,
      'score it once it has finished or was stopped; if its process is gone, finish it with `ambiqa run <config> --resume` first',
    );
  }
  const metricsPath = join(dir, runFiles.metrics);
  const before = readRunJson(metricsPath, 'metrics');
  if (!before) throw new AmbiqaError(`--run ${dir}: no ${runFiles.metrics} (no session of run ${config.name} ended)`, 'finish the run with `ambiqa run <config> --resume` first');
  const raw = JSON.parse(readFileSync(metricsPath, 'utf8')) as Record<string, unknown>;
  const dataset = config.dataset.name;
  const order = allowedMetrics(dataset);
  const readerText = request.reader ?? config.reader;
  const readerOff = readerText === undefined || readerText === 'none';
  let asked: string[];
  if (request.metrics) {
    asked = checkMetricNames(dataset, request.metrics, '--metrics');
  } else {
    // Everything the run has: its config's metrics and those earlier scorings added.
    const had = new Set([...config.metrics, ...(before.scoring ?? []).flatMap((e) => e.metrics)]);
    asked = order.filter((m) => had.has(m) && !(readerOff && readerMetrics.has(m)));
  }
  if (asked.length === 0) throw new AmbiqaError('--metrics is empty', `use some of: ${order.join(', ')}`);
  // A metric that reads a re-scored one is re-scored with it (DR reads D-F1), so that the run
  // never holds a DR computed from a D-F1 it no longer has.
  // Without a reader, such a metric that needs one (DR after ROUGE-Lsum) is left as it was, said.
  const present = new Set([...config.metrics, ...Object.keys(before.metrics)]);
  const dependents = order.filter((m) => !asked.includes(m) && present.has(m) && metricWithRequirements(m).some((r) => r !== m && asked.includes(r)));
  const kept = readerOff ? dependents.filter((m) => readerMetrics.has(m)) : [];
  const notes = kept.length > 0 ? [`${config.name}: ${kept.join(', ')} not scored again (${kept.length > 1 ? 'they read' : 'it reads'} a metric scored now, but needs a D-F1 reader; pass --reader)`] : [];
  const metrics = order.filter((m) => asked.includes(m) || (dependents.includes(m) && !kept.includes(m)));
  const needReader = metrics.filter((m) => readerMetrics.has(m));
  let reader: RunPlan['reader'];
  if (needReader.length > 0) {
    if (readerOff) {
      throw new AmbiqaError(
        `--metrics ${needReader.join(',')} ${needReader.length > 1 ? 'need' : 'needs'} a D-F1 reader, and ${request.reader !== undefined ? '--reader is none' : `run ${config.name} was run without one (reader: ${readerText ?? 'unset'})`}`,
        `pass --reader <${READER_SPEC_HELP.replace(/ \| none$/, '')}>, or leave ${needReader.join(' and ')} out of --metrics`,
      );
    }
    reader = { text: readerText, spec: parseReaderSpec(readerText, request.reader !== undefined ? '--reader' : `reader (${join(dir, runFiles.config)})`) };
  } else if (request.reader !== undefined && request.reader !== 'none') {
    // Checked all the same: a typo is not ignored silently.
    parseReaderSpec(request.reader, '--reader');
  }
  const status = state?.status ?? before.status ?? 'FINISHED';
  return { dir, config, before, raw, metrics, ...(reader ? { reader } : {}), status, notes };
}

/** A fresh id for the run's next scoring entry: `score-<n>`, n one more than the entries so far. */
function nextScoringId(before: RunMetrics): string {
  const taken = new Set((before.scoring ?? []).map((e) => e.id));
  let n = taken.size + 1;
  while (taken.has(`score-${n}`)) n++;
  return `score-${n}`;
}

/**
 * The rows with their new scores: each replaced score moves to `scoreHistory` with the time; the
 * new ones carry `scoredBy`. Failed rows (no answer) are left as they are.
 */
export function applyScores(rows: readonly ExampleResult[], fresh: ReadonlyMap<string, QuestionScores>, id: string, at: string): { rows: ExampleResult[]; replaced: number } {
  let replaced = 0;
  const out = rows.map((r) => {
    const scored = r.error === undefined ? fresh.get(rowKey(r)) : undefined;
    if (!scored) return r;
    const history = [...(r.scoreHistory ?? [])];
    const scores = { ...r.scores };
    for (const [metric, score] of Object.entries(scored)) {
      const old = r.scores[metric];
      if (old) {
        history.push({ metric, score: old, replacedAt: at });
        replaced++;
      }
      scores[metric] = { ...score, scoredBy: id };
    }
    return { ...r, scores, ...(history.length > 0 ? { scoreHistory: history } : {}) };
  });
  return { rows: out, replaced };
}

/** Score one planned run and write it (its lock held). */
async function scoreAndWrite(plan: RunPlan, context: Context): Promise<RescoredRun> {
  const { dir, config } = plan;
  plan.notes.forEach(context.note);
  const rows = readResults(join(dir, runFiles.results));
  const answered = rows.filter((r) => r.error === undefined);
  const handle = plan.reader ? await context.reader(plan.reader.text, plan.reader.spec) : undefined;
  const scorer = createScorer(config.dataset.name, plan.metrics, handle ? { reader: handle.reader } : {});
  const tracesPath = join(dir, runFiles.traces);
  const started = Date.now();
  const fresh = await scoreStoredRows({
    dir,
    config,
    rows: answered,
    metrics: plan.metrics,
    scorer,
    traces: () => (existsSync(tracesPath) ? readTraces(tracesPath) : []),
    ...(handle ? { onRow: (done: number, total: number) => void (done % 25 === 0 && context.note(`${config.name}: scored ${done}/${total} (${Math.round((Date.now() - started) / 1000)} s)`)) } : {}),
  });
  // What was written: the metrics asked for and those they read (ROUGE-Lsum and D-F1 for DR).
  const written = new Set(plan.metrics);
  for (const s of fresh.values()) for (const m of Object.keys(s)) written.add(m);
  const order = allowedMetrics(config.dataset.name);
  const metrics = [...written].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const id = nextScoringId(plan.before);
  const entry: ScoringEntry = {
    id,
    at: context.at,
    metrics,
    ...(handle && metrics.some((m) => readerMetrics.has(m)) ? { reader: handle.reader.name } : {}),
    version: context.provenance.version,
    ...(context.provenance.commit ? { commit: context.provenance.commit } : {}),
  };
  const applied = applyScores(rows, fresh, id, context.at);
  const counted = applied.rows.filter((r) => r.error === undefined);
  // The groups again, as the run computes them (metrics/groups.ts): the fields it has, and its config's.
  const groupFields = [...new Set([...Object.keys(plan.before.groups ?? {}), ...(config.groupBy ?? [])])];
  const after: RunMetrics = {
    ...plan.before,
    metrics: counted.length > 0 ? aggregateResults(counted) : {},
    ...(groupFields.length > 0 && counted.length > 0 ? { groups: groupMetrics(counted, groupFields, aggregateResults, config.dataset.name, `--run ${dir}`) } : {}),
    ...(Object.keys(scorer.settings).length > 0 || plan.before.settings ? { settings: { ...plan.before.settings, ...scorer.settings } } : {}),
    scoring: [...(plan.before.scoring ?? []), entry],
  };
  writeJsonlAtomic(join(dir, runFiles.results), applied.rows);
  writeJson(join(dir, runFiles.metrics), {
    ...plan.raw,
    format: RUN_FORMAT,
    metrics: after.metrics,
    ...(after.groups ? { groups: after.groups } : {}),
    ...(after.settings ? { settings: after.settings } : {}),
    scoring: after.scoring,
  });
  return { dir, name: config.name, entry, metrics: after, before: plan.before.metrics, rows: answered.length, replaced: applied.replaced };
}

/** The MLflow metrics a scoring changed: the scored metrics' values and CIs, and any other value that moved. */
export function changedMlflowMetrics(before: RunMetrics, after: RunMetrics, scored: readonly string[]): Record<string, number> {
  const was = metricsForMlflow(before);
  const now = metricsForMlflow(after);
  const own = new Set(scored.flatMap((m) => [m, `${m}_ci_low`, `${m}_ci_high`]));
  return Object.fromEntries(Object.entries(now).filter(([k, v]) => own.has(k) || !(k in was) || !Object.is(was[k], v)));
}

/** Tags that record a scoring on a run: the last one's id, and each scoring's entry by id. */
function scoringTags(entry: ScoringEntry): Record<string, string> {
  return { 'ambiqa.scoring.last': entry.id, [`ambiqa.scoring.${entry.id}`]: JSON.stringify(entry) };
}

/**
 * The run's MLflow run gets the scoring: changed metrics, tags, the rewritten files (every run
 * file again, with the uploads manifest, as a session's end stores them, so that `merge
 * --from-mlflow` checks the new files), and its status back. MLflow trouble is a warning.
 */
async function updateMlflow(done: RescoredRun, status: RunPlan['status'], context: Context): Promise<void> {
  const factory = context.request.tracking;
  const record = readRunJson(join(done.dir, runFiles.mlflow), 'mlflow');
  if (!record) return;
  if (!factory) {
    context.note(`${done.name}: MLflow run ${record.runId} not updated (tracking is off)`);
    return;
  }
  await guard(context.warn, `update MLflow run ${record.runId} of ${done.name}`, async () => {
    const tracker = await (await factory(done.dir)).startRun({
      experimentName: record.experimentName,
      runName: record.runName,
      resumeRunId: record.runId,
      tags: { ...scoringTags(done.entry), [UPLOADS_TAG]: UPLOADS_PENDING },
    });
    try {
      await tracker.logMetrics(changedMlflowMetrics({ ...done.metrics, metrics: done.before }, done.metrics, done.entry.metrics));
      const files = [runFiles.config, runFiles.metrics, runFiles.results, runFiles.traces, runFiles.state, runFiles.judgePriors].map((f) => join(done.dir, f)).filter((f) => existsSync(f));
      for (const f of files) await tracker.logArtifact(f);
      await tracker.setTags({ [UPLOADS_TAG]: uploadManifest(files) });
    } finally {
      await tracker.finish(status);
    }
    done.mlflowRunId = tracker.runId;
  });
}

/** `str_em 40.00 → 41.20, rougeLsum — → 35.12` for the scored metrics. */
function describeChange(done: RescoredRun): string {
  const fmt = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '—' : x.toFixed(2));
  return done.entry.metrics.map((m) => `${m} ${fmt(done.before[m]?.mean)} → ${fmt(done.metrics.metrics[m]?.mean)}`).join(', ');
}

function logRun(done: RescoredRun, context: Context, label = done.name): void {
  context.log(`${label}: ${done.entry.id} scored ${done.rows} row(s), ${done.replaced} earlier score(s) kept in scoreHistory; ${describeChange(done)}${done.mlflowRunId ? `; MLflow run ${done.mlflowRunId} updated` : ''}`);
}

function lockRun(dir: string, context: Context): HeldLock {
  return acquireDirLock(dir, { file: RUN_LOCK_FILE, what: 'run directory', notify: context.note });
}

async function rescoreOneRun(dir: string, context: Context): Promise<RescoreOutcome> {
  const lock = lockRun(dir, context);
  try {
    const plan = planRun(dir, context.request);
    const done = await scoreAndWrite(plan, context);
    await updateMlflow(done, plan.status, context);
    logRun(done, context);
    return { kind: 'run', dir, runs: [done], skipped: [] };
  } finally {
    lock.release();
  }
}

/**
 * Every point of a sweep with results, each as a run; then the sweep's summary and parent run.
 * Every point is checked (and locked) before any is written: a RUNNING point, or a metric one
 * point's dataset lacks, refuses the whole sweep.
 */
async function rescoreSweep(dir: string, context: Context): Promise<RescoreOutcome> {
  const sweepLock = acquireDirLock(dir, { file: SWEEP_LOCK_FILE, what: 'sweep directory', notify: context.note });
  const locks: HeldLock[] = [];
  try {
    const sweepFile = join(dir, 'sweep.yaml');
    const base = readResolvedConfig(sweepFile);
    if (!base.sweep) throw new AmbiqaError(`--run ${dir}: ${sweepFile} has no sweep: section`, 'pass a folder written by `ambiqa sweep`');
    const { reference, ...grid } = base.sweep;
    const axes = gridAxes(grid as Record<string, unknown[]>);
    const points = expandGrid(axes);
    const layout: SweepLayout = {
      name: base.name,
      dir,
      axes,
      referenceIndex: findReferencePoint(axes, points, reference, sweepFile),
      points: points.map((point) => {
        const runDir = join(dir, 'runs', point.label);
        const name = existsSync(join(runDir, runFiles.config)) ? readResolvedConfig(join(runDir, runFiles.config)).name : `${base.name}.${point.label}`;
        return { point, config: { name }, runDir };
      }),
    };
    const withResults = layout.points.filter((p) => existsSync(join(p.runDir, runFiles.results)) && existsSync(join(p.runDir, runFiles.config)));
    const skipped = layout.points.filter((p) => !withResults.includes(p)).map((p) => p.point.label);
    if (withResults.length === 0) throw new AmbiqaError(`--run ${dir}: no point of sweep ${base.name} has results`, 'run the sweep first (`ambiqa sweep <config> --resume`)');
    for (const p of withResults) locks.push(lockRun(p.runDir, context));
    const plans = withResults.map((p) => planRun(p.runDir, context.request));

    const runs: RescoredRun[] = [];
    for (const [i, plan] of plans.entries()) {
      const done = await scoreAndWrite(plan, context);
      await updateMlflow(done, plan.status, context);
      logRun(done, context, withResults[i]!.point.label);
      runs.push(done);
    }
    for (const label of skipped) context.note(`sweep ${base.name}: point ${label} has no results; left as it is`);

    // The summary again, from every point's metrics.json as it is now.
    const rows: SummaryRow[] = layout.points.map(({ point, runDir }) => {
      const state = readRunJson(join(runDir, runFiles.state), 'state');
      const metrics = readRunJson(join(runDir, runFiles.metrics), 'metrics');
      const status = state?.status ?? (metrics ? (metrics.status ?? 'FINISHED') : 'NOT RUN');
      return { point, runDir, status, metrics, exitStatus: runExitStatus({ status: status === 'NOT RUN' ? 'KILLED' : status, metrics }) };
    });
    const sweepStatus = rows.some((r) => r.status === 'KILLED' || r.status === 'NOT RUN') ? 'KILLED' : rows.some((r) => r.status === 'FAILED') ? 'FAILED' : 'FINISHED';
    const outcome: RescoreOutcome = { kind: 'sweep', dir, runs, skipped };
    const record = readRunJson(join(dir, runFiles.mlflow), 'mlflow');
    const factory = context.request.tracking;
    if (!record || !factory) {
      if (record) context.note(`sweep ${base.name}: parent MLflow run ${record.runId} not updated (tracking is off)`);
      outcome.summary = await summariseSweep(layout, rows, null, { warn: context.warn, log: context.log, status: sweepStatus });
      return outcome;
    }
    outcome.summary = await updateSweepParent(layout, rows, record, factory, sweepStatus, runs, context, (id) => (outcome.parentRunId = id));
    return outcome;
  } finally {
    for (const lock of locks.reverse()) lock.release();
    sweepLock.release();
  }
}

/** The sweep's parent run re-opened: the summary written into it again, the scoring tagged, its status put back. */
async function updateSweepParent(
  layout: SweepLayout,
  rows: SummaryRow[],
  record: MlflowRecord,
  factory: TrackingFactory,
  status: 'FINISHED' | 'KILLED' | 'FAILED',
  runs: readonly RescoredRun[],
  context: Context,
  updated: (runId: string) => void,
): Promise<string> {
  const scoring = {
    at: context.at,
    metrics: [...new Set(runs.flatMap((r) => r.entry.metrics))],
    ...(runs.find((r) => r.entry.reader) ? { reader: runs.find((r) => r.entry.reader)!.entry.reader } : {}),
    version: context.provenance.version,
    ...(context.provenance.commit ? { commit: context.provenance.commit } : {}),
    runs: Object.fromEntries(runs.map((r) => [r.name, r.entry.id])),
  };
  const key = `ambiqa.scoring.${context.at.replace(/[-:.]/g, '')}`;
  const opened: { tracker?: RunTracker } = {};
  await guard(context.warn, `re-open the sweep's MLflow run ${record.runId}`, async () => {
    opened.tracker = await (await factory(layout.dir)).startRun({
      experimentName: record.experimentName,
      runName: record.runName,
      resumeRunId: record.runId,
      tags: { 'ambiqa.scoring.last': JSON.stringify(scoring), [key]: JSON.stringify(scoring) },
    });
  });
  const tracker = opened.tracker ?? null;
  try {
    return await summariseSweep(layout, rows, tracker, { warn: context.warn, log: context.log, status });
  } finally {
    if (tracker) {
      await guard(context.warn, 'finish the sweep run', () => tracker.finish(status));
      updated(tracker.runId);
    }
  }
}
