/**
 * `reproduce` of the library (`import { reproduce } from 'ambiqa'`): what `ambiqa reproduce`
 * does, in the caller's process, with the session's shared composer (models loaded once).
 */
import { join } from 'node:path';
import { artifactsDir } from '../config/paths';
import { MlflowClient, resolveTrackingUri } from '../tracking/index';
import { commandEnvironment } from './environment';
import type { ProgressSink } from './progress';
import { fetchRunFromMlflow, parseAllowDifferent, reproduceRun, reproductionTargets, type Reproduction } from './reproduce';
import { sharedComposer } from './session';

export interface ReproduceOptions {
  /** Differences to re-run anyway: `commit`, `model`, `dataset`, `engine`, `retriever`, or `all`. */
  allowDifferent?: readonly string[];
  /** Endpoint runs: ask the endpoint again instead of replaying the LLM cache. */
  live?: boolean;
  /** A bundle: only this run (folder or run name). */
  run?: string;
  progress?: ProgressSink | ((label: string) => ProgressSink);
  signal?: AbortSignal;
  /** Notes and warnings. Default: stderr. */
  warn?: (message: string) => void;
}

/** Reproduce a run folder, the runs of a bundle folder, or an MLflow run; one result per run. */
export async function reproduceInProcess(target: string, options: ReproduceOptions = {}): Promise<Reproduction[]> {
  const allowDifferent = parseAllowDifferent(options.allowDifferent ?? []);
  const dirs = await reproductionTargets(target, {
    ...(options.run !== undefined ? { only: options.run } : {}),
    fromMlflow: async (runId) => fetchRunFromMlflow(new MlflowClient((await resolveTrackingUri()).uri), runId, join(artifactsDir(), 'reproductions', '.mlflow', runId)),
  });
  const { progress, warn, signal } = options;
  const env = commandEnvironment({
    ...(signal ? { signal } : {}),
    ...(warn ? { warn, note: warn } : {}),
    ...(progress ? { progress: (label: string) => (typeof progress === 'function' ? progress(label) : progress) } : {}),
  });
  const out: Reproduction[] = [];
  for (const dir of dirs) out.push(await reproduceRun(dir, { composer: sharedComposer(), allowDifferent, live: options.live === true, env }));
  return out;
}
