/**
 * What a run session tells the parts that keep its record: it starts, each question ends (a row,
 * with its trace when it was answered), the session ends. The loop (orchestrate.ts) answers
 * questions and emits; everything that writes, logs or shows subscribes here, in one list
 * (`runSession` in runner.ts): the run files, run.json, the progress line, the figures and
 * MLflow. Inspect AI calls the same role a `Recorder` (log_start / log_sample / log_finish).
 *
 * Observers are called one after the other, in list order, and awaited: the run files are
 * written (and fsynced) before run.json says a question is done, and both before MLflow
 * uploads them at the end.
 */
import type { ExperimentConfig } from './config';
import type { UsageTotals } from '../llm/types';
import type { ExampleResult, RunMetrics } from '../run-files';
import type { Trace } from '../trace/types';
import type { Example } from '../datasets/types';
import type { RunTracker } from '../tracking/types';

export interface IndexedExample {
  example: Example;
  /** Position in the run's unsharded selection; results and merged shards are ordered by it. */
  index: number;
}

/**
 * Draws a finished run's (or sweep's) figures from its directory and logs them to its MLflow run
 * (`logRunFigures` in src/report, wired in environment.ts).
 */
export type FigureLogger = (dir: string, tracker: RunTracker) => Promise<unknown>;

/** The state a progress line shows (progress.ts draws it). */
export interface ProgressState {
  /** Rows done and expected: questions, or under `trials: k` (question, trial) pairs. */
  done: number;
  total: number;
  /** `trials: k` (k > 1): the line says the total is questions × trials. */
  trials?: number;
  /** Examples finished in earlier sessions of a resumed run (not used for the ETA). */
  resumed: number;
  errors: number;
  /** LLM usage of this session so far (calls finished, cache hits included). */
  usage: UsageTotals;
  /** The model costs nothing (the embedded one): the line says so beside its $0. */
  costFree?: boolean;
}

export interface ProgressSink {
  update(state: ProgressState): void;
  finish(state: ProgressState, note?: string): void;
}

/**
 * Where a run session runs: who stops it, where its words go, what it shows. One object from the command (or notebook call) down to the session, instead of each
 * layer passing the pieces on one by one.
 */
export interface RunEnvironment {
  /** Ctrl-C, SIGTERM, a kernel interrupt: stops the session cleanly (KILLED, resumable). */
  signal?: AbortSignal;
  /** Trouble that does not stop the run (MLflow down, a repaired file). Default: stderr, `warning: …`. */
  warn?: (message: string) => void;
  /** What is fine but worth saying (the lock, the preflight's notes). Default: stderr, `note: …`. */
  note?: (message: string) => void;
  /** A live progress line per run (the label is the run's or sweep point's name); absent: none. */
  progress?: (label: string) => ProgressSink;
  /** MLflow tags added to every run of this environment (a shard's launch group). */
  tags?: Record<string, string>;
  /**
   * Draws a finished run's (or sweep's) figures into its MLflow run when it is tracked; absent: no
   * figures. Set in one place, `commandEnvironment` (environment.ts), for the CLI and notebooks.
   */
  figures?: FigureLogger;
}

export function warnOf(env: RunEnvironment | undefined): (message: string) => void {
  return env?.warn ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
}

export function noteOf(env: RunEnvironment | undefined): (message: string) => void {
  return env?.note ?? ((m: string) => process.stderr.write(`note: ${m}\n`));
}

/** What every observer learns when a session starts (before the judge calibration and the first question). */
export interface RunStart {
  config: ExperimentConfig;
  runDir: string;
  resume: boolean;
  /** This shard's examples in evaluation order. */
  selection: readonly IndexedExample[];
  /** Answers per question (`trials: k`; 1 without trials): the run holds selection × trials rows. */
  trials: number;
  /** Rows finished (without error) in earlier sessions, kept as they are. */
  resumedCount: number;
  /** 1 for a fresh run, more for a resumed one. */
  session: number;
  /** This session's LLM usage so far (the calibration's judgments included), read live. */
  usage(): UsageTotals;
  /** The model costs nothing (the embedded one). */
  costFree: boolean;
}

/** How a session ended: with its rows and metrics, or by an unexpected error (a scorer bug, a full disk). */
export type RunEnd =
  | {
      status: 'FINISHED' | 'KILLED' | 'FAILED';
      /**
       * The latest row of each selected example (under `trials: k`, of each of its trials) answered
       * in any session, in evaluation order (a question's trials in trial order).
       */
      results: ExampleResult[];
      /** The trace of each answered row of `results`, in the same order. */
      traces: Trace[];
      metrics: RunMetrics;
      /** This session's usage. */
      usage: UsageTotals;
      /** The run folder's files MLflow keeps (written by then; those missing are skipped). */
      files: string[];
      /** Why the session gave up (a run of errors). */
      error?: string;
      /** The cost cap's message when it stopped the session. */
      stoppedBy?: string;
    }
  | { status: 'CRASHED'; error: unknown };

/** One subscriber of a run session. Every hook is optional. */
export interface RunObserver {
  /** For messages: which observer failed. */
  readonly name: string;
  onStart?(run: RunStart): void | Promise<void>;
  /**
   * A question (under `trials: k`, one trial of it: `row.trial`) is done: answered (`trace` set,
   * `row.error` absent) or failed (`row.error` set, no trace). `usage` is this session's so far. Not called for a question abandoned by an interrupt.
   */
  onQuestion?(row: ExampleResult, trace: Trace | undefined, usage: UsageTotals): void | Promise<void>;
  onEnd?(end: RunEnd): void | Promise<void>;
}

/** Calls `hook` of each observer in turn, in list order, awaiting each. */
export async function emit<K extends keyof Omit<RunObserver, 'name'>>(
  observers: readonly RunObserver[],
  hook: K,
  ...args: Parameters<NonNullable<RunObserver[K]>>
): Promise<void> {
  for (const observer of observers) {
    const fn = observer[hook] as ((...a: typeof args) => void | Promise<void>) | undefined;
    if (fn) await fn.apply(observer, args);
  }
}
