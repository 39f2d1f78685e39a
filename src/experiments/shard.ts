import { AmbiqaError } from '../errors';

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
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(spec);
  if (!m) throw new AmbiqaError(`'${spec}' is not a shard spec: expected i/N, e.g. 0/4`, 'shards are numbered 0..N-1');
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1) throw new AmbiqaError(`'${spec}': the number of shards must be at least 1`);
  if (index >= count) {
    throw new AmbiqaError(`'${spec}': shard index must be in 0..${count - 1} (shards are numbered from 0)`, `use 0/${count} … ${count - 1}/${count}`);
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
