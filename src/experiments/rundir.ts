import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifactsDir } from '../config/paths';
import { writeFileAtomic } from './jsonl';

/**
 * The files of a run directory. Everything downstream (plots, reports, notebooks, merge) reads
 * these; nothing re-runs a pipeline.
 */
export const runFiles = {
  config: 'config.yaml',
  results: 'results.jsonl',
  traces: 'traces.jsonl',
  metrics: 'metrics.json',
  mlflow: 'mlflow.json',
  /** Session bookkeeping: status, wall seconds over all sessions, sessions count. */
  state: 'run.json',
} as const;

export function runsDir(): string {
  return join(artifactsDir(), 'runs');
}

export function sweepsDir(): string {
  return join(artifactsDir(), 'sweeps');
}

/** Where a run's MLflow ids are kept, so that `--resume`, `merge` and people can find the run. */
export interface MlflowRecord {
  experimentName: string;
  experimentId: string;
  runId: string;
  runName: string;
  parentRunId?: string;
  /** The UI address of the run (for people). */
  runUrl?: string;
  /** Set by reports when the address may not open (its local server has stopped). */
  runUrlNote?: string;
}

export interface RunState {
  status: 'RUNNING' | 'FINISHED' | 'KILLED' | 'FAILED';
  /** Wall seconds summed over every session of the run (an interrupted session counts up to its last checkpoint). */
  wallSeconds: number;
  sessions: number;
  startedAt: string;
  updatedAt: string;
  total: number;
  done: number;
  error?: string;
}

export function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

export function writeJson(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
}
