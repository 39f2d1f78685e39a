import type { ExperimentConfig } from './config';
import { answerExamples, type RunComponents } from './orchestrate';
import { type ExampleResult, type MetricAggregate, type RunMetrics, readTraces, rowKey, traceKey, writeRunJson } from '../run-files';
import { existsSync } from 'node:fs';
import { openRunDir } from './run-dir';
import { acquireDirLock } from './run-lock';
import { cacheWriterOf, planWork, RunStateFile, runStateObserver } from './run-state';
import { figuresObserver, MlflowObserver, type TrackingFactory } from './run-tracking';
import type { MlflowRecord } from '../run-files';
import { decisionStatistics } from '../metrics/decisions';
import { runJudgeDiagnostics } from '../metrics/judge-quality';
import type { MethodAnalyses } from '../metrics/methods';
import { methodCatalog } from './bindings';
import type { Trace } from '../trace/types';
import { judgePriorSettings, withJudgePriors } from './judge-priors';
import { CostCap, CostLimitError } from '../llm/budget';
import { runModel } from '../llm/run-model';
import { emptyUsage, type UsageTotals } from '../llm/types';
import { addUsage, UsageMeter } from '../llm/usage';
import { summaryUsage } from '../trace/usage';
import { checkGroupBy } from '../datasets/groups';
import { groupMetrics } from '../metrics/groups';
import { emit, noteOf, warnOf, type RunEnvironment, type RunObserver } from './observers';
import { progressObserver } from './progress';
import { runFilesObserver } from './run-writer';

export { checkRunDir } from './run-dir';
export type { RunComponents } from './orchestrate';
export type { RunEnvironment, RunObserver } from './observers';
export { configParams, metricsForMlflow, type TrackingFactory } from './run-tracking';

export interface RunRequest {
  config: ExperimentConfig;
  runDir: string;
  resume?: boolean;
  components: RunComponents;
  /** null: do not track (tracking.enabled false, or tests). */
  tracking?: TrackingFactory | null;
  /** Signal, warnings, notes, progress, tags and figures (observers.ts). Default: none, words to stderr. */
  env?: RunEnvironment;
  /** Nest the MLflow run under this one (sweeps). */
  parentRunId?: string;
  /** Stop after this many errors in a row with no success in this session. Default 5. */
  maxConsecutiveErrors?: number;
  /** Observers after the run's own (a notebook's live table, tests). */
  observers?: readonly RunObserver[];
}

export interface RunOutcome {
  status: 'FINISHED' | 'KILLED' | 'FAILED';
  runDir: string;
  metrics: RunMetrics;
  results: ExampleResult[];
  mlflow: MlflowRecord | null;
  /** Examples answered in this session (not replayed from an earlier one); under trials, (question, trial) pairs. */
  answeredNow: number;
  /** Answers per question (`trials: k`); absent for a run without trials. */
  trials?: number;
  error?: string;
  /** Why the session stopped early without failing: the cost cap's message (resume with a higher cap). */
  stoppedBy?: string;
}

/**
 * Runs one experiment: every selected example through the pipeline with bounded concurrency,
 * each finished example appended (and fsynced) to `results.jsonl` and `traces.jsonl`, then
 * aggregates with confidence intervals in `metrics.json`, and everything logged to MLflow.
 *
 * Durability: a run killed at any point (SIGKILL included) is finished by running it again with
 * `resume: true`. Finished examples are skipped; the LLM cache replays every call that had
 * finished, so nothing is paid twice; the MLflow run recorded in `mlflow.json` is re-opened,
 * not duplicated. Ctrl-C (the environment's `signal`) stops cleanly: in-flight examples are
 * abandoned, what is done is written, and the MLflow run is marked KILLED.
 *
 * The folder is locked for the session (run-lock.ts); `runConfig`, which decides about the folder
 * under its lock before the session, calls `runSession` instead.
 */
export async function runExperiment(request: RunRequest): Promise<RunOutcome> {
  const lock = acquireDirLock(request.runDir, { notify: noteOf(request.env) });
  try {
    return await runSession(request);
  } finally {
    lock.release();
  }
}

/**
 * One session of a run whose folder the caller has locked. In order: the run directory
 * (`run-dir.ts`: may it be written, does a resume keep its config) and the work left
 * (`planWork`: the one read of the earlier sessions' rows); the observers are told the session
 * starts; the judge calibration; the loop (`orchestrate.ts`), which emits each finished question;
 * the metrics, from the rows in memory; the observers are told it ended.
 */
export async function runSession(request: RunRequest): Promise<RunOutcome> {
  const { config, runDir, components } = request;
  const env = request.env ?? {};
  const warn = warnOf(env);
  const resume = request.resume ?? false;
  // A groupBy field none of the questions has is refused before anything is written or called.
  checkGroupBy(config.groupBy, components.examples);

  const { paths, redacted } = openRunDir(config, runDir, resume, warn);
  // What a reproduction checks is what the run started with: written by its first session (a
  // resumed run keeps it; one started before provenance.json existed gets this session's).
  if (components.provenance && !existsSync(paths.provenance)) writeRunJson(paths.provenance, 'provenance', components.provenance);
  const plan = planWork(config, components.examples, paths.results);
  // The earlier sessions' traces, read once like their rows: the final files and the decision
  // statistics are written from memory.
  const earlierTraces = resume ? readTraces(paths.traces) : [];
  const runState = new RunStateFile(paths.state, plan.total, plan.resumedCount);
  const tracking = new MlflowObserver({
    config,
    redacted,
    runDir,
    recordPath: paths.mlflow,
    resume,
    session: runState.state.sessions,
    factory: request.tracking,
    examples: components.examples,
    parentRunId: request.parentRunId,
    tags: env.tags,
    settings: components.settings,
    warn,
  });
  // Listed once, called in this order: the files are written before run.json counts a question
  // done, and both before MLflow uploads them; the figures go to the MLflow run before it is closed.
  const observers: RunObserver[] = [
    runFilesObserver(paths),
    runStateObserver(runState),
    ...(env.progress ? [progressObserver(() => env.progress!(config.name))] : []),
    ...(env.figures ? [figuresObserver(env.figures, runDir, () => tracking.tracker, warn)] : []),
    tracking,
    ...(request.observers ?? []),
  ];

  // The session's signal: Ctrl-C (the environment's signal), the cost cap when it stops a call,
  // or the loop when it gives up after a run of errors.
  const session = new AbortController();
  const onInterrupt = () => session.abort(env.signal?.reason);
  // The run's cost cap, one for the whole session: the calibration's judgments and every
  // question's calls, generator's and judge's, count against it; it starts from what earlier
  // sessions spent (run.json) and, when a call would pass it, stops the session like Ctrl-C
  // (KILLED, resumable) with its message.
  const maxCostUsd = (config.llm as { maxCostUsd?: number }).maxCostUsd;
  const cap = maxCostUsd !== undefined ? new CostCap(maxCostUsd, runState.priorCostUsd ?? 0, runState.priorLiveCalls, (e) => session.abort(e)) : undefined;
  // The run's model, wrapped once for the session (src/llm/run-model.ts): the session's signal,
  // the cap, the session's meter, under `trials: k` the trial's sample indexes, and judge
  // routing, in that order.
  const meter = new UsageMeter();
  const llm = runModel(components.context.llm, {
    signal: session.signal,
    meter,
    ...(cap ? { cap } : {}),
    ...(components.judge ? { judge: components.judge } : {}),
    ...(plan.trials > 1 ? { trials: true } : {}),
    cacheWriter: cacheWriterOf(runDir, runState.state.startedAt),
  });
  const sessionUsage = (): UsageTotals => meter.snapshot();
  const wired: RunComponents = { ...components, context: { ...components.context, llm } };

  try {
    await emit(observers, 'onStart', {
      config,
      runDir,
      resume,
      selection: plan.selection,
      trials: plan.trials,
      resumedCount: plan.resumedCount,
      session: runState.state.sessions,
      usage: sessionUsage,
      costFree: components.price?.free === true,
    });
  } catch (error) {
    // An observer could not start (the MLflow backend refused the run): the ones that did are
    // closed (the run files' descriptors), and run.json says why the session ended.
    await emit(observers, 'onEnd', { status: 'CRASHED', error });
    throw error;
  }
  if (env.signal?.aborted) onInterrupt();
  env.signal?.addEventListener('abort', onInterrupt, { once: true });
  try {
    // judgeCalibration batch: the prior is judged (or read back, on resume) before any question.
    // Its judgments are live calls of the run like the questions' (often the judge's, at the
    // judge's price): metered into the session's spend, under the run's cap, stopped by Ctrl-C.
    let calibrated: Awaited<ReturnType<typeof withJudgePriors>> = { components: wired };
    try {
      calibrated = await withJudgePriors(wired, runDir);
    } catch (error) {
      // The cap or Ctrl-C stopped the calibration: the session's signal has fired, so no question
      // starts and the session ends as an interrupted one does (the cap's message and exit status).
      if (!(error instanceof CostLimitError) && !session.signal.aborted) throw error;
      if (!session.signal.aborted) session.abort(error);
    }
    runState.setSessionCost(sessionUsage());

    // The rows of this run, kept in memory: the earlier sessions' (read once, above) and this
    // one's, by `rowKey` (question and trial), as their traces are.
    const rows = new Map<string, ExampleResult>(plan.earlier);
    const traces = new Map<string, Trace>();
    for (const t of earlierTraces) traces.set(traceKey(t), t);
    const answered = await answerExamples({
      components: calibrated.components,
      todo: plan.todo,
      concurrency: config.concurrency,
      maxConsecutiveErrors: request.maxConsecutiveErrors ?? 5,
      session,
      groupBy: config.groupBy,
      onQuestion: async (row, trace) => {
        rows.set(rowKey(row), row);
        if (trace) traces.set(rowKey(row), trace);
        await emit(observers, 'onQuestion', row, trace, sessionUsage());
      },
    });

    const { fatal } = answered;
    const status: RunOutcome['status'] = fatal ? 'FAILED' : answered.interrupted ? 'KILLED' : 'FINISHED';
    const trialNumbers = Array.from({ length: plan.trials }, (_, t) => t);
    const results = plan.selection
      .flatMap((x) => trialNumbers.map((trial) => rows.get(rowKey({ id: x.example.id, trial }))))
      .filter((r): r is ExampleResult => r !== undefined);
    const resultTraces = results.map((r) => traces.get(rowKey(r))).filter((t): t is Trace => t !== undefined);
    const usage = sessionUsage();
    runState.setSessionCost(usage);

    // Aggregated over every row, all trials: the aggregate takes each question's mean over its
    // trials (src/metrics), and `total` counts rows, questions × trials.
    const metrics = summariseRun(results, components.aggregate, { wallSeconds: runState.stop(), total: plan.total, status, groupBy: config.groupBy });
    // The run's whole spend includes calls of attempts abandoned by an interrupt or the cap
    // (their questions' traces, written on resume, replay them at 0).
    const spent = runState.state.costUsd;
    if (spent !== undefined && spent > (metrics.usage.cost_usd ?? 0)) metrics.usage.cost_usd = round(spent, 6);
    if (components.settings && Object.keys(components.settings).length > 0) metrics.settings = components.settings;
    const retrieval = components.retrievalCache?.();
    if (retrieval) {
      metrics.usage.retrieval_cache_hits = retrieval.hits;
      metrics.usage.retrieval_cache_misses = retrieval.misses;
    }
    if (calibrated.priors) {
      metrics.settings = { ...metrics.settings, ...judgePriorSettings(calibrated.priors) };
      metrics.usage.calibration_llm_calls = calibrated.priors.usage.llmCalls;
      if (calibrated.priors.usage.promptTokens !== undefined) metrics.usage.calibration_prompt_tokens = calibrated.priors.usage.promptTokens;
    }
    addDecisions(metrics, results, resultTraces, methodCatalog());

    const files = [paths.config, paths.metrics, paths.results, paths.traces, paths.state, paths.provenance, ...(calibrated.priors ? [paths.judgePriors] : [])];
    await emit(observers, 'onEnd', {
      status,
      results,
      traces: resultTraces,
      metrics,
      usage,
      files,
      ...(fatal ? { error: fatal } : {}),
      ...(answered.stoppedBy ? { stoppedBy: answered.stoppedBy } : {}),
    });
    return {
      status,
      runDir,
      metrics,
      results,
      mlflow: tracking.record,
      answeredNow: answered.answeredNow,
      ...(plan.trials > 1 ? { trials: plan.trials } : {}),
      ...(fatal ? { error: fatal } : {}),
      ...(answered.stoppedBy ? { stoppedBy: answered.stoppedBy } : {}),
    };
  } catch (error) {
    // An unexpected failure (a scorer bug, a full disk): the run dir keeps what is done, and the
    // MLflow run must not stay RUNNING forever.
    await emit(observers, 'onEnd', { status: 'CRASHED', error });
    throw error;
  } finally {
    env.signal?.removeEventListener('abort', onInterrupt);
  }
}

/** Aggregates over a run's results plus its usage totals. */
export function summariseRun(
  results: ExampleResult[],
  aggregate: (results: ExampleResult[]) => Record<string, MetricAggregate>,
  info: { wallSeconds: number; total: number; status: RunMetrics['status']; groupBy?: readonly string[] | undefined },
): RunMetrics {
  const total = results.map((r) => summaryUsage(r.usage)).reduce(addUsage, emptyUsage());
  const usage: RunMetrics['usage'] = {
    llm_calls: total.calls,
    ...(total.promptTokens !== undefined ? { prompt_tokens: total.promptTokens } : {}),
    ...(total.completionTokens !== undefined ? { completion_tokens: total.completionTokens } : {}),
    cache_hits: total.cacheHits,
    wall_seconds: round(info.wallSeconds, 3),
  };
  // What the answers in this file cost when their calls were made (replays count 0); calls of
  // abandoned attempts are in run.json's costUsd, the run's whole spend.
  if (total.costUsd !== undefined) usage.cost_usd = round(total.costUsd, 6);
  // Metrics describe answers: a question whose pipeline failed has none, and scoring it as an
  // empty answer would mix "the method is wrong" with "the endpoint was down". Failures are
  // counted beside them (`errors`), and the closing line states both.
  const answered = results.filter((r) => r.error === undefined);
  return {
    n: results.length,
    answered: answered.length,
    metrics: answered.length > 0 ? aggregate(answered) : {},
    usage,
    total: info.total,
    errors: results.length - answered.length,
    ...(info.status ? { status: info.status } : {}),
    // The same metrics per group of questions (`groupBy`), from the groups each row recorded.
    ...(info.groupBy && info.groupBy.length > 0 && answered.length > 0 ? { groups: groupMetrics(answered, info.groupBy, aggregate) } : {}),
  };
}

/**
 * The run's decision statistics (`decision_*`) and `judge_mode`, from the latest trace of each
 * result (a resumed run's traces file may hold an earlier attempt of a question); under trials,
 * of each (question, trial).
 */
export function addDecisions(metrics: RunMetrics, results: ExampleResult[], traces: Trace[], methods: MethodAnalyses): void {
  const latest = new Map<string, Trace>();
  for (const t of traces) latest.set(traceKey(t), t);
  const answered = results.filter((r) => r.error === undefined).map((r) => latest.get(rowKey(r))).filter((t): t is Trace => t !== undefined);
  const stats = decisionStatistics(answered, methods);
  if (Object.keys(stats.metrics).length > 0) metrics.decisions = stats.metrics;
  if (stats.judgments > 0) metrics.settings = { ...metrics.settings, judge_mode: stats.judgeMode };
  addJudgeDiagnostics(metrics, results, methods);
}

/** Judge quality per graded judge (`judges`, src/metrics/judge-quality.ts) from the results' labelled judgments. */
export function addJudgeDiagnostics(metrics: RunMetrics, results: ExampleResult[], methods: MethodAnalyses): void {
  const judges = runJudgeDiagnostics(results, { judges: methods.judges });
  if (Object.keys(judges).length > 0) metrics.judges = judges;
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
