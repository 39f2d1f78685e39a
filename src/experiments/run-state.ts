import { basename, resolve } from 'node:path';
import type { Example } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { ExperimentConfig } from './config';
import type { UsageTotals } from '../llm/types';
import { type ExampleResult, readResults, rowKey } from '../run-files';
import { readRunJson, writeRunJson, type RunState } from '../run-files';
import type { IndexedExample, RunObserver } from './observers';
import { parseShard, selectShard } from './shard';

export type { IndexedExample } from './observers';

/**
 * One piece of work: a question, and under `trials: k` which of its k answers (`trial` absent in a
 * run without trials, whose rows carry none).
 */
export interface WorkItem extends IndexedExample {
  trial?: number;
}

/** What this session must answer, given the shard, the trials and what earlier sessions finished. */
export interface WorkPlan {
  /** This shard's examples (questions) in evaluation order. */
  selection: IndexedExample[];
  /** Answers per question (`trials: k`; 1 without trials). */
  trials: number;
  /** Rows the run will hold when finished: questions × trials. */
  total: number;
  /** Rows finished without error in earlier sessions, by `rowKey` (kept as they are). */
  finished: Map<string, ExampleResult>;
  /**
   * The latest row of each (question, trial) of the run in earlier sessions, failed ones included,
   * by `rowKey`: the one read of `results.jsonl` in a session (the session keeps its rows in
   * memory from here).
   */
  earlier: Map<string, ExampleResult>;
  /**
   * (question, trial) pairs to answer now (failed ones are tried again), trial by trial: an
   * interrupted run holds every question's first answer before any question's second.
   */
  todo: WorkItem[];
  /** Rows finished in earlier sessions. */
  resumedCount: number;
}

export function planWork(config: ExperimentConfig, examples: Example[], resultsPath: string): WorkPlan {
  const shard = config.shard ? parseShard(config.shard) : undefined;
  const trials = config.trials ?? 1;
  const indexed = examples.map((example, index) => ({ example, index }));
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
  for (const r of readResults(resultsPath)) previous.set(rowKey(r), r);
  // Failed rows are tried again on resume; finished ones are kept as they are.
  const finished = new Map([...previous].filter(([, r]) => r.error === undefined && ids.has(r.id) && (r.trial ?? 0) < trials));
  const todo: WorkItem[] = [];
  for (let trial = 0; trial < trials; trial++) {
    for (const x of selection) {
      if (finished.has(rowKey({ id: x.example.id, trial }))) continue;
      todo.push(trials > 1 ? { ...x, trial } : x);
    }
  }
  const total = selection.length * trials;
  return { selection, trials, total, finished, earlier: previous, todo, resumedCount: total - todo.length };
}

/**
 * `run.json`: status, done/total and the wall time summed over every session. After a SIGKILL it
 * is as fresh as the last checkpoint, so checkpoints at most once a second are plenty (an fsync
 * per example would cost more than it tells).
 */
export class RunStateFile {
  readonly state: RunState;
  private readonly baseWall: number;
  /** Live LLM spend of earlier sessions (USD); undefined when none was priced. */
  readonly priorCostUsd: number | undefined;
  readonly priorLiveCalls: number;
  private readonly sessionStart = performance.now();
  private lastCheckpoint = 0;
  /** When the session's clock was stopped (`stop`); its wall time stays as it was then. */
  private stoppedAt: number | undefined;

  constructor(
    private readonly path: string,
    total: number,
    done: number,
  ) {
    const prior = readRunJson(path, 'state');
    this.state = {
      status: 'RUNNING',
      wallSeconds: prior?.wallSeconds ?? 0,
      sessions: (prior?.sessions ?? 0) + 1,
      startedAt: prior?.startedAt ?? new Date().toISOString(),
      updatedAt: new Date().toISOString(),
      total,
      done,
      ...(prior?.costUsd !== undefined ? { costUsd: prior.costUsd, liveCalls: prior.liveCalls ?? 0 } : {}),
    };
    this.baseWall = this.state.wallSeconds;
    this.priorCostUsd = prior?.costUsd;
    this.priorLiveCalls = prior?.liveCalls ?? 0;
    this.checkpoint();
  }

  /** Writes the current wall time; `force: false` skips it when the last one is under a second old. */
  checkpoint(force = true): void {
    const now = this.stoppedAt ?? performance.now();
    if (!force && now - this.lastCheckpoint < 1000) return;
    this.lastCheckpoint = now;
    this.state.wallSeconds = this.baseWall + (now - this.sessionStart) / 1000;
    this.state.updatedAt = new Date().toISOString();
    this.write();
  }

  /**
   * Stops the session's clock and returns the run's wall time (all sessions): the figure
   * metrics.json states is then the one run.json keeps.
   */
  stop(): number {
    this.stoppedAt ??= performance.now();
    this.checkpoint();
    return this.state.wallSeconds;
  }

  /** This session's live spend so far, added to the earlier sessions'. */
  setSessionCost(usage: UsageTotals): void {
    if (usage.costUsd === undefined && this.priorCostUsd === undefined) return;
    this.state.costUsd = (this.priorCostUsd ?? 0) + (usage.costUsd ?? 0);
    this.state.liveCalls = this.priorLiveCalls + usage.samples - usage.cacheHits;
  }

  /** Records the session's end (wall time included). */
  end(status: RunState['status'], done: number, error?: string, stoppedBy?: string): void {
    this.checkpoint();
    this.state.status = status;
    this.state.done = done;
    if (error !== undefined) this.state.error = error;
    if (stoppedBy !== undefined) this.state.stoppedBy = stoppedBy;
    else delete this.state.stoppedBy;
    this.write();
  }

  /** An unexpected failure: keeps the counts, records the error. */
  fail(error: string): void {
    this.state.status = 'FAILED';
    this.state.error = error;
    this.write();
  }

  private write(): void {
    writeRunJson(this.path, 'state', this.state);
  }
}

/**
 * run.json as an observer: each answered question moves `done` and the session's spend, written
 * at most once a second; the end records the status (or the unexpected error).
 */
export function runStateObserver(file: RunStateFile): RunObserver {
  return {
    name: 'run state',
    onQuestion(row, _trace, usage) {
      if (row.error !== undefined) return;
      file.state.done += 1;
      file.setSessionCost(usage);
      file.checkpoint(false);
    },
    onEnd(end) {
      if (end.status === 'CRASHED') {
        file.fail(end.error instanceof Error ? end.error.message : String(end.error));
        return;
      }
      file.setSessionCost(end.usage);
      file.end(end.status, end.results.filter((r) => r.error === undefined).length, end.error, end.stoppedBy);
    },
  };
}

/**
 * The run as the cache entries it writes name it (`cacheWriter`, llm/run-model.ts): its folder's
 * name and its first start, which every resumed session keeps, so a resumed run's replays of its
 * own earlier calls count as its own, and a later run in a folder of the same name is another.
 */
export function cacheWriterOf(runDir: string, startedAt: string): string {
  return `${basename(resolve(runDir))}@${startedAt}`;
}
