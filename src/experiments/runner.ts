import type { ExperimentConfig } from './config';
import { answerExamples, collectResults, type RunComponents } from './orchestrate';
import { silentProgress, type ProgressSink } from './progress';
import { type ExampleResult, type MetricAggregate, type RunMetrics, readTraces, scoreValues } from '../run-files';
import { openRunDir } from './run-dir';
import { acquireDirLock } from './run-lock';
import { planWork, RunStateFile } from './run-state';
import { RunTrackingSession, type FigureLogger, type TrackingFactory } from './run-tracking';
import { writeRunJson, type MlflowRecord } from '../run-files';
import { decisionStatistics } from '../metrics/decisions';
import { runJudgeDiagnostics } from '../metrics/judge-quality';
import type { MethodAnalyses } from '../metrics/methods';
import { methodCatalog } from './bindings';
import type { Trace } from '../trace/types';
import { judgePriorSettings, withJudgePriors } from './judge-priors';
import { CostCap, CostLimitError } from '../llm/budget';
import { runModel } from '../llm/run-model';
import { emptyUsage } from '../llm/types';
import { addUsage, UsageMeter } from '../llm/usage';
import { summaryUsage } from '../trace/usage';

export { checkRunDir } from './run-dir';
export type { RunComponents } from './orchestrate';
export { configParams, metricsForMlflow, type TrackingFactory } from './run-tracking';

export interface RunRequest {
  config: ExperimentConfig;
  runDir: string;
  resume?: boolean;
  components: RunComponents;
  /** null: do not track (tracking.enabled false, or tests). */
  tracking?: TrackingFactory | null;
  /** Draw and log the run's figures to MLflow when it finishes (the CLI passes report's logRunFigures). */
  figures?: FigureLogger;
  /** Nest the MLflow run under this one (sweeps, merges). */
  parentRunId?: string;
  /** Tags added to the MLflow run (provenance, sweep point). */
  tags?: Record<string, string>;
  progress?: ProgressSink;
  signal?: AbortSignal;
  /** Stop after this many errors in a row with no success in this session. Default 5. */
  maxConsecutiveErrors?: number;
  /** Warnings (MLflow trouble, repaired files) go here. Default: stderr. */
  warn?: (message: string) => void;
}

export interface RunOutcome {
  status: 'FINISHED' | 'KILLED' | 'FAILED';
  runDir: string;
  metrics: RunMetrics;
  results: ExampleResult[];
  mlflow: MlflowRecord | null;
  /** Examples answered in this session (not replayed from an earlier one). */
  answeredNow: number;
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
 * not duplicated. Ctrl-C (the `signal`) stops cleanly: in-flight examples are abandoned, what
 * is done is written, and the MLflow run is marked KILLED.
 *
 * One session of a run, in three parts: the run directory (`run-dir.ts`: may it be written,
 * does a resume keep its config), the tracking lifecycle (`run-tracking.ts`: MLflow run
 * start, final metrics, uploads, status) and the orchestration (`orchestrate.ts`: the worker
 * pool, progress, evaluation order), with the resume state in `run-state.ts`.
 */
export async function runExperiment(request: RunRequest): Promise<RunOutcome> {
  const warn = request.warn ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
  // One writer per run folder, for the whole session (run-lock.ts); re-entrant when the caller
  // (`ambiqa run`, a sweep) already holds it.
  const lock = acquireDirLock(request.runDir, { notify: warn });
  try {
    return await runSession(request, warn);
  } finally {
    lock.release();
  }
}

async function runSession(request: RunRequest, warn: (message: string) => void): Promise<RunOutcome> {
  const { config, runDir, components } = request;
  const progress = request.progress ?? silentProgress;
  const resume = request.resume ?? false;

  const { paths, redacted } = openRunDir(config, runDir, resume, warn);
  const plan = planWork(config, components.examples, paths.results);
  const runState = new RunStateFile(paths.state, plan.selection.length, plan.resumedCount);
  const maxCostUsd = (config.llm as { maxCostUsd?: number }).maxCostUsd;
  const tracking = await RunTrackingSession.start({
    config,
    redacted,
    runDir,
    recordPath: paths.mlflow,
    resume,
    session: runState.state.sessions,
    factory: request.tracking,
    examples: components.examples,
    ...(request.figures ? { figures: request.figures } : {}),
    ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
    ...(request.tags ? { tags: request.tags } : {}),
    ...(components.settings ? { settings: components.settings } : {}),
    warn,
  });

  // The session's signal: Ctrl-C (the caller's signal), or the cost cap when it stops a call.
  const session = new AbortController();
  const onInterrupt = () => session.abort(request.signal?.reason);
  if (request.signal?.aborted) onInterrupt();
  request.signal?.addEventListener('abort', onInterrupt, { once: true });
  try {
    // The run's cost cap, one for the whole session: the calibration's judgments and every
    // question's calls, generator's and judge's, count against it; it starts from what earlier
    // sessions spent (run.json) and, when a call would pass it, stops the session like Ctrl-C
    // (KILLED, resumable) with its message.
    const cap = maxCostUsd !== undefined ? new CostCap(maxCostUsd, runState.priorCostUsd ?? 0, runState.priorLiveCalls, (e) => session.abort(e)) : undefined;
    // The run's model, wrapped once for the session (src/llm/run-model.ts): the session's signal,
    // the cap, the session's meter and judge routing, in that order.
    const meter = new UsageMeter();
    const llm = runModel(components.context.llm, { signal: session.signal, meter, ...(cap ? { cap } : {}), ...(components.judge ? { judge: components.judge } : {}) });
    const run: RunComponents = { ...components, context: { ...components.context, llm } };

    // judgeCalibration batch: the prior is judged (or read back, on resume) before any question.
    // Its judgments are live calls of the run like the questions' (often the judge's, at the
    // judge's price): metered into the session's spend, under the run's cap, stopped by Ctrl-C.
    let calibrated: Awaited<ReturnType<typeof withJudgePriors>> = { components: run };
    try {
      calibrated = await withJudgePriors(run, runDir);
    } catch (error) {
      // The cap or Ctrl-C stopped the calibration: the session's signal has fired, so no question
      // starts and the session ends as an interrupted one does (the cap's message and exit status).
      if (!(error instanceof CostLimitError) && !session.signal.aborted) throw error;
      if (!session.signal.aborted) session.abort(error);
    }
    runState.setSessionCost(meter.snapshot());
    const answered = await answerExamples({
      components: calibrated.components,
      todo: plan.todo,
      total: plan.selection.length,
      resumedCount: plan.resumedCount,
      concurrency: config.concurrency,
      maxConsecutiveErrors: request.maxConsecutiveErrors ?? 5,
      resultsPath: paths.results,
      tracesPath: paths.traces,
      progress,
      signal: session.signal,
      meter,
      onAnswered: (result, done, trace, usage) => {
        runState.state.done = done;
        runState.setSessionCost(usage);
        runState.checkpoint(false);
        tracking.logQuestion(trace, scoreValues(result));
      },
    });

    const { fatal } = answered;
    const status: RunOutcome['status'] = fatal ? 'FAILED' : answered.interrupted ? 'KILLED' : 'FINISHED';
    const results = collectResults(plan.selection, paths.results, paths.traces, status === 'FINISHED');
    const answeredCount = results.filter((r) => r.error === undefined).length;
    runState.setSessionCost(answered.usage);
    runState.end(status, answeredCount, fatal, answered.stoppedBy);

    const metrics = summariseRun(results, components.aggregate, { wallSeconds: runState.state.wallSeconds, total: plan.selection.length, status });
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
    addDecisions(metrics, results, readTraces(paths.traces), methodCatalog());
    writeRunJson(paths.metrics, 'metrics', metrics);
    progress.finish(
      { ...answered.progress, done: answeredCount },
      status === 'FINISHED' ? undefined : status === 'KILLED' ? (answered.stoppedBy ?? 'stopped') : fatal,
    );

    const files = [paths.config, paths.metrics, paths.results, paths.traces, paths.state, ...(calibrated.priors ? [paths.judgePriors] : [])];
    await tracking.finish(metrics, files, status);
    return {
      status,
      runDir,
      metrics,
      results,
      mlflow: tracking.record,
      answeredNow: answered.answeredNow,
      ...(fatal ? { error: fatal } : {}),
      ...(answered.stoppedBy ? { stoppedBy: answered.stoppedBy } : {}),
    };
  } catch (error) {
    // An unexpected failure (a scorer bug, a full disk): the run dir keeps what is done, and the
    // MLflow run must not stay RUNNING forever.
    await tracking.fail();
    runState.fail(error instanceof Error ? error.message : String(error));
    throw error;
  } finally {
    request.signal?.removeEventListener('abort', onInterrupt);
  }
}

/** Aggregates over a run's results plus its usage totals. */
export function summariseRun(
  results: ExampleResult[],
  aggregate: (results: ExampleResult[]) => Record<string, MetricAggregate>,
  info: { wallSeconds: number; total: number; status: RunMetrics['status'] },
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
  };
}

/**
 * The run's decision statistics (`decision_*`) and `judge_mode`, from the latest trace of each
 * result (a resumed run's traces file may hold an earlier attempt of a question).
 */
export function addDecisions(metrics: RunMetrics, results: ExampleResult[], traces: Trace[], methods: MethodAnalyses): void {
  const latest = new Map<string, Trace>();
  for (const t of traces) latest.set(t.questionId, t);
  const answered = results.filter((r) => r.error === undefined).map((r) => latest.get(r.id)).filter((t): t is Trace => t !== undefined);
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
