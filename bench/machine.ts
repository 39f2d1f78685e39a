import { loadavg } from 'node:os';

/** The 1/5/15-minute load averages as benchmarks print them: a busy machine voids a timing. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
}
