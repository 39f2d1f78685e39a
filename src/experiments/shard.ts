import { AmbiqaError } from '../errors';
import { escapeControl } from '../common/safe-name';

/**
 * The most shards one run may be split into. A shard spec also comes from outside (an MLflow
 * server's `ambiqa.shard` tag, which `merge --from-mlflow` loops over): `0/300000` must not make
 * a merge allocate and report three hundred thousand missing shards. 10 000 is ten times Slurm's
 * default MaxArraySize (1001).
 */
export const MAX_SHARDS = 10_000;

/**
 * `--shard i/N` splits a run over N machines. Shards are numbered from 0 so that a Kubernetes
 * indexed Job can pass `$JOB_COMPLETION_INDEX` straight through. Example ids are sorted and
 * shard i takes every id whose position is i modulo N: deterministic on every machine (it
 * depends only on the ids, not on the order a loader returns them), balanced to within one
 * example, and the union of all N shards is exactly the unsharded selection.
 */
export interface Shard {
  index: number;
  count: number;
}

export function parseShard(spec: string): Shard {
  // The spec is shown cut and escaped: it may be a server's tag of any length and content.
  const shown = `'${escapeControl(spec, 40)}'`;
  const m = spec.length <= 40 ? /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(spec) : null;
  if (!m) throw new AmbiqaError(`${shown} is not a shard spec: expected i/N, e.g. 0/4`, 'shards are numbered 0..N-1');
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1) throw new AmbiqaError(`${shown}: the number of shards must be at least 1`);
  if (count > MAX_SHARDS) throw new AmbiqaError(`${shown}: the number of shards must be at most ${MAX_SHARDS}`);
  if (index >= count) {
    throw new AmbiqaError(`${shown}: shard index must be in 0..${count - 1} (shards are numbered from 0)`, `use 0/${count} … ${count - 1}/${count}`);
  }
  return { index, count };
}

export function formatShard(shard: Shard): string {
  return `${shard.index}/${shard.count}`;
}

/** The examples of one shard, in their original order. */
export function selectShard<T extends { id: string }>(items: T[], shard: Shard | undefined): T[] {
  if (!shard || shard.count === 1) return items;
  const sorted = items.map((x) => x.id).sort(compareIds);
  const mine = new Set(sorted.filter((_, i) => i % shard.count === shard.index));
  return items.filter((x) => mine.has(x.id));
}

/** Byte-wise order, so every machine and locale sorts alike. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * `--shard auto` and `--shard auto/N`: the shard a scheduler gave this process, as `i/N`; any
 * other spec is returned as it is. Read once at the start of a run, so the run dir and its
 * config record the resolved `i/N` and a requeued or resubmitted task resumes the same run.
 *
 * - A Slurm job array (`sbatch --array=0-7`): the index is SLURM_ARRAY_TASK_ID. The count is N
 *   when given (what `ambiqa slurm` writes: a resubmitted `--array=3` is then still shard 3 of
 *   8); otherwise the array must be exactly 0..N-1 and N is SLURM_ARRAY_TASK_COUNT.
 * - A Kubernetes indexed Job: the index is JOB_COMPLETION_INDEX; Kubernetes does not tell a pod
 *   the number of completions, so `auto/N` must say it.
 *
 * Neither set: refused, saying which variables were looked for.
 */
export function resolveShardSpec(spec: string, env: NodeJS.ProcessEnv = process.env): string {
  const m = /^\s*auto(?:\s*\/\s*(\S*))?\s*$/.exec(spec);
  if (!m) return spec;
  let given: number | undefined;
  if (m[1] !== undefined) {
    given = Number(m[1]);
    if (!/^\d+$/.test(m[1]) || given < 1) throw new AmbiqaError(`--shard ${spec}: the number of shards after auto/ must be a positive whole number`, 'e.g. --shard auto/8');
  }
  const variable = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d+$/.test(raw)) throw new AmbiqaError(`--shard ${spec}: ${name}=${raw} is not a whole number`);
    return Number(raw);
  };

  const task = variable('SLURM_ARRAY_TASK_ID');
  if (task !== undefined) {
    if (given !== undefined) return formatShard(parseShardOf(spec, task, given, 'SLURM_ARRAY_TASK_ID'));
    const min = variable('SLURM_ARRAY_TASK_MIN') ?? 0;
    const max = variable('SLURM_ARRAY_TASK_MAX');
    const count = variable('SLURM_ARRAY_TASK_COUNT') ?? (max !== undefined ? max - min + 1 : undefined);
    if (count === undefined) {
      throw new AmbiqaError(`--shard ${spec}: SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT`, 'give the number of shards: --shard auto/N');
    }
    // A task id must mean the same shard whatever subset of the array runs: only an array
    // numbered 0..N-1 says N by itself.
    if (min !== 0 || (max !== undefined && max !== count - 1)) {
      throw new AmbiqaError(
        `--shard ${spec}: this job array's task ids run ${min}..${max ?? '?'} (${count} tasks), not 0..${count - 1}, so they do not say the number of shards`,
        'submit the array as --array=0-<N-1>, or give the number of shards: --shard auto/N (what `ambiqa slurm` writes)',
      );
    }
    return formatShard(parseShardOf(spec, task, count, 'SLURM_ARRAY_TASK_ID'));
  }

  const completion = variable('JOB_COMPLETION_INDEX');
  if (completion !== undefined) {
    if (given === undefined) {
      throw new AmbiqaError(
        `--shard ${spec}: JOB_COMPLETION_INDEX=${completion} (a Kubernetes indexed Job) gives the shard's index but not the number of shards`,
        'write the Job\'s completions into the command: --shard auto/N',
      );
    }
    return formatShard(parseShardOf(spec, completion, given, 'JOB_COMPLETION_INDEX'));
  }

  const notArray = env.SLURM_JOB_ID ? ` (this is Slurm job ${env.SLURM_JOB_ID}, but not a job array)` : '';
  throw new AmbiqaError(
    `--shard ${spec}: no scheduler gave this process a shard: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX (a Kubernetes indexed Job) is set${notArray}`,
    'submit it as a job array (`sbatch --array=0-<N-1>`, or `ambiqa slurm`), or give the shard yourself: --shard i/N',
  );
}

function parseShardOf(spec: string, index: number, count: number, source: string): Shard {
  if (index >= count) {
    throw new AmbiqaError(`--shard ${spec}: ${source}=${index}, but there are ${count} shards (numbered 0..${count - 1})`, 'the array\'s task ids (or the Job\'s completions) and N must agree');
  }
  return { index, count };
}
