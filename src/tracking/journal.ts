import { randomUUID } from 'node:crypto';
import { appendFileSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { decodeMetricValue, encodeMetricValue, type MetricRecord } from './batch';
import type { DatasetInput } from './types';
import type { RunStatus } from './types';

/**
 * The on-disk record of everything a run would have sent to MLflow while the server was
 * unreachable: one JSON operation per line, appended and never rewritten, so that a run killed
 * at any point leaves a journal that `ambiqa sync` can replay. Progress of the replay is kept
 * beside it (`mlflow-sync.json`), which is what makes a second sync a no-op.
 *
 *   <dir>/mlflow-pending.jsonl   the operations
 *   <dir>/mlflow-pending/        copies of artifact files as they were when logged
 *   <dir>/mlflow-sync.json       how many operations reached the server, and the real run ids
 */

export const JOURNAL_FILE = 'mlflow-pending.jsonl';
export const JOURNAL_FILES_DIR = 'mlflow-pending';
export const SYNC_STATE_FILE = 'mlflow-sync.json';

/** Run ids handed out while the server is down look like this until `sync` creates the run. */
export const PENDING_PREFIX = 'pending-';
export const PENDING_EXPERIMENT = 'pending';
/** Tag that ties a synced run to its pending id, so that a sync interrupted after creating the run finds it again. */
export const PENDING_TAG = 'ambiqa.pendingRunId';

export function newPendingRunId(): string {
  return PENDING_PREFIX + randomUUID().replace(/-/g, '');
}

export function isPendingRunId(id: string | undefined): boolean {
  return !!id && id.startsWith(PENDING_PREFIX);
}

const PENDING_REF = /pending-[0-9a-f]{32}/g;

/** Pending run ids mentioned in a text (e.g. a tag value). */
export function pendingRefs(text: string): string[] {
  return text.match(PENDING_REF) ?? [];
}

export type JournalOp =
  | {
      op: 'start';
      /** The pending run id the tracker handed out. */
      key: string;
      experimentName: string;
      runName: string;
      tags: Record<string, string>;
      parentRunId?: string;
      startTime: number;
    }
  | {
      /** The run exists on the server (it started live, or is being resumed); `key` is its id. */
      op: 'attach';
      key: string;
      experimentName: string;
      experimentId?: string;
      /** Set status back to RUNNING (resume). */
      reopen: boolean;
    }
  | { op: 'reopen'; key: string }
  | { op: 'params'; key: string; params: Record<string, string> }
  | { op: 'metrics'; key: string; metrics: MetricRecord[] }
  | { op: 'tags'; key: string; tags: Record<string, string> }
  | { op: 'artifact'; key: string; file: string; artifactPath: string }
  | { op: 'finish'; key: string; status: Exclude<RunStatus, 'RUNNING'>; endTime: number }
  /** Question traces for MLflow Tracing; `file` holds `TraceExportItem[]` as JSON (already redacted). */
  | { op: 'traces'; key: string; file: string; count: number }
  /** Datasets for the run page (`runs/log-inputs`). */
  | { op: 'inputs'; key: string; datasets: DatasetInput[] };

export interface SyncState {
  version: 1;
  /** Number of journal operations that reached the server, in order. */
  applied: number;
  /** Journal key (pending or real run id) → the run on the server. */
  runs: Record<string, { runId: string; experimentId: string }>;
  syncedAt?: string;
  uri?: string;
}

export function journalPath(dir: string): string {
  return join(dir, JOURNAL_FILE);
}

export function hasJournal(dir: string): boolean {
  return existsSync(journalPath(dir));
}

/** Appends operations for one directory; safe to use from several trackers in one process. */
export class Journal {
  private checkedTail = false;

  constructor(readonly dir: string) {}

  get path(): string {
    return journalPath(this.dir);
  }

  append(op: JournalOp): void {
    mkdirSync(this.dir, { recursive: true });
    if (!this.checkedTail) {
      // A process killed in the middle of a write leaves a torn last line; start on a fresh one
      // so that the torn line stays the only casualty.
      if (existsSync(this.path) && !endsWithNewline(this.path)) appendFileSync(this.path, '\n');
      this.checkedTail = true;
    }
    appendFileSync(this.path, JSON.stringify(encodeOp(op)) + '\n');
  }

  /** Write data into the journal folder; returns its path relative to the journal's directory. */
  keepData(name: string, data: string): string {
    const folder = join(this.dir, JOURNAL_FILES_DIR);
    mkdirSync(folder, { recursive: true });
    const rel = `${JOURNAL_FILES_DIR}/${Date.now().toString(36)}-${randomUUID().slice(0, 8)}-${name}`;
    writeFileSync(join(this.dir, rel), data);
    return rel;
  }

  /** Copy a file into the journal folder, so later changes to the original do not change what is uploaded. */
  keepFile(localPath: string, transform?: (data: Buffer) => Buffer): string {
    const folder = join(this.dir, JOURNAL_FILES_DIR);
    mkdirSync(folder, { recursive: true });
    const rel = `${JOURNAL_FILES_DIR}/${Date.now().toString(36)}-${randomUUID().slice(0, 8)}-${basename(localPath)}`;
    const dest = join(this.dir, rel);
    if (transform) writeFileSync(dest, transform(readFileSync(localPath)));
    else copyFileSync(localPath, dest);
    return rel;
  }
}

function endsWithNewline(path: string): boolean {
  const size = statSync(path).size;
  if (size === 0) return true;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(1);
    readSync(fd, buf, 0, 1, size - 1);
    return buf[0] === 0x0a;
  } finally {
    closeSync(fd);
  }
}

/** Every complete operation in the journal, in order; torn or foreign lines are skipped. */
export function readJournal(dir: string): JournalOp[] {
  if (!hasJournal(dir)) return [];
  const ops: JournalOp[] = [];
  for (const line of readFileSync(journalPath(dir), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const op = decodeOp(JSON.parse(line));
      if (op) ops.push(op);
    } catch {
      /* a torn line from a killed process: it was never acknowledged, so nothing is lost */
    }
  }
  return ops;
}

export function readSyncState(dir: string): SyncState {
  const path = join(dir, SYNC_STATE_FILE);
  if (existsSync(path)) {
    try {
      const state = JSON.parse(readFileSync(path, 'utf8')) as SyncState;
      if (state && typeof state.applied === 'number' && state.runs) return state;
    } catch {
      /* unreadable: start over; replay is safe because every operation is idempotent */
    }
  }
  return { version: 1, applied: 0, runs: {} };
}

export function writeSyncState(dir: string, state: SyncState): void {
  const path = join(dir, SYNC_STATE_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n');
  renameSync(tmp, path);
}

function encodeOp(op: JournalOp): unknown {
  if (op.op === 'metrics') return { ...op, metrics: op.metrics.map((m) => ({ ...m, value: encodeMetricValue(m.value) })) };
  return op;
}

const OPS = new Set(['start', 'attach', 'reopen', 'params', 'metrics', 'tags', 'artifact', 'finish', 'traces', 'inputs']);

function decodeOp(raw: unknown): JournalOp | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const op = raw as JournalOp;
  if (!OPS.has(op.op) || typeof op.key !== 'string') return undefined;
  if (op.op === 'metrics') {
    return { ...op, metrics: op.metrics.map((m) => ({ ...m, value: decodeMetricValue(m.value as number | string) })) };
  }
  return op;
}
