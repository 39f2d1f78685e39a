/**
 * The tracking contract the experiment runner uses. `MlflowClient` (client.ts) is the low-level
 * REST client; these interfaces are the high-level view, implemented live against MLflow and by
 * an on-disk buffer that `ambiqa sync` uploads later when the server was unreachable.
 */

import type { Trace } from '../trace/types';

export type RunStatus = 'RUNNING' | 'FINISHED' | 'FAILED' | 'KILLED';
export type ParamValue = string | number | boolean;

export interface StartRunOptions {
  experimentName: string;
  runName: string;
  tags?: Record<string, string>;
  /** Makes this a nested (child) run: sets the `mlflow.parentRunId` tag. */
  parentRunId?: string;
  /** Re-open this existing run instead of creating one (resume). */
  resumeRunId?: string;
  /**
   * Where the resilient tracking keeps this run's operations while the server is unreachable
   * (`mlflow-pending.jsonl`, uploaded later by `ambiqa sync <dir>`). Defaults to the directory
   * the tracking was created for; ignored by the live-only tracking.
   */
  bufferDir?: string;
}

export interface RunTracker {
  readonly runId: string;
  readonly experimentId: string;
  /** Params are immutable in MLflow: re-logging the same value is fine, a different one is an error. */
  logParams(params: Record<string, ParamValue>): Promise<void>;
  logMetrics(metrics: Record<string, number>, step?: number): Promise<void>;
  setTags(tags: Record<string, string>): Promise<void>;
  /** Upload a file under the run's artifact root, at `artifactPath/<basename>` when given. */
  logArtifact(localPath: string, artifactPath?: string): Promise<void>;
  finish(status: Exclude<RunStatus, 'RUNNING'>): Promise<void>;
  /**
   * One finished question for MLflow Tracing. Returns at once: questions are sent in batches in
   * the background (buffered for `ambiqa sync` while the server is down) and `finish` waits for them.
   */
  logQuestionTrace?(question: QuestionTrace): void;
  /** Start sending the question traces collected so far, without waiting for them. */
  startFlushingQuestionTraces?(): void;
  /** Datasets the run evaluated, for the run page's Datasets box. */
  logInputs?(datasets: DatasetInput[]): Promise<void>;
}

/** A dataset as MLflow's log-inputs takes it (the run page's Datasets box). */
export interface DatasetInput {
  name: string;
  digest: string;
  /** e.g. `local`. */
  sourceType: string;
  /** JSON, e.g. `{"uri": "data/asqa/dev.jsonl"}`. */
  source: string;
  schema?: string;
  /** JSON, e.g. `{"num_rows": 20, "split": "dev"}`. */
  profile?: string;
  /** `mlflow.data.context`: training, eval, … */
  context?: string;
  tags?: Record<string, string>;
}


/** A question's trace with its per-question metric values (attached to the MLflow trace as feedback). */
export interface QuestionTrace {
  trace: Trace;
  metrics: Record<string, number>;
  /** When the question finished (ms since the epoch); now when left out. */
  endedAtMs?: number;
}

export interface Tracking {
  startRun(options: StartRunOptions): Promise<RunTracker>;
  /** UI address for people, e.g. `http://127.0.0.1:5000/#/experiments/1/runs/<id>`. */
  runUrl(experimentId: string, runId: string): string;
}
