import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { basename, join } from 'node:path';
import { AmbiqaError, describeError } from '../errors';
import type { MetricRecord } from './batch';
import { MlflowClient, MlflowHttpError, isTransient } from './client';
import {
  Journal,
  PENDING_EXPERIMENT,
  isPendingRunId,
  newPendingRunId,
  pendingRefs,
  type JournalOp,
} from './journal';
import { sanitizeKey } from './limits';
import { DEFAULT_FIELD_LIMITS, TracesUnsupportedError, traceIdFor, type TraceExportItem } from './otel-export';
import { traceKey } from '../run-files';
import { knownSecrets, redactBytes, redactDeep, redactSecrets, redactText } from './redact';
import { resolvedPendingRun, syncDirectory } from './sync';
import { sendTraceSpans } from './trace-upload';
import type { DatasetInput } from './types';
import type { ParamValue, QuestionTrace, RunStatus, RunTracker, StartRunOptions, Tracking } from './types';

/**
 * The two `Tracking` implementations the experiment runner uses:
 *
 * - `MlflowTracking` talks to the server and nothing else; an unreachable server is an error.
 * - `ResilientTracking` does the same while the server answers, and from the first operation
 *   that cannot reach it (at start or in the middle of a run) appends every operation to the run
 *   directory's journal instead, so that the run completes and `ambiqa sync` uploads it later.
 *
 * Both redact secrets from params, tags and artifacts before anything leaves the process (or
 * reaches the journal), and both send one run's operations strictly in order.
 */

export interface TrackingOptions {
  /** The tracking server; `resolveTrackingUri()` (server.ts) finds or starts one. */
  uri: string;
  /** Export each question's trace to MLflow Tracing (default true). */
  traces?: boolean;
  /** Questions per OTLP request (default 10); a partial batch goes after `traceFlushMs`. */
  traceBatchSize?: number;
  traceFlushMs?: number;
  /** Reuse a configured client (tests, custom headers); made from `uri` otherwise. */
  client?: MlflowClient;
  /** Where messages for people go (default: stderr). */
  notify?: (message: string) => void;
}

export interface ResilientTrackingOptions extends TrackingOptions {
  /** The run directory: the journal goes here unless `StartRunOptions.bufferDir` says otherwise. */
  bufferDir: string;
  /**
   * Why there is no server at all (e.g. the local one could not start): every run goes straight
   * to the journal, and this is printed once.
   */
  offline?: Error;
}

type FinalStatus = Exclude<RunStatus, 'RUNNING'>;

export class MlflowTracking implements Tracking {
  readonly client: MlflowClient;
  protected readonly notify: (message: string) => void;
  private readonly experiments = new Map<string, string>();
  protected readonly traceOptions: TraceOptions;

  constructor(options: TrackingOptions) {
    this.client = options.client ?? new MlflowClient(options.uri);
    this.notify = options.notify ?? ((message) => console.error(message));
    this.traceOptions = {
      enabled: options.traces ?? true,
      batchSize: options.traceBatchSize ?? 10,
      flushMs: options.traceFlushMs ?? 1000,
      warned: { value: false },
    };
  }

  get uri(): string {
    return this.client.uri;
  }

  async startRun(options: StartRunOptions): Promise<MlflowRunTracker> {
    return this.startLive(options);
  }

  runUrl(experimentId: string, runId: string): string {
    if (isPendingRunId(runId) || experimentId === PENDING_EXPERIMENT) {
      return `${this.uri}/#/experiments (run ${runId} is waiting for \`npx ambiqa sync\`)`;
    }
    return `${this.uri}/#/experiments/${experimentId}/runs/${runId}`;
  }

  protected async experimentId(name: string): Promise<string> {
    let id = this.experiments.get(name);
    if (!id) {
      id = await this.client.getOrCreateExperiment(name);
      this.experiments.set(name, id);
    }
    return id;
  }

  protected async startLive(options: StartRunOptions, journal?: Journal): Promise<MlflowRunTracker> {
    const tags = prepareTags(options.tags ?? {});
    if (options.parentRunId) tags['mlflow.parentRunId'] = options.parentRunId;
    if (options.resumeRunId) {
      let run;
      try {
        run = await this.client.getRun(options.resumeRunId);
      } catch (error) {
        if (error instanceof MlflowHttpError && error.errorCode === 'RESOURCE_DOES_NOT_EXIST') {
          throw new AmbiqaError(
            `cannot resume MLflow run ${options.resumeRunId}: the server at ${this.uri} has no such run`,
            'resume against the server the run was started on (MLFLOW_TRACKING_URI), or start a fresh run without --resume',
          );
        }
        throw error;
      }
      await this.client.updateRun(run.info.runId, { status: 'RUNNING' });
      if (Object.keys(tags).length > 0) await this.client.setTags(run.info.runId, tags);
      return new MlflowRunTracker(this.context(journal, options), 'live', run.info.runId, run.info.experimentId);
    }
    const experimentId = await this.experimentId(options.experimentName);
    const run = await this.client.createRun({
      experimentId,
      runName: options.runName,
      tags: { ...defaultTags(), ...tags },
    });
    return new MlflowRunTracker(this.context(journal, options), 'live', run.info.runId, experimentId);
  }

  protected context(journal: Journal | undefined, options: StartRunOptions): TrackerContext {
    return { client: this.client, journal, notify: this.notify, experimentName: options.experimentName, runName: options.runName, traces: this.traceOptions };
  }
}

export class ResilientTracking extends MlflowTracking {
  readonly bufferDir: string;
  private readonly journals = new Map<string, Journal>();
  private warned = false;
  private readonly offline?: Error;

  constructor(options: ResilientTrackingOptions) {
    super(options);
    this.bufferDir = options.bufferDir;
    this.offline = options.offline;
  }

  override async startRun(options: StartRunOptions): Promise<MlflowRunTracker> {
    const dir = options.bufferDir ?? this.bufferDir;
    const journal = this.journalFor(dir);
    let resumeRunId = options.resumeRunId;

    // A run first started while the server was down: upload what it logged so far, then carry
    // on with the real run; if the server is still down, keep appending under the same id.
    if (resumeRunId && isPendingRunId(resumeRunId)) {
      try {
        if (this.offline) throw this.offline;
        await syncDirectory(dir, { client: this.client, notify: () => {} });
      } catch (error) {
        if (!isTransient(error) && error !== this.offline) throw error;
        this.warnOffline(error, journal);
        journal.append({ op: 'reopen', key: resumeRunId });
        const tags = prepareTags(options.tags ?? {});
        if (Object.keys(tags).length > 0) journal.append({ op: 'tags', key: resumeRunId, tags });
        return new MlflowRunTracker(this.context(journal, options), 'buffered', resumeRunId, PENDING_EXPERIMENT);
      }
      const synced = resolvedPendingRun(resumeRunId);
      if (!synced) {
        throw new AmbiqaError(
          `cannot resume run ${resumeRunId}: it was started offline but its journal is not in ${dir}`,
          'resume from the run directory that holds its mlflow-pending.jsonl, or start a fresh run',
        );
      }
      resumeRunId = synced.runId;
    }

    // A parent that is itself waiting for sync: the child has to wait too, or it would point at
    // an id the server has never seen.
    let parentRunId = options.parentRunId;
    if (parentRunId && isPendingRunId(parentRunId)) parentRunId = resolvedPendingRun(parentRunId)?.runId ?? parentRunId;
    const runOptions = { ...options, ...(resumeRunId ? { resumeRunId } : {}), ...(parentRunId ? { parentRunId } : {}) };
    if (this.offline) {
      this.warnOffline(this.offline, journal);
    } else if (!isPendingRunId(parentRunId)) {
      try {
        return await this.startLive(runOptions, journal);
      } catch (error) {
        if (!isTransient(error)) throw error;
        this.warnOffline(error, journal);
      }
    }

    const tags = prepareTags(options.tags ?? {});
    if (resumeRunId) {
      journal.append({ op: 'attach', key: resumeRunId, experimentName: options.experimentName, reopen: true });
      if (parentRunId) tags['mlflow.parentRunId'] = parentRunId;
      if (Object.keys(tags).length > 0) journal.append({ op: 'tags', key: resumeRunId, tags });
      return new MlflowRunTracker(this.context(journal, options), 'buffered', resumeRunId, PENDING_EXPERIMENT);
    }
    const key = newPendingRunId();
    journal.append({
      op: 'start',
      key,
      experimentName: options.experimentName,
      runName: options.runName,
      tags: { ...defaultTags(), ...tags },
      ...(parentRunId ? { parentRunId } : {}),
      startTime: Date.now(),
    });
    return new MlflowRunTracker(this.context(journal, options), 'buffered', key, PENDING_EXPERIMENT);
  }

  private journalFor(dir: string): Journal {
    let journal = this.journals.get(dir);
    if (!journal) {
      journal = new Journal(dir);
      this.journals.set(dir, journal);
    }
    return journal;
  }

  private warnOffline(error: unknown, journal: Journal): void {
    if (this.warned) return;
    this.warned = true;
    this.notify(offlineMessage(error, journal));
  }
}

function offlineMessage(error: unknown, journal: Journal): string {
  const why = describeError(error);
  return `${why}\n  the run continues; what it logs is kept in ${journal.path}\n  upload it later with: npx ambiqa sync ${journal.dir}`;
}

// ---------------------------------------------------------------------------------- the tracker

interface TraceOptions {
  enabled: boolean;
  batchSize: number;
  flushMs: number;
  /** Shared by the runs of one tracking: an unsupported server is reported once, not per run. */
  warned: { value: boolean };
}

interface TrackerContext {
  traces: TraceOptions;
  client: MlflowClient;
  /** Present for the resilient tracking: where operations go once the server is unreachable. */
  journal?: Journal;
  notify: (message: string) => void;
  experimentName: string;
  runName: string;
}

/**
 * One run. Operations are queued so they reach the server (or the journal) in the order they
 * were called even when callers do not await them; a failed operation rejects its own promise
 * and leaves the queue running.
 */
export class MlflowRunTracker implements RunTracker {
  private queue: Promise<void> = Promise.resolve();
  private readonly params = new Map<string, string>();
  private bufferedOps = 0;
  private pendingTraces: TraceExportItem[] = [];
  private traceTimer: NodeJS.Timeout | undefined;
  private traceSends: Promise<void>[] = [];
  private tracesOff = false;

  constructor(
    private readonly ctx: TrackerContext,
    private mode: 'live' | 'buffered',
    readonly runId: string,
    private experimentIdValue: string,
  ) {}

  get experimentId(): string {
    return this.experimentIdValue;
  }

  /** 'buffered' once the server was unreachable: everything since went to the journal. */
  get state(): 'live' | 'buffered' {
    return this.mode;
  }

  get journalPath(): string | undefined {
    return this.ctx.journal?.path;
  }

  async logParams(params: Record<string, ParamValue>): Promise<void> {
    const prepared = this.checkParams(prepareParams(params));
    if (Object.keys(prepared).length === 0) return;
    await this.enqueue(
      () => this.ctx.client.logBatch(this.runId, { params: prepared }),
      () => ({ op: 'params', key: this.runId, params: prepared }),
    );
  }

  async logMetrics(metrics: Record<string, number>, step = 0): Promise<void> {
    const timestamp = Date.now();
    const records: MetricRecord[] = Object.entries(metrics).map(([key, value]) => ({
      key: sanitizeKey(key),
      value: Number(value),
      step: Math.round(step),
      timestamp,
    }));
    if (records.length === 0) return;
    await this.enqueue(
      () => this.ctx.client.logBatch(this.runId, { metrics: records }),
      () => ({ op: 'metrics', key: this.runId, metrics: records }),
    );
  }

  async setTags(tags: Record<string, string>): Promise<void> {
    const prepared = prepareTags(tags);
    if (Object.keys(prepared).length === 0) return;
    await this.enqueue(
      async () => {
        // A tag naming a run that exists only in a journal (merge's mlflow.parentRunId, say)
        // must wait for sync to learn the real id.
        const mapped = mapPendingValues(prepared);
        if (!mapped) throw new NeedsJournal();
        await this.ctx.client.logBatch(this.runId, { tags: mapped });
      },
      () => ({ op: 'tags', key: this.runId, tags: prepared }),
    );
  }

  /** A file goes to `artifactPath/<name>`; a directory's files to `artifactPath/<dir name>/…`. */
  async logArtifact(localPath: string, artifactPath?: string): Promise<void> {
    const prefix = artifactPath ? `${artifactPath.replace(/^\/+|\/+$/g, '')}/` : '';
    const files = listFiles(localPath).map((f) => ({ path: f.path, dest: `${prefix}${f.rel}` }));
    await Promise.all(
      files.map(({ path, dest }) =>
        this.enqueue(
          async () => {
            const { data, replaced } = redactBytes(await readFile(path), knownSecrets());
            if (replaced > 0) this.ctx.notify(`ambiqa: masked ${replaced} secret value(s) in ${path} before uploading it`);
            await this.ctx.client.uploadArtifact(this.runId, dest, data);
          },
          () => ({
            op: 'artifact',
            key: this.runId,
            file: this.ctx.journal!.keepFile(path, (data) => redactBytes(data, knownSecrets()).data),
            artifactPath: dest,
          }),
        ),
      ),
    );
  }

  logQuestionTrace(question: QuestionTrace): void {
    if (!this.ctx.traces.enabled || this.tracesOff) return;
    this.pendingTraces.push({
      // Under `trials: k` a question has k traces: the trial is part of the id (trial 0's id is the
      // question's, as before trials existed).
      traceIdHex: traceIdFor(this.runId, traceKey(question.trace)),
      trace: question.trace,
      metrics: question.metrics,
      endedAtMs: question.endedAtMs ?? Date.now(),
    });
    if (this.pendingTraces.length >= this.ctx.traces.batchSize) this.flushTraces();
    else if (!this.traceTimer) {
      this.traceTimer = setTimeout(() => this.flushTraces(), this.ctx.traces.flushMs);
      this.traceTimer.unref();
    }
  }

  async logInputs(datasets: DatasetInput[]): Promise<void> {
    if (datasets.length === 0) return;
    const clean = datasets.map((d) => ({ ...d, source: redactText(d.source), name: redactText(d.name) }));
    await this.enqueue(
      () => this.ctx.client.logInputs(this.runId, clean),
      () => ({ op: 'inputs', key: this.runId, datasets: clean }),
    );
  }

  /** Send the questions collected so far (in the background; `finish` waits for every send). */
  private flushTraces(): void {
    if (this.traceTimer) clearTimeout(this.traceTimer);
    this.traceTimer = undefined;
    const items = this.pendingTraces;
    this.pendingTraces = [];
    if (items.length === 0) return;
    const send = this.enqueue(
      async () => {
        if (this.tracesOff) return;
        try {
          const { feedback } = await sendTraceSpans(items, { client: this.ctx.client, experimentId: this.experimentIdValue, runId: this.runId, notify: this.ctx.notify, limits: DEFAULT_FIELD_LIMITS });
          // Outside the queue: the feedback requests overlap with whatever the run logs next.
          this.traceSends.push(
            feedback().catch((error) =>
              this.ctx.notify(`warning: could not attach metric feedback to ${items.length} MLflow trace(s) (${describeError(error).split('\n')[0]}); the values are on each trace's root span (ambiqa.metric.*) and in results.jsonl`),
            ),
          );
        } catch (error) {
          if (!(error instanceof TracesUnsupportedError)) throw error;
          // Not a reason to stop the run or buffer: the server will never take them. They are in traces.jsonl.
          this.tracesOff = true;
          if (!this.ctx.traces.warned.value) {
            this.ctx.traces.warned.value = true;
            this.ctx.notify(`warning: ${error.message}\n  ${error.hint ?? ''}`);
          }
        }
      },
      () => ({ op: 'traces', key: this.runId, count: items.length, file: this.ctx.journal!.keepData('traces.json', JSON.stringify(redactItems(items))) }),
    ).catch((error) => this.ctx.notify(`warning: could not send ${items.length} question trace(s) to MLflow: ${describeError(error)}`));
    this.traceSends.push(send);
  }

  /** Wait until every question handed to `logQuestionTrace` was sent or buffered. */
  async flushQuestionTraces(): Promise<void> {
    this.flushTraces();
    // Sends add their feedback steps to the list while they run: wait until it stays empty.
    while (this.traceSends.length > 0) {
      const sends = this.traceSends;
      this.traceSends = [];
      await Promise.all(sends);
    }
  }

  /** Send what is collected now without waiting (the run is about to log its end; this overlaps with it). */
  startFlushingQuestionTraces(): void {
    this.flushTraces();
  }

  async finish(status: FinalStatus): Promise<void> {
    await this.flushQuestionTraces();
    const endTime = Date.now();
    await this.enqueue(
      async () => {
        await this.ctx.client.finishRun(this.runId, status, endTime);
      },
      () => ({ op: 'finish', key: this.runId, status, endTime }),
    );
    if (this.mode === 'buffered' && this.ctx.journal) {
      this.ctx.notify(
        `MLflow run '${this.ctx.runName}' (${status}) kept offline: ${this.bufferedOps} operation(s) in ${this.ctx.journal.path}\n` +
          `  upload with: npx ambiqa sync ${this.ctx.journal.dir}`,
      );
    }
  }

  /** Wait for every queued operation (finish() already does). */
  async flush(): Promise<void> {
    await this.queue;
  }

  private enqueue(live: () => Promise<unknown>, offline: () => JournalOp): Promise<void> {
    const next = this.queue.then(async () => {
      if (this.mode === 'live') {
        try {
          await live();
          return;
        } catch (error) {
          const journal = this.ctx.journal;
          if (!journal || !(error instanceof NeedsJournal || isTransient(error))) throw error;
          this.mode = 'buffered';
          // The run exists on the server; sync continues it from here.
          journal.append({ op: 'attach', key: this.runId, experimentName: this.ctx.experimentName, experimentId: this.experimentIdValue, reopen: false });
          if (!(error instanceof NeedsJournal)) this.ctx.notify(offlineMessage(error, journal));
        }
      }
      this.ctx.journal!.append(offline());
      this.bufferedOps++;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** MLflow params are write-once; catch a changed value here, where the caller can see it. */
  private checkParams(params: Record<string, string>): Record<string, string> {
    const fresh: Record<string, string> = {};
    for (const [key, value] of Object.entries(params)) {
      const before = this.params.get(key);
      if (before === undefined) {
        this.params.set(key, value);
        fresh[key] = value;
      } else if (before !== value) {
        throw new AmbiqaError(
          `MLflow param '${key}' was already logged as '${before.slice(0, 80)}' and cannot change to '${value.slice(0, 80)}'`,
          'params are immutable in MLflow: log the new value under another key, or as a tag',
        );
      }
    }
    return fresh;
  }
}

/** What goes into the journal: items with every string already redacted, as sent live. */
function redactItems(items: TraceExportItem[]): TraceExportItem[] {
  return redactDeep(items, { secrets: knownSecrets() });
}

class NeedsJournal extends AmbiqaError {
  constructor() {
    super('a tag refers to a run that exists only in an offline journal (pending-…)', 'sync that run first: npx ambiqa sync <its run dir>');
  }
}

/** The files to upload for a path: itself, or everything below it with paths relative to its parent. */
function listFiles(localPath: string): Array<{ path: string; rel: string }> {
  let stat;
  try {
    stat = statSync(localPath);
  } catch {
    throw new AmbiqaError(`cannot log artifact ${localPath}: no such file or directory`, 'log a file that exists (paths are relative to the working directory)');
  }
  if (!stat.isDirectory()) return [{ path: localPath, rel: basename(localPath) }];
  const out: Array<{ path: string; rel: string }> = [];
  const walk = (dir: string, rel: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full, `${rel}/${entry.name}`);
      else if (entry.isFile()) out.push({ path: full, rel: `${rel}/${entry.name}` });
    }
  };
  walk(localPath, basename(localPath));
  return out;
}

// ---------------------------------------------------------------------------------- preparation

/** Param values as strings, keys made valid, secrets masked. */
export function prepareParams(params: Record<string, ParamValue>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(redactSecrets(params))) {
    if (value === undefined || value === null) continue;
    out[sanitizeKey(key)] = String(value);
  }
  return out;
}

export function prepareTags(tags: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(redactSecrets(tags))) {
    if (value === undefined || value === null) continue;
    out[sanitizeKey(key)] = String(value);
  }
  return out;
}

/** Tags with pending run ids replaced by real ones; undefined when one is not known yet. */
function mapPendingValues(tags: Record<string, string>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(tags)) {
    let mapped = value;
    for (const ref of pendingRefs(value)) {
      const real = resolvedPendingRun(ref);
      if (!real) return undefined;
      mapped = mapped.split(ref).join(real.runId);
    }
    out[key] = mapped;
  }
  return out;
}

function defaultTags(): Record<string, string> {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    /* no passwd entry in some containers */
  }
  return { 'mlflow.source.name': 'ambiqa', 'mlflow.source.type': 'LOCAL', 'mlflow.user': user };
}
