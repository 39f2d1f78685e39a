import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Example } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { Pipeline, PipelineContext, PipelineOutput } from '../pipelines/types';
import type { Trace, TraceSummary } from '../trace/types';
import type { ParamValue, RunTracker, Tracking } from '../tracking/types';
import { configFingerprint, configToYaml, diffConfigs, readResolvedConfig, type ExperimentConfig } from './config';
import { JsonlAppender, readJsonl, repairJsonl, writeFileAtomic, writeJsonlAtomic } from './jsonl';
import { silentProgress, type ProgressSink, type ProgressState } from './progress';
import type { ExampleResult, MetricAggregate, RunMetrics } from './results';
import { readJson, runFiles, writeJson, type MlflowRecord, type RunState } from './rundir';
import { flattenParams, redactSecrets } from '../tracking/redact';
import { redactConfig } from './secrets';
import { parseShard, selectShard } from './shard';
import { countingModel, emptyLiveUsage } from './usage';

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
 */

/** What a run is made of; built from a config by `compose.ts`, or by hand in tests. */
export interface RunComponents {
  /** The run's whole selection (sampling and limit applied, not the shard), in evaluation order. */
  examples: Example[];
  pipeline: Pipeline;
  /** Shared by all examples. The runner wraps `llm` to count usage and to honour its signal. */
  context: PipelineContext;
  score(example: Example, output: { output: string; answer?: string; trace?: Trace }): Promise<Record<string, number>> | Record<string, number>;
  aggregate(results: ExampleResult[]): Record<string, MetricAggregate>;
}

/** Opens the tracking backend for a run dir (live MLflow, or an on-disk buffer when it is down). */
export type TrackingFactory = (runDir: string) => Promise<Tracking>;

export interface RunRequest {
  config: ExperimentConfig;
  runDir: string;
  resume?: boolean;
  components: RunComponents;
  /** null: do not track (tracking.enabled false, or tests). */
  tracking?: TrackingFactory | null;
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
}

/**
 * Refuse early (before models load) to write into an existing run without `--resume`. `--resume`
 * of a run that does not exist yet starts it, so that a retried job (a Kubernetes pod restart,
 * a GNU parallel retry) can always pass `--resume`. Returns whether there is a run to resume.
 */
export function checkRunDir(runDir: string, resume: boolean): boolean {
  const started = existsSync(join(runDir, runFiles.config));
  if (started && !resume) {
    throw new AmbiqaError(
      `run directory already exists: ${runDir}`,
      'add --resume to finish or extend it, or --name <new-name> to start a new run',
    );
  }
  return started;
}

export async function runExperiment(request: RunRequest): Promise<RunOutcome> {
  const { config, runDir, components } = request;
  const warn = request.warn ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
  const progress = request.progress ?? silentProgress;
  const resume = request.resume ?? false;
  const sessionStart = performance.now();

  // ---------------------------------------------------------------- the run dir
  const paths = {
    config: join(runDir, runFiles.config),
    results: join(runDir, runFiles.results),
    traces: join(runDir, runFiles.traces),
    metrics: join(runDir, runFiles.metrics),
    mlflow: join(runDir, runFiles.mlflow),
    state: join(runDir, runFiles.state),
  };
  const redacted = redactConfig(config);
  if (existsSync(paths.config)) {
    if (!resume) {
      throw new AmbiqaError(
        `run directory already exists: ${runDir}`,
        'add --resume to finish or extend it, or --name <new-name> to start a new run',
      );
    }
    const saved = readResolvedConfig(paths.config);
    const differences = diffConfigs(configFingerprint(saved), configFingerprint(redacted));
    if (differences.length > 0) {
      throw new AmbiqaError(
        `cannot resume ${runDir}: the config differs from the one it was started with in ${differences.join(', ')}`,
        'resume with the same config and --set values, or start a new run with --name',
      );
    }
  } else if (resume && existsSync(paths.results)) {
    throw new AmbiqaError(`cannot resume ${runDir}: its ${runFiles.config} is missing`);
  }
  mkdirSync(runDir, { recursive: true });
  writeFileAtomic(paths.config, configToYaml(redacted, `resolved config of run ${config.name}, written by ambiqa run`));

  // ---------------------------------------------------------------- what is already done
  for (const p of [paths.results, paths.traces]) {
    const cut = repairJsonl(p);
    if (cut > 0) warn(`${p}: removed a torn last line (${cut} bytes) left by an interrupted write`);
  }
  const shard = config.shard ? parseShard(config.shard) : undefined;
  const indexed = components.examples.map((example, index) => ({ example, index }));
  const ids = new Set<string>();
  for (const { example } of indexed) {
    if (ids.has(example.id)) throw new AmbiqaError(`dataset ${config.dataset.path}: duplicate example id ${example.id}`);
    ids.add(example.id);
  }
  const selection = selectShard(
    indexed.map((x) => ({ ...x, id: x.example.id })),
    shard,
  );
  const previous = new Map<string, ExampleResult>();
  for (const r of readJsonl<ExampleResult>(paths.results)) previous.set(r.id, r);
  // Failed examples are tried again on resume; finished ones are kept as they are.
  const finished = new Map([...previous].filter(([id, r]) => r.error === undefined && ids.has(id)));
  const todo = selection.filter((x) => !finished.has(x.example.id));
  const resumedCount = selection.length - todo.length;

  const priorState = readJson<RunState>(paths.state);
  const state: RunState = {
    status: 'RUNNING',
    wallSeconds: priorState?.wallSeconds ?? 0,
    sessions: (priorState?.sessions ?? 0) + 1,
    startedAt: priorState?.startedAt ?? new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    total: selection.length,
    done: resumedCount,
  };
  const baseWall = state.wallSeconds;
  let lastCheckpoint = 0;
  // run.json carries the wall time across sessions; after a SIGKILL it is as fresh as the last
  // checkpoint, so once a second is plenty (an fsync per example would cost more than it tells).
  const checkpoint = (force = true) => {
    const now = performance.now();
    if (!force && now - lastCheckpoint < 1000) return;
    lastCheckpoint = now;
    state.wallSeconds = baseWall + (now - sessionStart) / 1000;
    state.updatedAt = new Date().toISOString();
    writeJson(paths.state, state);
  };
  checkpoint();

  // ---------------------------------------------------------------- MLflow
  let tracker: RunTracker | null = null;
  let mlflow: MlflowRecord | null = readJson<MlflowRecord>(paths.mlflow);
  let tracking: Tracking | null = null;
  if (request.tracking && config.tracking.enabled) {
    tracking = await request.tracking(runDir);
    const resumeRunId = resume && mlflow?.runId ? mlflow.runId : undefined;
    tracker = await tracking.startRun({
      experimentName: config.tracking.experiment,
      runName: config.name,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      ...(resumeRunId ? { resumeRunId } : {}),
      tags: {
        ...config.tracking.tags,
        ...request.tags,
        'ambiqa.pipeline': config.pipeline.name,
        'ambiqa.dataset': config.dataset.name,
        'ambiqa.run_dir': runDir,
        ...(config.shard ? { 'ambiqa.shard': config.shard } : {}),
        ...(state.sessions > 1 ? { 'ambiqa.sessions': String(state.sessions) } : {}),
      },
    });
    mlflow = {
      experimentName: config.tracking.experiment,
      experimentId: tracker.experimentId,
      runId: tracker.runId,
      runName: config.name,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      runUrl: tracking.runUrl(tracker.experimentId, tracker.runId),
    };
    writeJson(paths.mlflow, mlflow);
    await guard(warn, 'log params to MLflow', () => tracker!.logParams(configParams(redacted)));
  }

  try {
    return await answerAndWriteUp();
  } catch (error) {
    // An unexpected failure (a scorer bug, a full disk): the run dir keeps what is done, and the
    // MLflow run must not stay RUNNING forever.
    if (tracker) await guard(warn, 'mark the MLflow run FAILED', () => tracker!.finish('FAILED'));
    state.status = 'FAILED';
    state.error = error instanceof Error ? error.message : String(error);
    writeJson(paths.state, state);
    throw error;
  }

  async function answerAndWriteUp(): Promise<RunOutcome> {
    // ---------------------------------------------------------------- answer the examples
    const live = emptyLiveUsage();
    const abort = new AbortController();
    const onOuterAbort = () => abort.abort(request.signal?.reason);
    if (request.signal?.aborted) abort.abort(request.signal.reason);
    request.signal?.addEventListener('abort', onOuterAbort, { once: true });
    const llm = countingModel(components.context.llm, live, abort.signal);
    const context: PipelineContext = { ...components.context, llm, signal: abort.signal };

    const resultsOut = new JsonlAppender(paths.results);
    const tracesOut = new JsonlAppender(paths.traces);
    const progressState: ProgressState = {
      done: resumedCount,
      total: selection.length,
      resumed: resumedCount,
      errors: 0,
      llmCalls: 0,
      promptTokens: 0,
      completionTokens: 0,
      cacheHits: 0,
    };
    const syncProgress = () => {
      progressState.llmCalls = live.llmCalls;
      progressState.promptTokens = live.promptTokens;
      progressState.completionTokens = live.completionTokens;
      progressState.cacheHits = live.cacheHits;
    };
    const ticker = setInterval(() => {
      syncProgress();
      progress.update(progressState);
    }, 1000);
    ticker.unref();
    progress.update(progressState);

    const maxConsecutiveErrors = request.maxConsecutiveErrors ?? 5;
    let consecutiveErrors = 0;
    let successesNow = 0;
    let answeredNow = 0;
    let fatal: string | undefined;
    let next = 0;

    const answerOne = async (item: { example: Example; index: number }): Promise<void> => {
      const { example, index } = item;
      let out: PipelineOutput;
      try {
        out = await components.pipeline.answer(example, context);
      } catch (error) {
        if (abort.signal.aborted) return; // abandoned by Ctrl-C: not done, answered again on resume
        const message = error instanceof Error ? error.message : String(error);
        const metrics = await components.score(example, { output: '' });
        const result: ExampleResult = { id: example.id, index, question: example.question, output: '', metrics, usage: emptySummary(), error: message };
        resultsOut.append(result);
        progressState.errors += 1;
        consecutiveErrors += 1;
        if (successesNow === 0 && consecutiveErrors >= maxConsecutiveErrors) {
          fatal = `${consecutiveErrors} examples failed in a row and none succeeded; last error: ${message}`;
          abort.abort(new Error(fatal));
        }
        return;
      }
      const metrics = await components.score(example, out);
      const result: ExampleResult = {
        id: example.id,
        index,
        question: example.question,
        output: out.output,
        ...(out.answer !== undefined ? { answer: out.answer } : {}),
        metrics,
        usage: out.trace.summary,
      };
      // The trace goes first: a result line is the mark that an example is done.
      tracesOut.append(out.trace);
      resultsOut.append(result);
      finished.set(example.id, result);
      consecutiveErrors = 0;
      successesNow += 1;
      answeredNow += 1;
      progressState.done += 1;
      state.done = progressState.done;
      checkpoint(false);
      syncProgress();
      progress.update(progressState);
    };

    const worker = async () => {
      while (!abort.signal.aborted && next < todo.length) {
        const item = todo[next++];
        await answerOne(item);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(config.concurrency, Math.max(1, todo.length)) }, worker));
    } finally {
      clearInterval(ticker);
      request.signal?.removeEventListener('abort', onOuterAbort);
      resultsOut.close();
      tracesOut.close();
    }

    // ---------------------------------------------------------------- write up
    const interrupted = abort.signal.aborted;
    const status: RunOutcome['status'] = fatal ? 'FAILED' : interrupted ? 'KILLED' : 'FINISHED';
    const all = readJsonl<ExampleResult>(paths.results);
    const latest = new Map<string, ExampleResult>();
    for (const r of all) latest.set(r.id, r);
    const ordered = selection.map((x) => latest.get(x.example.id)).filter((r): r is ExampleResult => r !== undefined);
    if (status === 'FINISHED') {
      // Put both files in evaluation order, one line per example, so that an interrupted and
      // resumed run leaves the same files as an uninterrupted one.
      writeJsonlAtomic(paths.results, ordered);
      const traces = new Map<string, Trace>();
      for (const t of readJsonl<Trace>(paths.traces)) traces.set(t.questionId, t);
      writeJsonlAtomic(
        paths.traces,
        ordered.map((r) => traces.get(r.id)).filter((t): t is Trace => t !== undefined),
      );
    }
    checkpoint();
    state.status = status;
    state.done = ordered.filter((r) => r.error === undefined).length;
    if (fatal) state.error = fatal;
    writeJson(paths.state, state);

    const metrics = summariseRun(ordered, components.aggregate, { wallSeconds: state.wallSeconds, total: selection.length, status });
    writeJson(paths.metrics, metrics);
    syncProgress();
    progressState.done = ordered.filter((r) => r.error === undefined).length;
    progress.finish(progressState, status === 'FINISHED' ? undefined : status === 'KILLED' ? 'stopped' : fatal);

    if (tracker) {
      await guard(warn, 'log metrics to MLflow', () => tracker!.logMetrics(metricsForMlflow(metrics)));
      for (const file of [paths.config, paths.metrics, paths.results, paths.traces, paths.state]) {
        if (existsSync(file)) await guard(warn, `upload ${file} to MLflow`, () => tracker!.logArtifact(file));
      }
      await guard(warn, 'finish the MLflow run', () => tracker!.finish(status));
    }

    return {
      status,
      runDir,
      metrics,
      results: ordered,
      mlflow,
      answeredNow,
      ...(fatal ? { error: fatal } : {}),
    };
  }
}

/** Aggregates over a run's results plus its usage totals. */
export function summariseRun(
  results: ExampleResult[],
  aggregate: (results: ExampleResult[]) => Record<string, MetricAggregate>,
  info: { wallSeconds: number; total: number; status: RunMetrics['status'] },
): RunMetrics {
  const usage = { llm_calls: 0, prompt_tokens: 0, completion_tokens: 0, cache_hits: 0, wall_seconds: round(info.wallSeconds, 3) };
  for (const r of results) {
    usage.llm_calls += r.usage.llmCalls;
    usage.prompt_tokens += r.usage.promptTokens;
    usage.completion_tokens += r.usage.completionTokens;
    usage.cache_hits += r.usage.cacheHits;
  }
  return {
    n: results.length,
    metrics: results.length > 0 ? aggregate(results) : {},
    usage,
    total: info.total,
    errors: results.filter((r) => r.error !== undefined).length,
    ...(info.status ? { status: info.status } : {}),
  };
}

/** `metrics.json` as MLflow metrics: `<name>`, `<name>_ci_low`, `<name>_ci_high`, usage totals. */
export function metricsForMlflow(m: RunMetrics): Record<string, number> {
  const out: Record<string, number> = { n: m.n };
  for (const [name, a] of Object.entries(m.metrics)) {
    out[name] = a.mean;
    out[`${name}_ci_low`] = a.ciLow;
    out[`${name}_ci_high`] = a.ciHigh;
  }
  for (const [k, v] of Object.entries(m.usage)) out[k] = v;
  if (m.errors !== undefined) out.errors = m.errors;
  return out;
}

/**
 * The config as MLflow params: flattened dotted keys, secrets already removed. `concurrency`
 * and `tracking.*` are left out because a resumed run may change them and MLflow params are
 * immutable; they do not change results.
 */
export function configParams(config: ExperimentConfig): Record<string, ParamValue> {
  const { concurrency: _c, tracking: _t, sweep: _s, description: _d, ...rest } = config;
  return redactSecrets(flattenParams(rest));
}

function emptySummary(): TraceSummary {
  return { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** MLflow trouble must never cost a finished run its results: warn and go on. */
async function guard(warn: (m: string) => void, what: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    warn(`could not ${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
