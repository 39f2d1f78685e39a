import { readFile } from 'node:fs/promises';
import { RetryPolicy, parseRetryAfter, withRetries } from '../common/retry';
import { redactBytes, redactText, registerUrlCredentials } from '../common/secrets';
import { AmbiqaError } from '../errors';
import { escapeControl } from '../common/safe-name';
import {
  decodeMetricValue,
  metricToJson,
  planLogBatches,
  type BatchLimits,
  type KeyValue,
  type LogBatch,
  type MetricRecord,
} from './batch';
import { MLFLOW_LIMITS, assertValidKey, truncateValue } from './limits';
import type { DatasetInput, RunStatus } from './types';

// The tracking contract (types.ts) owns the dataset shape; re-exported for this client's callers.
export type { DatasetInput } from './types';

/**
 * A typed client for MLflow's REST API (`/api/2.0/mlflow/…`) and its artifact proxy
 * (`/api/2.0/mlflow-artifacts/…`). Written against MLflow 3.17; the endpoints used here have
 * been stable since 2.0. It validates and splits what it sends so that a long config or a
 * 2,500-point metric series never bounces off the server's limits.
 */

// ---------------------------------------------------------------------------------- REST types

export interface Experiment {
  experimentId: string;
  name: string;
  artifactLocation: string;
  lifecycleStage: 'active' | 'deleted';
  tags: Record<string, string>;
}

export interface RunInfo {
  runId: string;
  experimentId: string;
  runName: string;
  status: RunStatus | 'SCHEDULED';
  startTime: number;
  endTime?: number;
  artifactUri: string;
  lifecycleStage: 'active' | 'deleted';
}

export interface Run {
  info: RunInfo;
  /** Latest value of each metric (MLflow keeps the full history; see getMetricHistory). */
  metrics: Record<string, MetricRecord>;
  params: Record<string, string>;
  tags: Record<string, string>;
}

export interface ArtifactEntry {
  /** Relative to the run's artifact root. */
  path: string;
  isDir: boolean;
  fileSize?: number;
}

export interface CreateRunRequest {
  experimentId: string;
  runName?: string;
  /** Milliseconds since the epoch; now when left out. */
  startTime?: number;
  tags?: Record<string, string>;
}

export interface SearchRunsRequest {
  experimentIds: string[];
  /** MLflow's filter language, e.g. "tags.`mlflow.parentRunId` = 'abc'". */
  filter?: string;
  maxResults?: number;
  orderBy?: string[];
  pageToken?: string;
}

export interface MlflowClientOptions {
  /** The tracking server, e.g. `http://127.0.0.1:5000`. */
  uri: string;
  /** Per-request timeout (default 30 s; artifact transfers get 10 minutes). */
  timeoutMs?: number;
  /** Attempts for 429/5xx answers and reset connections (default 3). */
  attempts?: number;
  /** First backoff delay (default 250 ms); doubles per retry, capped at 8 s. */
  baseDelayMs?: number;
  /** A Retry-After longer than this fails the request, saying so (default 30 s). */
  maxRetryAfterMs?: number;
  /** Aborts requests in flight and retry waits (e.g. the run's Ctrl-C). */
  signal?: AbortSignal;
  /** Extra headers; `MLFLOW_TRACKING_TOKEN` or `MLFLOW_TRACKING_USERNAME/PASSWORD` add auth. */
  headers?: Record<string, string>;
  batchLimits?: BatchLimits;
  /** The largest artifact a download takes (default `MAX_ARTIFACT_BYTES`, 1 GiB). */
  maxArtifactBytes?: number;
  /** The most pages one `next_page_token` loop follows (default `MAX_PAGES`, 1 000). */
  maxPages?: number;
}

export interface TraceInfo {
  traceId: string;
  requestPreview: string;
  responsePreview: string;
  state: string;
  metadata: Record<string, string>;
  assessments: Array<{ name: string; value: unknown }>;
}

export interface TraceSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  /** Start and end, epoch milliseconds (the server keeps nanoseconds; absent if it sent none). */
  startMs?: number;
  endMs?: number;
  attributes: Record<string, unknown>;
}

/** OTLP nanoseconds since the epoch (a decimal string or number) → milliseconds, keeping the fraction. */
function nanosToMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value / 1e6 : undefined;
  // A string of digits: BigInt keeps the microseconds that a double of the nanoseconds would round.
  if (typeof value !== 'string' || !/^\d{1,30}$/.test(value)) return undefined;
  return Number(BigInt(value) / 1000n) / 1000;
}

function timesOf(span: { start_time_unix_nano?: unknown; end_time_unix_nano?: unknown }): { startMs?: number; endMs?: number } {
  const startMs = nanosToMs(span.start_time_unix_nano);
  const endMs = nanosToMs(span.end_time_unix_nano);
  return { ...(startMs !== undefined ? { startMs } : {}), ...(endMs !== undefined ? { endMs } : {}) };
}

type RawAnyValue = {
  string_value?: string;
  int_value?: string | number;
  double_value?: number;
  bool_value?: boolean;
  array_value?: { values?: RawAnyValue[] };
  kvlist_value?: { values?: Array<{ key: string; value: RawAnyValue }> };
};

/** OTLP's AnyValue (as MLflow returns spans) → plain JSON. */
function decodeAnyValue(v: RawAnyValue | undefined): unknown {
  if (!v) return null;
  if (v.string_value !== undefined) return v.string_value;
  if (v.int_value !== undefined) return Number(v.int_value);
  if (v.double_value !== undefined) return v.double_value;
  if (v.bool_value !== undefined) return v.bool_value;
  if (v.array_value) return (v.array_value.values ?? []).map(decodeAnyValue);
  if (v.kvlist_value) return Object.fromEntries((v.kvlist_value.values ?? []).map((kv) => [kv.key, decodeAnyValue(kv.value)]));
  return null;
}

interface RawTraceInfo {
  trace_id: string;
  request_preview?: string;
  response_preview?: string;
  state?: string;
  trace_metadata?: Record<string, string>;
  assessments?: Array<{ assessment_name: string; feedback?: { value?: unknown } }>;
}

// --------------------------------------------------------------------------------- errors

const START_HINT =
  'start it (e.g. `npx ambiqa mlflow-ui` in another terminal), or unset MLFLOW_TRACKING_URI so that the CLI starts a local server from the project venv';

/** The server did not answer at all: refused, unknown host, reset, or timed out. */
export class MlflowUnreachableError extends AmbiqaError {
  constructor(
    readonly uri: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`MLflow tracking server at ${uri} is unreachable (${reason})`, START_HINT, options);
    this.name = 'MlflowUnreachableError';
  }
}

/** The server answered with an error; `errorCode` is MLflow's, e.g. RESOURCE_DOES_NOT_EXIST. */
export class MlflowHttpError extends AmbiqaError {
  constructor(
    readonly status: number,
    readonly errorCode: string,
    readonly serverMessage: string,
    readonly endpoint: string,
  ) {
    super(`MLflow ${endpoint} failed: HTTP ${status} ${errorCode}: ${serverMessage}`, hintFor(status, errorCode));
    this.name = 'MlflowHttpError';
  }

  /** The server's Retry-After, in milliseconds, when it sent one. */
  retryAfterMs?: number;
}

function hintFor(status: number, errorCode: string): string | undefined {
  if (status === 401 || status === 403) return 'set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD';
  if (status === 404 && errorCode === 'ENDPOINT_NOT_FOUND') {
    return 'is MLFLOW_TRACKING_URI an MLflow tracking server (not its UI behind a proxy prefix)?';
  }
  if (status >= 500) return 'see the MLflow server log; for a local server it is artifacts/mlflow/server.log';
  return undefined;
}

export function isUnreachable(error: unknown): error is MlflowUnreachableError {
  return error instanceof MlflowUnreachableError;
}

/** Errors after which the server may work again later: worth buffering rather than failing. */
export function isTransient(error: unknown): boolean {
  return (
    error instanceof MlflowUnreachableError ||
    (error instanceof MlflowHttpError && (error.status === 429 || error.status === 502 || error.status === 503 || error.status === 504))
  );
}

// --------------------------------------------------------------------------------- client

interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  raw?: Uint8Array;
  timeoutMs?: number;
  /** Return the body bytes instead of parsing JSON. */
  binary?: boolean;
  signal?: AbortSignal;
  /** REST API version; trace assessments exist only under 3.0. */
  api?: '2.0' | '3.0';
}

export class MlflowClient {
  readonly uri: string;
  private readonly timeoutMs: number;
  private readonly maxArtifactBytes: number;
  private readonly maxPages: number;
  private readonly retryPolicy: RetryPolicy;
  private readonly signal: AbortSignal | undefined;
  private readonly headers: Record<string, string>;
  private readonly batchLimits?: BatchLimits;
  /** run id → artifact root path inside the proxy (`<exp>/<run>/artifacts`). */
  private readonly artifactRoots = new Map<string, string>();

  constructor(options: MlflowClientOptions | string) {
    const opts = typeof options === 'string' ? { uri: options } : options;
    registerUrlCredentials(opts.uri);
    this.uri = checkUri(opts.uri);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.maxArtifactBytes = opts.maxArtifactBytes ?? MAX_ARTIFACT_BYTES;
    this.maxPages = opts.maxPages ?? MAX_PAGES;
    // A fixed number of attempts and no circuit breaker: an unreachable server is handled by
    // buffering operations for `ambiqa sync`, not by waiting.
    this.retryPolicy = new RetryPolicy({
      maxRetries: Math.max(1, opts.attempts ?? 3) - 1,
      baseDelayMs: opts.baseDelayMs ?? 250,
      maxDelayMs: 8000,
      maxRetryAfterMs: opts.maxRetryAfterMs ?? 30_000,
      breakerThreshold: 0,
    });
    this.signal = opts.signal;
    this.headers = { ...authHeaders(), ...(opts.headers ?? {}) };
    this.batchLimits = opts.batchLimits;
  }

  /** Headers every request carries (auth); other senders to the same server (OTLP) reuse them. */
  get requestHeaders(): Record<string, string> {
    return { ...this.headers };
  }

  // ------------------------------------------------------------------ health

  /** True when `/health` answers; never throws. */
  async isHealthy(timeoutMs = 2000): Promise<boolean> {
    try {
      const res = await fetch(`${this.uri}/health`, { signal: AbortSignal.timeout(timeoutMs), headers: this.headers });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  }

  // ------------------------------------------------------------------ experiments

  async getExperimentByName(name: string): Promise<Experiment | undefined> {
    try {
      const res = await this.request<{ experiment: RawExperiment }>('GET', 'mlflow/experiments/get-by-name', {
        query: { experiment_name: name },
      });
      return toExperiment(res.experiment);
    } catch (error) {
      if (error instanceof MlflowHttpError && error.errorCode === 'RESOURCE_DOES_NOT_EXIST') return undefined;
      throw error;
    }
  }

  async getExperiment(experimentId: string): Promise<Experiment> {
    const res = await this.request<{ experiment: RawExperiment }>('GET', 'mlflow/experiments/get', {
      query: { experiment_id: experimentId },
    });
    return toExperiment(res.experiment);
  }

  /** Every active experiment, across pages. */
  async searchExperiments(): Promise<Experiment[]> {
    const all: Experiment[] = [];
    const next = pageGuard(`${this.uri}: experiments/search`, this.maxPages);
    let pageToken: string | undefined;
    do {
      const res: { experiments?: RawExperiment[]; next_page_token?: string } = await this.request('POST', 'mlflow/experiments/search', {
        body: { max_results: 1000, ...(pageToken ? { page_token: pageToken } : {}) },
      });
      all.push(...(res.experiments ?? []).map(toExperiment));
      pageToken = next(res.next_page_token);
    } while (pageToken);
    return all;
  }

  async createExperiment(name: string, tags: Record<string, string> = {}): Promise<string> {
    if (!name || name.length > MLFLOW_LIMITS.experimentNameChars) {
      throw new AmbiqaError(
        `MLflow experiment name '${name.slice(0, 60)}' must be 1 to ${MLFLOW_LIMITS.experimentNameChars} characters`,
        'set tracking.experiment in the config to a shorter name',
      );
    }
    const res = await this.request<{ experiment_id: string }>('POST', 'mlflow/experiments/create', {
      body: { name, tags: toKeyValues(tags) },
    });
    return res.experiment_id;
  }

  /**
   * The id of the named experiment, created when missing. Two processes racing to create it both
   * end up with the same id: the loser sees RESOURCE_ALREADY_EXISTS and reads it back. A deleted
   * experiment of that name is restored, since MLflow keeps the name reserved until it is purged.
   */
  async getOrCreateExperiment(name: string): Promise<string> {
    const existing = await this.getExperimentByName(name);
    if (existing) {
      if (existing.lifecycleStage === 'deleted') {
        await this.request('POST', 'mlflow/experiments/restore', { body: { experiment_id: existing.experimentId } });
      }
      return existing.experimentId;
    }
    try {
      return await this.createExperiment(name);
    } catch (error) {
      if (error instanceof MlflowHttpError && error.errorCode === 'RESOURCE_ALREADY_EXISTS') {
        const raced = await this.getExperimentByName(name);
        if (raced) return raced.experimentId;
      }
      throw error;
    }
  }

  // ------------------------------------------------------------------ runs

  async createRun(request: CreateRunRequest): Promise<Run> {
    const tags = request.tags ?? {};
    for (const key of Object.keys(tags)) assertValidKey('tag', key);
    const res = await this.request<{ run: RawRun }>('POST', 'mlflow/runs/create', {
      body: {
        experiment_id: request.experimentId,
        ...(request.runName ? { run_name: request.runName } : {}),
        start_time: request.startTime ?? Date.now(),
        tags: toKeyValues(tags, MLFLOW_LIMITS.tagValueChars),
      },
    });
    const run = toRun(res.run);
    this.rememberArtifactRoot(run.info);
    return run;
  }

  async getRun(runId: string): Promise<Run> {
    const res = await this.request<{ run: RawRun }>('GET', 'mlflow/runs/get', { query: { run_id: runId } });
    const run = toRun(res.run);
    this.rememberArtifactRoot(run.info);
    return run;
  }

  /** Set status (and end time, for a finished run); RUNNING re-opens a run for resume. */
  async updateRun(runId: string, update: { status?: RunStatus; endTime?: number; runName?: string }): Promise<RunInfo> {
    const res = await this.request<{ run_info: RawRunInfo }>('POST', 'mlflow/runs/update', {
      body: {
        run_id: runId,
        ...(update.status ? { status: update.status } : {}),
        ...(update.endTime !== undefined ? { end_time: update.endTime } : {}),
        ...(update.runName ? { run_name: update.runName } : {}),
      },
    });
    return toRunInfo(res.run_info);
  }

  /** Mark a run finished, failed or killed, with its end time (now by default). */
  async finishRun(runId: string, status: Exclude<RunStatus, 'RUNNING'> = 'FINISHED', endTime = Date.now()): Promise<RunInfo> {
    return this.updateRun(runId, { status, endTime });
  }

  async searchRuns(request: SearchRunsRequest): Promise<{ runs: Run[]; nextPageToken?: string }> {
    const res = await this.request<{ runs?: RawRun[]; next_page_token?: string }>('POST', 'mlflow/runs/search', {
      body: {
        experiment_ids: request.experimentIds,
        ...(request.filter ? { filter: request.filter } : {}),
        max_results: request.maxResults ?? 1000,
        ...(request.orderBy ? { order_by: request.orderBy } : {}),
        ...(request.pageToken ? { page_token: request.pageToken } : {}),
      },
    });
    return { runs: (res.runs ?? []).map(toRun), ...(res.next_page_token ? { nextPageToken: res.next_page_token } : {}) };
  }

  /** Every run matching the search, across pages. */
  async searchAllRuns(request: Omit<SearchRunsRequest, 'pageToken'>): Promise<Run[]> {
    const all: Run[] = [];
    const next = pageGuard(`${this.uri}: runs/search`, this.maxPages);
    let pageToken: string | undefined;
    do {
      const page = await this.searchRuns({ ...request, ...(pageToken ? { pageToken } : {}) });
      all.push(...page.runs);
      pageToken = next(page.nextPageToken);
    } while (pageToken);
    return all;
  }

  async getMetricHistory(runId: string, key: string): Promise<MetricRecord[]> {
    const out: MetricRecord[] = [];
    const next = pageGuard(`${this.uri}: metrics/get-history`, this.maxPages);
    let pageToken: string | undefined;
    do {
      const res = await this.request<{ metrics?: RawMetric[]; next_page_token?: string }>('GET', 'mlflow/metrics/get-history', {
        query: { run_id: runId, metric_key: key, max_results: 25000, page_token: pageToken },
      });
      out.push(...(res.metrics ?? []).map(toMetric));
      pageToken = next(res.next_page_token);
    } while (pageToken);
    return out;
  }

  // ------------------------------------------------------------------ logging

  /**
   * Log params, tags and metrics, split into as few requests as MLflow's limits allow. Values too
   * long for the server are truncated with a visible marker; invalid keys are an error naming
   * the key. Requests go out one after another, so metrics keep their order.
   */
  async logBatch(runId: string, data: { metrics?: MetricRecord[]; params?: Record<string, string> | KeyValue[]; tags?: Record<string, string> | KeyValue[] }): Promise<number> {
    const params = normaliseKeyValues('param', data.params, MLFLOW_LIMITS.paramValueChars);
    const tags = normaliseKeyValues('tag', data.tags, MLFLOW_LIMITS.tagValueChars);
    const metrics = (data.metrics ?? []).map((m) => {
      assertValidKey('metric', m.key);
      return { key: m.key, value: m.value, timestamp: Math.round(m.timestamp), step: Math.round(m.step) };
    });
    const batches = planLogBatches({ metrics, params, tags }, this.batchLimits);
    for (const batch of batches) await this.sendBatch(runId, batch);
    return batches.length;
  }

  async logParams(runId: string, params: Record<string, string>): Promise<void> {
    await this.logBatch(runId, { params });
  }

  async setTags(runId: string, tags: Record<string, string>): Promise<void> {
    await this.logBatch(runId, { tags });
  }

  async setTag(runId: string, key: string, value: string): Promise<void> {
    assertValidKey('tag', key);
    await this.request('POST', 'mlflow/runs/set-tag', {
      body: { run_id: runId, key, value: truncateValue(value, MLFLOW_LIMITS.tagValueChars) },
    });
  }

  /** Log metrics at one step (0 when left out) with the current time. */
  async logMetrics(runId: string, metrics: Record<string, number>, step = 0, timestamp = Date.now()): Promise<void> {
    await this.logBatch(runId, {
      metrics: Object.entries(metrics).map(([key, value]) => ({ key, value, step, timestamp })),
    });
  }

  private async sendBatch(runId: string, batch: LogBatch): Promise<void> {
    await this.request('POST', 'mlflow/runs/log-batch', {
      body: { run_id: runId, metrics: batch.metrics.map(metricToJson), params: batch.params, tags: batch.tags },
    });
  }

  // ------------------------------------------------------------------ run inputs and traces

  /** The server's version (`GET /version`, e.g. `3.17.2`); undefined when it does not say. */
  async serverVersion(): Promise<string | undefined> {
    try {
      const res = await fetch(`${this.uri}/version`, { headers: this.headers, signal: AbortSignal.timeout(this.timeoutMs) });
      const text = (await res.text()).trim();
      return res.ok && /^\d+\.\d+/.test(text) ? text : undefined;
    } catch (error) {
      throw new MlflowUnreachableError(this.uri, networkReason(error, this.timeoutMs), { cause: error });
    }
  }

  /** Record datasets a run used (`runs/log-inputs`): what the run page's Datasets box lists. */
  async logInputs(runId: string, datasets: DatasetInput[]): Promise<void> {
    await this.request('POST', 'mlflow/runs/log-inputs', {
      body: {
        run_id: runId,
        datasets: datasets.map((d) => ({
          dataset: {
            name: d.name,
            digest: d.digest,
            source_type: d.sourceType,
            source: d.source,
            ...(d.schema ? { schema: d.schema } : {}),
            ...(d.profile ? { profile: d.profile } : {}),
          },
          tags: toKeyValues({ ...(d.context ? { 'mlflow.data.context': d.context } : {}), ...(d.tags ?? {}) }),
        })),
      },
    });
  }

  /** Link traces (`tr-…` ids, at most 100 per call) to a run: the run's Traces tab lists them. */
  async linkTracesToRun(runId: string, traceIds: string[]): Promise<void> {
    for (let i = 0; i < traceIds.length; i += 100) {
      await this.request('POST', 'mlflow/traces/link-to-run', { body: { run_id: runId, trace_ids: traceIds.slice(i, i + 100) } });
    }
  }

  /** Attach a numeric feedback (an assessment) to a trace; shown as a column in the Traces view. */
  async logFeedback(traceId: string, name: string, value: number | boolean | string, source = 'ambiqa'): Promise<void> {
    await this.request('POST', `mlflow/traces/${encodeURIComponent(traceId)}/assessments`, {
      api: '3.0',
      body: { assessment: { assessment_name: name, trace_id: traceId, source: { source_type: 'CODE', source_id: source }, feedback: { value } } },
    });
  }

  /**
   * Attach numeric feedback to an existing trace, all of a trace's values in one request
   * (`POST /api/3.0/mlflow/traces`, which merges the assessments into the trace the OTLP spans
   * created); `logFeedback` would take one request per value. The time fields must repeat the
   * trace's own, since the server overwrites them.
   */
  async logTraceFeedback(request: { traceId: string; experimentId: string; startMs: number; endMs: number; values: Record<string, number>; source?: string }): Promise<void> {
    const source = { source_type: 'CODE', source_id: request.source ?? 'ambiqa' };
    await this.request('POST', 'mlflow/traces', {
      api: '3.0',
      body: {
        trace: {
          trace_info: {
            trace_id: request.traceId,
            trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: request.experimentId } },
            request_time: new Date(request.startMs).toISOString(),
            execution_duration: `${Math.max(0, request.endMs - request.startMs) / 1000}s`,
            state: 'OK',
            assessments: Object.entries(request.values).map(([name, value]) => ({ assessment_name: name, trace_id: request.traceId, source, feedback: { value } })),
          },
        },
      },
    });
  }

  /** Traces of an experiment, optionally only those linked to a run (one page, newest first). */
  async searchTraces(request: { experimentIds: string[]; runId?: string; maxResults?: number; pageToken?: string }): Promise<{ traces: TraceInfo[]; nextPageToken?: string }> {
    const res = await this.request<{ traces?: RawTraceInfo[]; next_page_token?: string }>('POST', 'mlflow/traces/search', {
      api: '3.0',
      body: {
        locations: request.experimentIds.map((id) => ({ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: id } })),
        ...(request.runId ? { filter: `attribute.run_id = '${request.runId}'` } : {}),
        max_results: request.maxResults ?? 100,
        ...(request.pageToken ? { page_token: request.pageToken } : {}),
      },
    });
    return {
      traces: (res.traces ?? []).map((t) => ({
        traceId: t.trace_id,
        requestPreview: t.request_preview ?? '',
        responsePreview: t.response_preview ?? '',
        state: t.state ?? '',
        metadata: t.trace_metadata ?? {},
        assessments: (t.assessments ?? []).map((a) => ({ name: a.assessment_name, value: a.feedback?.value })),
      })),
      ...(res.next_page_token ? { nextPageToken: res.next_page_token } : {}),
    };
  }

  /** A trace with its spans (`GET /api/3.0/mlflow/traces/get`), attribute values decoded. */
  async getTrace(traceId: string): Promise<{ spans: TraceSpan[] }> {
    type RawSpan = {
      name: string;
      span_id: string;
      parent_span_id?: string;
      start_time_unix_nano?: string | number;
      end_time_unix_nano?: string | number;
      attributes?: Array<{ key: string; value: RawAnyValue }>;
    };
    const res = await this.request<{ trace?: { spans?: RawSpan[] } }>('GET', 'mlflow/traces/get', { api: '3.0', query: { trace_id: traceId } });
    return {
      spans: (res.trace?.spans ?? []).map((s) => ({
        name: s.name,
        spanId: s.span_id,
        ...(s.parent_span_id ? { parentSpanId: s.parent_span_id } : {}),
        ...timesOf(s),
        attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, decodeAnyValue(a.value)])),
      })),
    };
  }

  // ------------------------------------------------------------------ artifacts

  /**
   * Upload a local file to `<artifactPath>/<basename>` under the run's artifact root (or to
   * `destPath` exactly when given), through the server's artifact proxy.
   */
  async logArtifact(runId: string, localPath: string, artifactPath?: string): Promise<string> {
    const name = localPath.split(/[\\/]/).pop()!;
    const dest = artifactPath ? `${trimSlashes(artifactPath)}/${name}` : name;
    await this.uploadArtifact(runId, dest, await readFile(localPath));
    return dest;
  }

  /** Upload bytes to `path` (relative to the run's artifact root). */
  async uploadArtifact(runId: string, path: string, data: Uint8Array | string): Promise<void> {
    const root = await this.artifactRoot(runId);
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    await this.request('PUT', `mlflow-artifacts/artifacts/${encodePath(`${root}/${checkArtifactPath(path)}`)}`, {
      raw: bytes,
      timeoutMs: 600_000,
    });
  }

  /** Entries directly under `path` (the root when left out). */
  async listArtifacts(runId: string, path?: string): Promise<ArtifactEntry[]> {
    const res = await this.request<{ files?: Array<{ path: string; is_dir: boolean; file_size?: number | string }> }>(
      'GET',
      'mlflow/artifacts/list',
      { query: { run_id: runId, path: path ? checkArtifactPath(path) : undefined } },
    );
    return (res.files ?? []).map((f) => ({
      path: f.path,
      isDir: f.is_dir,
      ...(f.file_size !== undefined ? { fileSize: Number(f.file_size) } : {}),
    }));
  }

  /** Every file under `path`, recursively. */
  async listArtifactsRecursive(runId: string, path?: string): Promise<ArtifactEntry[]> {
    const out: ArtifactEntry[] = [];
    for (const entry of await this.listArtifacts(runId, path)) {
      if (entry.isDir) out.push(...(await this.listArtifactsRecursive(runId, entry.path)));
      else out.push(entry);
    }
    return out;
  }

  async downloadArtifact(runId: string, path: string): Promise<Buffer> {
    const root = await this.artifactRoot(runId);
    return this.request<Buffer>('GET', `mlflow-artifacts/artifacts/${encodePath(`${root}/${checkArtifactPath(path)}`)}`, {
      binary: true,
      timeoutMs: 600_000,
    });
  }

  private rememberArtifactRoot(info: RunInfo): void {
    const root = proxyPath(info.artifactUri);
    if (root) this.artifactRoots.set(info.runId, root);
  }

  private async artifactRoot(runId: string): Promise<string> {
    const cached = this.artifactRoots.get(runId);
    if (cached) return cached;
    const run = await this.getRun(runId);
    const root = proxyPath(run.info.artifactUri);
    if (!root) {
      throw new AmbiqaError(
        `MLflow run ${runId} stores artifacts at ${run.info.artifactUri}, which ambiqa cannot reach through the server`,
        'start the MLflow server with --serve-artifacts (the default) and log to an experiment created by that server (artifact location mlflow-artifacts:/…)',
      );
    }
    this.artifactRoots.set(runId, root);
    return root;
  }

  // ------------------------------------------------------------------ transport

  private async request<T>(method: 'GET' | 'POST' | 'PUT', endpoint: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(`${this.uri}/api/${options.api ?? '2.0'}/${endpoint}`);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { ...this.headers };
    // Not `BodyInit`: that DOM type is missing when tslab compiles this file for a notebook.
    let body: NonNullable<RequestInit['body']> | undefined;
    // The last net before anything leaves the process: every known secret is masked in what is
    // sent (params, tags, metrics keys, artifact bytes), whatever the caller forgot.
    if (options.raw) {
      headers['content-type'] = 'application/octet-stream';
      body = redactBytes(Buffer.from(options.raw.buffer, options.raw.byteOffset, options.raw.byteLength)).data as unknown as NonNullable<RequestInit['body']>;
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = redactText(JSON.stringify(options.body));
    }
    const label = `${endpoint.startsWith('mlflow-artifacts') ? 'artifact ' + method : endpoint}`;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const signal = options.signal ?? this.signal;
    // The project's one retry core (src/common/retry.ts), as the LLM limiter uses it: it honours
    // the caller's abort, and a Retry-After longer than `maxRetryAfterMs` is an error that says
    // so rather than a wait silently cut short.
    const res = await withRetries(
      async (attemptSignal) => {
        let response: Response;
        try {
          response = await fetch(url, { method, headers, body, signal: attemptSignal });
        } catch (error) {
          if (signal?.aborted) throw signal.reason ?? error;
          throw new MlflowUnreachableError(this.uri, networkReason(error, timeoutMs), { cause: error });
        }
        if (response.ok) return response;
        throw await httpError(response, label);
      },
      {
        policy: this.retryPolicy,
        ...(signal ? { signal } : {}),
        attemptTimeoutMs: timeoutMs,
        timeoutError: () => new MlflowUnreachableError(this.uri, `no answer within ${Math.round(timeoutMs / 1000)} s`),
        classify: (error) => {
          // A reset connection may be a server restarting; a refused one is a server that is
          // down, and waiting for it would only delay the buffering that keeps the run going.
          if (error instanceof MlflowUnreachableError) return { retryable: /^(ECONNRESET|UND_ERR_SOCKET)/.test(error.reason) };
          if (error instanceof MlflowHttpError && [429, 500, 502, 503, 504].includes(error.status)) {
            return { retryable: true, ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}) };
          }
          return { retryable: false };
        },
        giveUp: (error, { reason, retryAfterMs }) => {
          if (reason === 'retry-after-too-long' && error instanceof MlflowHttpError) {
            return new MlflowHttpError(
              error.status,
              error.errorCode,
              `${error.serverMessage} (the server asked to wait ${Math.round(retryAfterMs! / 1000)} s before retrying, longer than the ${Math.round(this.retryPolicy.maxRetryAfterMs / 1000)} s ambiqa waits)`,
              label,
            );
          }
          return error;
        },
      },
    );
    if (options.binary) return (await readBounded(res, this.maxArtifactBytes, `${this.uri}: ${label}`)) as T;
    const text = (await readBounded(res, MAX_JSON_BYTES, `${this.uri}: ${endpoint}`)).toString('utf8');
    return (text ? JSON.parse(text) : {}) as T;
  }
}

/**
 * Limits on what a server may make this process hold. A hostile or broken server can answer
 * with a body of any size or a `next_page_token` that never ends; these turn either into one
 * line instead of memory exhaustion or a loop that never stops.
 */
export const MAX_JSON_BYTES = 64 * 1024 * 1024;
export const MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
export const MAX_PAGES = 1_000;

/** The body of `res`, refused once it passes `limit` bytes (read as it streams, not after). */
async function readBounded(res: Response, limit: number, what: string): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  const tooBig = () => new AmbiqaError(`${what}: the server's reply is larger than ${limit} bytes, the most ambiqa reads`, 'is MLFLOW_TRACKING_URI an MLflow server you trust?');
  if (Number.isFinite(declared) && declared > limit) {
    await res.body?.cancel().catch(() => undefined);
    throw tooBig();
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooBig();
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks, total);
}

/** Guards one `next_page_token` loop: refuses a token seen before and more than `MAX_PAGES` pages. */
export function pageGuard(what: string, maxPages = MAX_PAGES): (token: string | undefined) => string | undefined {
  const seen = new Set<string>();
  return (token) => {
    if (token === undefined || token === '') return undefined;
    if (seen.has(token) || seen.size >= maxPages) {
      throw new AmbiqaError(`${what}: the server's page tokens ${seen.has(token) ? 'repeat' : `go on past ${maxPages} pages`}; stopped`, 'is MLFLOW_TRACKING_URI an MLflow server you trust?');
    }
    seen.add(token);
    return token;
  };
}

async function httpError(res: Response, label: string): Promise<MlflowHttpError> {
  const text = await readBounded(res, MAX_ERROR_BYTES, label).then(
    (b) => b.toString('utf8'),
    () => '',
  );
  let errorCode = `HTTP_${res.status}`;
  let message = text.slice(0, 500) || res.statusText;
  try {
    const parsed = JSON.parse(text) as { error_code?: string; message?: string };
    if (parsed.error_code) errorCode = parsed.error_code;
    if (parsed.message) message = parsed.message;
  } catch {
    /* not JSON (a proxy's HTML page, say): keep the text */
  }
  // The server's words reach the terminal: control characters escaped (one line, no escape
  // sequences), at most 500 characters.
  const error = new MlflowHttpError(res.status, escapeControl(errorCode, 80), escapeControl(message, 500), label);
  const retryAfterMs = parseRetryAfter(res.headers);
  if (retryAfterMs !== undefined) error.retryAfterMs = retryAfterMs;
  return error;
}

// --------------------------------------------------------------------------------- helpers

function checkUri(uri: string): string {
  const trimmed = uri.trim().replace(/\/+$/, '');
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw new AmbiqaError(`MLFLOW_TRACKING_URI '${uri}' is not a URL`, 'give the server address, e.g. http://127.0.0.1:5000, or unset it to let the CLI start a local server');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AmbiqaError(
      `MLFLOW_TRACKING_URI '${uri}' is not an HTTP tracking server (ambiqa talks to MLflow over its REST API)`,
      'point it at a running `mlflow server` (http://host:port), or unset it to let the CLI start a local server',
    );
  }
  return trimmed;
}

function authHeaders(): Record<string, string> {
  const token = process.env.MLFLOW_TRACKING_TOKEN;
  if (token) return { authorization: `Bearer ${token}` };
  const user = process.env.MLFLOW_TRACKING_USERNAME;
  const password = process.env.MLFLOW_TRACKING_PASSWORD;
  if (user && password) return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
  return {};
}

function networkReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${Math.round(timeoutMs / 1000)} s`;
  }
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ': ' + cause.message : ''}`;
  return error instanceof Error ? error.message : String(error);
}

function toKeyValues(record: Record<string, string>, limit?: number): KeyValue[] {
  return Object.entries(record).map(([key, value]) => ({ key, value: limit ? truncateValue(String(value), limit) : String(value) }));
}

function normaliseKeyValues(kind: 'param' | 'tag', input: Record<string, string> | KeyValue[] | undefined, limit: number): KeyValue[] {
  const list = Array.isArray(input) ? input : Object.entries(input ?? {}).map(([key, value]) => ({ key, value }));
  return list.map(({ key, value }) => {
    assertValidKey(kind, key);
    return { key, value: truncateValue(String(value), limit) };
  });
}

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

function checkArtifactPath(path: string): string {
  const clean = trimSlashes(path.replace(/\\/g, '/'));
  if (!clean || clean.split('/').some((part) => part === '..' || part === '.' || part === '')) {
    throw new AmbiqaError(`artifact path '${path}' must be a relative path without '.', '..' or empty parts`, "use e.g. 'outputs/results.jsonl'");
  }
  return clean;
}

function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/**
 * The path inside the artifact proxy for a run's artifact URI: `mlflow-artifacts:/1/<run>/artifacts`
 * (or `mlflow-artifacts://host:port/1/…`) → `1/<run>/artifacts`; an http(s) URI pointing at the
 * proxy works too. Anything else (s3://, file:) is not reachable through the server.
 */
export function proxyPath(artifactUri: string): string | undefined {
  const m = /^mlflow-artifacts:(?:\/\/[^/]*)?\/*(.*)$/.exec(artifactUri);
  if (m) return trimSlashes(m[1]);
  const marker = '/api/2.0/mlflow-artifacts/artifacts/';
  const i = artifactUri.indexOf(marker);
  if (/^https?:/.test(artifactUri) && i >= 0) return trimSlashes(decodeURIComponent(artifactUri.slice(i + marker.length)));
  return undefined;
}

// Raw JSON shapes as the server sends them.
interface RawExperiment {
  experiment_id: string;
  name: string;
  artifact_location: string;
  lifecycle_stage: 'active' | 'deleted';
  tags?: KeyValue[];
}
interface RawRunInfo {
  run_id: string;
  experiment_id: string;
  run_name?: string;
  status: RunInfo['status'];
  start_time: number | string;
  end_time?: number | string;
  artifact_uri: string;
  lifecycle_stage: 'active' | 'deleted';
}
interface RawMetric {
  key: string;
  value: number | string;
  timestamp: number | string;
  step?: number | string;
}
interface RawRun {
  info: RawRunInfo;
  data?: { metrics?: RawMetric[]; params?: KeyValue[]; tags?: KeyValue[] };
}

function toExperiment(raw: RawExperiment): Experiment {
  return {
    experimentId: raw.experiment_id,
    name: raw.name,
    artifactLocation: raw.artifact_location,
    lifecycleStage: raw.lifecycle_stage,
    tags: Object.fromEntries((raw.tags ?? []).map((t) => [t.key, t.value])),
  };
}

function toRunInfo(raw: RawRunInfo): RunInfo {
  return {
    runId: raw.run_id,
    experimentId: raw.experiment_id,
    runName: raw.run_name ?? '',
    status: raw.status,
    startTime: Number(raw.start_time),
    ...(raw.end_time !== undefined && raw.end_time !== null ? { endTime: Number(raw.end_time) } : {}),
    artifactUri: raw.artifact_uri,
    lifecycleStage: raw.lifecycle_stage,
  };
}

function toMetric(raw: RawMetric): MetricRecord {
  return { key: raw.key, value: decodeMetricValue(raw.value), timestamp: Number(raw.timestamp), step: Number(raw.step ?? 0) };
}

function toRun(raw: RawRun): Run {
  const data = raw.data ?? {};
  return {
    info: toRunInfo(raw.info),
    metrics: Object.fromEntries((data.metrics ?? []).map((m) => [m.key, toMetric(m)])),
    params: Object.fromEntries((data.params ?? []).map((p) => [p.key, p.value])),
    tags: Object.fromEntries((data.tags ?? []).map((t) => [t.key, t.value])),
  };
}
