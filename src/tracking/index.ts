import { AmbiqaError } from '../errors';
import { resolveTrackingUri } from './server';
import { MlflowTracking, ResilientTracking } from './tracking';

/**
 * Tracking to MLflow. Most callers need only `openTracking`:
 *
 *   const tracking = await openTracking({ bufferDir: runDir });
 *   const run = await tracking.startRun({ experimentName: 'asqa', runName: 'toc-dev' });
 *   await run.logParams(redactSecrets(flattenParams(config)));
 *   await run.logMetrics({ str_em: 0.41 }, step);
 *   await run.logArtifact(join(runDir, 'results.jsonl'));
 *   await run.finish('FINISHED');
 */

export * from './types';
export { MlflowClient, MlflowHttpError, MlflowUnreachableError, isTransient, isUnreachable, proxyPath } from './client';
export type { ArtifactEntry, Experiment, Run, RunInfo, MlflowClientOptions, SearchRunsRequest } from './client';
export { planLogBatches, DEFAULT_BATCH_LIMITS } from './batch';
export type { MetricRecord, LogBatch, BatchLimits } from './batch';
export { MLFLOW_LIMITS, sanitizeKey, truncateValue } from './limits';
export { flattenParams, redactSecrets, redactText, redactDeep, registerSecret, isSecretKey, knownSecrets, REDACTED } from './redact';
export { MlflowTracking, ResilientTracking, MlflowRunTracker } from './tracking';
export type { TrackingOptions, ResilientTrackingOptions } from './tracking';
export { judgeMetricName, judgeMetricsForMlflow } from './judge-metrics';
export { syncDirectory, syncDirectories, PendingDependencyError } from './sync';
export type { SyncResult } from './sync';
export { JOURNAL_FILE, SYNC_STATE_FILE, isPendingRunId, hasJournal } from './journal';
export { resolveTrackingUri, startLocalServer, stopLocalServer, serverCommand, serverEnv } from './server';
export type { LocalServer, ResolvedTracking, StartServerOptions } from './server';

export interface OpenTrackingOptions {
  /**
   * The run directory. With it, an unreachable server does not stop the run: operations are
   * kept in `<bufferDir>/mlflow-pending.jsonl` for `ambiqa sync`. Without it, errors propagate.
   */
  bufferDir?: string;
  /** Skip resolution (MLFLOW_TRACKING_URI / local server) and use this server. */
  uri?: string;
  notify?: (message: string) => void;
}

/**
 * Tracking against MLFLOW_TRACKING_URI, or a local server started for this process. With a
 * `bufferDir`, even a local server that cannot start (no venv yet, a broken install) does not
 * stop the run: it is logged to the journal, with the reason printed once.
 */
export async function openTracking(options: OpenTrackingOptions = {}): Promise<MlflowTracking> {
  const notify = options.notify ? { notify: options.notify } : {};
  let uri = options.uri;
  if (!uri) {
    try {
      uri = (await resolveTrackingUri(notify)).uri;
    } catch (error) {
      if (!options.bufferDir || !(error instanceof AmbiqaError)) throw error;
      // Any valid address does for the client: an offline tracking never sends a request.
      return new ResilientTracking({ uri: 'http://127.0.0.1:1', bufferDir: options.bufferDir, offline: error, ...notify });
    }
  }
  return options.bufferDir ? new ResilientTracking({ uri, bufferDir: options.bufferDir, ...notify }) : new MlflowTracking({ uri, ...notify });
}
