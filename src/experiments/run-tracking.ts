import { existsSync } from 'node:fs';
import { flattenParams, redactSecrets } from '../tracking/redact';
import { judgeMetricsForMlflow } from '../tracking/judge-metrics';
import { groupMetricsForMlflow } from '../tracking/group-metrics';
import type { ParamValue, RunTracker, Tracking } from '../tracking/types';
import type { Example } from '../datasets/types';
import type { Trace } from '../trace/types';
import type { ExperimentConfig } from './config';
import { describeRunStart, modelTags } from './run-page';
import { readRunJson, scoreValues, writeRunJson, type ExampleResult, type MlflowRecord, type RunMetrics } from '../run-files';
import type { FigureLogger, RunEnd, RunObserver } from './observers';
import { SHARD_TAG, UPLOADS_PENDING, UPLOADS_TAG, uploadManifest } from './shard-group';

/** Opens the tracking backend for a run dir (live MLflow, or an on-disk buffer when it is down). */
export type TrackingFactory = (runDir: string) => Promise<Tracking>;

export type { FigureLogger } from './observers';

/** MLflow trouble must never cost a finished run its results: warn and go on. */
export async function guard(warn: (m: string) => void, what: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    warn(`could not ${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export interface RunTrackingRequest {
  config: ExperimentConfig;
  /** The config with secrets removed (its params are logged). */
  redacted: ExperimentConfig;
  runDir: string;
  /** Where the run's MLflow ids are kept (`mlflow.json`). */
  recordPath: string;
  resume: boolean;
  /** 1 for a fresh run; more for a resumed one (tagged). */
  session: number;
  factory: TrackingFactory | null | undefined;
  /** The run's selection: logged as the run's dataset input. */
  examples?: readonly Example[];
  parentRunId?: string;
  tags?: Record<string, string>;
  /** Params beside the config's (the run components' `settings`: metric reader, splitter). */
  settings?: Record<string, string>;
  warn: (m: string) => void;
}

/**
 * The MLflow side of one run session: start (or re-open, on resume) the run and log its params;
 * at the end log metrics, upload the run files and set the final status. `record` is what
 * `mlflow.json` holds (from an earlier session when tracking is off now).
 */
export class RunTrackingSession {
  private firstTrace: Trace | undefined;
  private exportTraces = true;

  private constructor(
    readonly record: MlflowRecord | null,
    /** The MLflow run; null when the session is not tracked. */
    readonly tracker: RunTracker | null,
    private readonly warn: (m: string) => void,
  ) {}

  static async start(request: RunTrackingRequest): Promise<RunTrackingSession> {
    const { config, warn } = request;
    const saved = readRunJson(request.recordPath, 'mlflow');
    if (!request.factory || !config.tracking.enabled) return new RunTrackingSession(saved, null, warn);
    const tracking = await request.factory(request.runDir);
    const resumeRunId = request.resume && saved?.runId ? saved.runId : undefined;
    const tracker = await tracking.startRun({
      experimentName: config.tracking.experiment,
      runName: config.name,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      ...(resumeRunId ? { resumeRunId } : {}),
      tags: {
        ...config.tracking.tags,
        ...request.tags,
        'ambiqa.pipeline': config.pipeline.name,
        'ambiqa.dataset': config.dataset.name,
        'ambiqa.run_dir': request.runDir,
        ...(config.shard ? { [SHARD_TAG]: config.shard } : {}),
        ...(request.session > 1 ? { 'ambiqa.sessions': String(request.session) } : {}),
        // Until this session has stored its files, the ones on the server (from an earlier
        // session, or none) are not the run's: `merge --from-mlflow` refuses a pending run.
        [UPLOADS_TAG]: UPLOADS_PENDING,
      },
    });
    const record: MlflowRecord = {
      experimentName: config.tracking.experiment,
      experimentId: tracker.experimentId,
      runId: tracker.runId,
      runName: config.name,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      runUrl: tracking.runUrl(tracker.experimentId, tracker.runId),
    };
    writeRunJson(request.recordPath, 'mlflow', record);
    await guard(warn, 'log params to MLflow', () => tracker.logParams({ ...configParams(request.redacted), ...request.settings }));
    await guard(warn, 'log the dataset and description to MLflow', () => describeRunStart(tracker, request.redacted, request.examples ?? []));
    const session = new RunTrackingSession(record, tracker, warn);
    session.exportTraces = config.tracking.traces !== false;
    return session;
  }

  /** A finished question: its trace goes to MLflow Tracing in the background (batched). */
  logQuestion(trace: Trace, metrics: Record<string, number>): void {
    this.firstTrace ??= trace;
    if (this.exportTraces) this.tracker?.logQuestionTrace?.({ trace, metrics });
  }

  /** Logs the run's metrics, uploads the files that exist and sets the final status. */
  async finish(metrics: RunMetrics, files: string[], status: 'FINISHED' | 'KILLED' | 'FAILED'): Promise<void> {
    const tracker = this.tracker;
    if (!tracker) return;
    await guard(this.warn, 'log metrics to MLflow', () => tracker.logMetrics(metricsForMlflow(metrics)));
    // How the judgments were read is known only once the traces exist.
    const judgeMode = metrics.settings?.judge_mode;
    if (judgeMode) await guard(this.warn, 'log judge_mode to MLflow', () => tracker.logParams({ judge_mode: judgeMode }));
    const firstTrace = this.firstTrace;
    if (firstTrace) await guard(this.warn, 'tag the MLflow run with its model', () => tracker.setTags(modelTags(firstTrace)));
    const uploaded: string[] = [];
    let failed = false;
    for (const file of files) {
      if (!existsSync(file)) continue;
      await guard(this.warn, `upload ${file} to MLflow`, async () => {
        try {
          await tracker.logArtifact(file);
          uploaded.push(file);
        } catch (error) {
          failed = true;
          throw error;
        }
      });
    }
    // Written after the last upload and only when every one was stored (or journaled, in
    // order, for `ambiqa sync`): a merge from MLflow checks each file against it.
    if (!failed) await guard(this.warn, 'tag the MLflow run with its uploads', () => tracker.setTags({ [UPLOADS_TAG]: uploadManifest(uploaded) }));
    await guard(this.warn, 'finish the MLflow run', () => tracker.finish(status));
  }

  /** An unexpected failure: the MLflow run must not stay RUNNING forever. */
  async fail(): Promise<void> {
    const tracker = this.tracker;
    if (tracker) await guard(this.warn, 'mark the MLflow run FAILED', () => tracker.finish('FAILED'));
  }
}

/**
 * MLflow as an observer: the run is started (or re-opened, on resume) when the session starts,
 * each answered question's trace goes to MLflow Tracing, and the end logs the metrics, uploads
 * the run files and sets the status (FAILED after an unexpected error).
 */
export class MlflowObserver implements RunObserver {
  readonly name = 'MLflow';
  private session: RunTrackingSession | undefined;

  constructor(private readonly request: RunTrackingRequest) {}

  /** What `mlflow.json` holds once the session started. */
  get record(): MlflowRecord | null {
    return this.session?.record ?? null;
  }

  /** The session's MLflow run, null when not tracked. */
  get tracker(): RunTracker | null {
    return this.session?.tracker ?? null;
  }

  async onStart(): Promise<void> {
    this.session = await RunTrackingSession.start(this.request);
  }

  onQuestion(row: ExampleResult, trace: Trace | undefined): void {
    if (trace) this.session?.logQuestion(trace, scoreValues(row));
  }

  async onEnd(end: RunEnd): Promise<void> {
    if (end.status === 'CRASHED') await this.session?.fail();
    else await this.session?.finish(end.metrics, end.files, end.status);
  }
}

/**
 * A finished run's figures, drawn from its folder (written by then) into its MLflow run before
 * that run is closed: listed before the MLflow observer. Skipped when the run is not tracked.
 */
export function figuresObserver(log: FigureLogger, runDir: string, tracker: () => RunTracker | null, warn: (m: string) => void): RunObserver {
  return {
    name: 'figures',
    async onEnd(end) {
      const target = tracker();
      if (end.status !== 'FINISHED' || !target) return;
      await guard(warn, 'log the figures to MLflow', async () => void (await log(runDir, target)));
    },
  };
}

/**
 * `metrics.json` as MLflow metrics: `<name>`, `<name>_ci_low`, `<name>_ci_high`, usage totals;
 * under `trials: k`, where the aggregate gives them, `<name>_trial_sd` (the spread of a question's
 * answers across its trials) and `<name>_sampling_share` (the share of the mean's variance that
 * comes from sampling).
 */
export function metricsForMlflow(m: RunMetrics): Record<string, number> {
  const out: Record<string, number> = { n: m.n };
  for (const [name, a] of Object.entries(m.metrics)) {
    out[name] = a.mean;
    out[`${name}_ci_low`] = a.ciLow;
    out[`${name}_ci_high`] = a.ciHigh;
    if (a.trialSd !== undefined) out[`${name}_trial_sd`] = a.trialSd;
    if (a.samplingShare !== undefined) out[`${name}_sampling_share`] = a.samplingShare;
  }
  for (const [k, v] of Object.entries(m.usage)) if (k !== 'cost_usd' && v !== undefined) out[k] = v;
  // Dollars under the name other eval tools' users look for.
  if (m.usage.cost_usd !== undefined) out['usage.cost_usd'] = m.usage.cost_usd;
  for (const [k, v] of Object.entries(m.decisions ?? {})) out[k] = v;
  Object.assign(out, judgeMetricsForMlflow(m.judges));
  Object.assign(out, groupMetricsForMlflow(m.groups));
  if (m.errors !== undefined) out.errors = m.errors;
  if (m.answered !== undefined) out.answered = m.answered;
  return out;
}

/**
 * The config as MLflow params: flattened dotted keys, secrets already removed. `concurrency`
 * `tracking.*` and `llm.maxCostUsd` are left out because a resumed run may change them and MLflow params are
 * immutable; they do not change results.
 */
export function configParams(config: ExperimentConfig): Record<string, ParamValue> {
  const { concurrency: _c, tracking: _t, sweep: _s, description: _d, ...rest } = config;
  // The spending cap is raised to resume a run it stopped; it changes no result.
  if (rest.llm && 'maxCostUsd' in rest.llm) {
    const { maxCostUsd: _m, ...llm } = rest.llm;
    (rest as { llm: unknown }).llm = llm;
  }
  return redactSecrets(flattenParams(rest));
}
