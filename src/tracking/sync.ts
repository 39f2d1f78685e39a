import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { MlflowClient, MlflowHttpError } from './client';
import {
  PENDING_EXPERIMENT,
  PENDING_TAG,
  isPendingRunId,
  pendingRefs,
  readJournal,
  readSyncState,
  writeSyncState,
  type JournalOp,
  type SyncState,
} from './journal';
import { TracesUnsupportedError, type TraceExportItem } from './otel-export';
import { sendTraces } from './trace-upload';

/**
 * Replays journals (journal.ts) against a server. Every operation is safe to repeat — params
 * with the same value, metrics identical to stored ones (the server de-duplicates them), tags and
 * artifacts overwrite, a run is found again by its `ambiqa.pendingRunId` tag before one is
 * created — so a sync interrupted at any point can simply run again, and one that finished
 * records that fact so that the next does nothing at all.
 */

export interface SyncOptions {
  client: MlflowClient;
  /** Progress for people (default: stderr). */
  notify?: (message: string) => void;
}

export interface SyncResult {
  dir: string;
  /** Operations sent by this call. */
  applied: number;
  /** Operations in the journal. */
  total: number;
  /** Nothing was left to do. */
  alreadySynced: boolean;
  runs: SyncState['runs'];
}

/** A run id that is still pending here: its own journal must be synced first. */
export class PendingDependencyError extends AmbiqaError {
  constructor(
    readonly pendingRunId: string,
    readonly dir: string,
  ) {
    super(
      `${dir} refers to run ${pendingRunId}, which was also started offline and is not uploaded yet`,
      'sync the directory holding that run (its parent run, usually) in the same command or first',
    );
    this.name = 'PendingDependencyError';
  }
}

/** Pending id → real run, for every run synced by this process (a child needs its parent's). */
const resolved = new Map<string, { runId: string; experimentId: string }>();

export function resolvedPendingRun(pendingRunId: string): { runId: string; experimentId: string } | undefined {
  return resolved.get(pendingRunId);
}

export async function syncDirectory(dir: string, options: SyncOptions): Promise<SyncResult> {
  const { client } = options;
  const notify = options.notify ?? ((m: string) => console.error(m));
  let warnedUnsupported = false;
  const ops = readJournal(dir);
  const state = readSyncState(dir);
  for (const [key, run] of Object.entries(state.runs)) if (isPendingRunId(key)) resolved.set(key, run);
  const result: SyncResult = { dir, applied: 0, total: ops.length, alreadySynced: state.applied >= ops.length, runs: state.runs };
  if (result.alreadySynced) return result;

  const experiments = new Map<string, string>();
  const experimentId = async (name: string): Promise<string> => {
    let id = experiments.get(name);
    if (!id) {
      id = await client.getOrCreateExperiment(name);
      experiments.set(name, id);
    }
    return id;
  };

  const runFor = (key: string): { runId: string; experimentId: string } => {
    const run = state.runs[key] ?? resolved.get(key);
    if (!run) {
      if (isPendingRunId(key)) throw new PendingDependencyError(key, dir);
      throw new AmbiqaError(`${join(dir, 'mlflow-pending.jsonl')} logs to run ${key} before saying which run that is`, 'the journal is damaged; delete it if the run was uploaded another way');
    }
    return run;
  };

  /** Replace pending ids inside a value by real ones, looking on the server when needed. */
  const mapRefs = async (value: string, experimentIds: string[]): Promise<string> => {
    let out = value;
    for (const ref of pendingRefs(value)) {
      const run = state.runs[ref] ?? resolved.get(ref) ?? (await findByPendingTag(client, ref, experimentIds));
      if (!run) throw new PendingDependencyError(ref, dir);
      resolved.set(ref, run);
      out = out.split(ref).join(run.runId);
    }
    return out;
  };

  const mapTags = async (tags: Record<string, string>, experimentIds: string[]): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(tags)) out[k] = await mapRefs(v, experimentIds);
    return out;
  };

  const apply = async (op: JournalOp): Promise<void> => {
    switch (op.op) {
      case 'start': {
        const expId = await experimentId(op.experimentName);
        let run = await findByPendingTag(client, op.key, [expId]);
        if (!run) {
          const tags = await mapTags(op.tags, [expId]);
          if (op.parentRunId) tags['mlflow.parentRunId'] = await mapRefs(op.parentRunId, [expId]);
          tags[PENDING_TAG] = op.key;
          const created = await client.createRun({ experimentId: expId, runName: op.runName, startTime: op.startTime, tags });
          run = { runId: created.info.runId, experimentId: expId };
        }
        state.runs[op.key] = run;
        resolved.set(op.key, run);
        return;
      }
      case 'attach': {
        const id = await mapRefs(op.key, []);
        let expId = op.experimentId && op.experimentId !== PENDING_EXPERIMENT ? op.experimentId : undefined;
        if (!expId) expId = (await client.getRun(id)).info.experimentId;
        state.runs[op.key] = { runId: id, experimentId: expId };
        if (op.reopen) await client.updateRun(id, { status: 'RUNNING' });
        return;
      }
      case 'reopen': {
        await client.updateRun(runFor(op.key).runId, { status: 'RUNNING' });
        return;
      }
      case 'params': {
        await client.logBatch(runFor(op.key).runId, { params: op.params });
        return;
      }
      case 'metrics': {
        await client.logBatch(runFor(op.key).runId, { metrics: op.metrics });
        return;
      }
      case 'tags': {
        const run = runFor(op.key);
        await client.logBatch(run.runId, { tags: await mapTags(op.tags, [run.experimentId]) });
        return;
      }
      case 'artifact': {
        const file = join(dir, op.file);
        if (!existsSync(file)) {
          throw new AmbiqaError(`artifact copy ${file} logged in the journal is missing`, 'restore it, or remove that line from mlflow-pending.jsonl');
        }
        await client.uploadArtifact(runFor(op.key).runId, op.artifactPath, readFileSync(file));
        return;
      }
      case 'finish': {
        await client.finishRun(runFor(op.key).runId, op.status, op.endTime);
        return;
      }
      case 'inputs': {
        await client.logInputs(runFor(op.key).runId, op.datasets);
        return;
      }
      case 'traces': {
        const file = join(dir, op.file);
        if (!existsSync(file)) {
          throw new AmbiqaError(`trace batch ${file} logged in the journal is missing`, 'restore it, or remove that line from mlflow-pending.jsonl (the traces are also in traces.jsonl)');
        }
        const run = runFor(op.key);
        const items = JSON.parse(readFileSync(file, 'utf8')) as TraceExportItem[];
        try {
          await sendTraces(items, { client, experimentId: run.experimentId, runId: run.runId, notify });
        } catch (error) {
          if (!(error instanceof TracesUnsupportedError)) throw error;
          // This server will never take traces: say so once and let the rest of the run sync.
          if (!warnedUnsupported) notify(`warning: ${error.message}\n  ${error.hint ?? ''}`);
          warnedUnsupported = true;
        }
        return;
      }
    }
  };

  for (let i = state.applied; i < ops.length; i++) {
    try {
      await apply(ops[i]);
    } catch (error) {
      // Keep the progress made so far; the next sync starts at the failed operation.
      writeSyncState(dir, state);
      if (error instanceof MlflowHttpError) {
        throw new AmbiqaError(`sync of ${dir} stopped at operation ${i + 1} of ${ops.length} (${ops[i].op}): ${error.message}`, error.hint, { cause: error });
      }
      throw error;
    }
    state.applied = i + 1;
    result.applied++;
    // Saving after every operation keeps a re-run from repeating uploads; the cost is one small
    // file write per request, which is nothing next to the request itself.
    writeSyncState(dir, state);
  }
  state.syncedAt = new Date().toISOString();
  state.uri = client.uri;
  writeSyncState(dir, state);
  updateRunRecord(dir, state, client.uri);
  return result;
}

/**
 * Sync several directories. A child whose parent is pending in another directory is retried
 * after the others, so the order on the command line does not matter.
 */
export async function syncDirectories(dirs: string[], options: SyncOptions): Promise<SyncResult[]> {
  const results = new Map<string, SyncResult>();
  let waiting = [...dirs];
  while (waiting.length > 0) {
    const blocked: Array<{ dir: string; error: PendingDependencyError }> = [];
    for (const dir of waiting) {
      try {
        results.set(dir, await syncDirectory(dir, options));
      } catch (error) {
        if (error instanceof PendingDependencyError) blocked.push({ dir, error });
        else throw error;
      }
    }
    if (blocked.length === 0) break;
    if (blocked.length === waiting.length) throw blocked[0].error; // no progress: a parent is missing
    waiting = blocked.map((b) => b.dir);
  }
  return dirs.map((d) => results.get(d)!);
}

async function findByPendingTag(client: MlflowClient, pendingRunId: string, experimentIds: string[]): Promise<{ runId: string; experimentId: string } | undefined> {
  if (experimentIds.length === 0) return undefined;
  const { runs } = await client.searchRuns({
    experimentIds,
    filter: `tags.\`${PENDING_TAG}\` = '${pendingRunId}'`,
    maxResults: 1,
  });
  const run = runs[0];
  return run ? { runId: run.info.runId, experimentId: run.info.experimentId } : undefined;
}

/**
 * The experiment runner writes `mlflow.json` (experiment and run ids, UI address) when the run
 * starts; for a run started offline those are placeholders. Put the real ones in.
 */
function updateRunRecord(dir: string, state: SyncState, uri: string): void {
  const path = join(dir, 'mlflow.json');
  if (!existsSync(path)) return;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return; // not ours to repair
  }
  const runId = typeof record.runId === 'string' ? record.runId : undefined;
  const run = runId ? state.runs[runId] ?? resolved.get(runId) : undefined;
  let changed = false;
  for (const [key, value] of Object.entries(record)) {
    if (typeof value !== 'string') continue;
    let mapped = value;
    for (const ref of pendingRefs(value)) {
      const real = state.runs[ref] ?? resolved.get(ref);
      if (real) mapped = mapped.split(ref).join(real.runId);
    }
    if (mapped !== value) {
      record[key] = mapped;
      changed = true;
    }
  }
  if (run) {
    if (record.experimentId !== run.experimentId) {
      record.experimentId = run.experimentId;
      changed = true;
    }
    const url = `${uri}/#/experiments/${run.experimentId}/runs/${run.runId}`;
    if (typeof record.runUrl === 'string' && record.runUrl !== url) {
      record.runUrl = url;
      changed = true;
    }
  }
  if (changed) writeFileSync(path, JSON.stringify(record, null, 2) + '\n');
}
