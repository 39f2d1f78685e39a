/**
 * Seeded randomness for sampling examples (and for bootstrap resampling in metrics): the same
 * seed gives the same sample on every machine and Node version.
 */
import { mulberry32 } from '../common/random';

/** mulberry32 with the seed mixed, so that small seeds (0, 1, 2) start far apart. */
export function seededRandom(seed: number): () => number {
  return mulberry32(Math.trunc(seed) ^ 0x9e3779b9);
}

/**
 * `k` distinct indices out of `0..n-1`, chosen uniformly with the seed (a partial Fisher–Yates
 * shuffle), returned in increasing order so a sample keeps the file's order.
 */
export function sampleIndices(n: number, k: number, seed: number): number[] {
  if (k >= n) return Array.from({ length: n }, (_, i) => i);
  const rng = seededRandom(seed);
  const pool = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(rng() * (n - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, k).sort((a, b) => a - b);
}
