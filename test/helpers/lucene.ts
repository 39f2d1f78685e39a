import { luceneRuntime } from '../../src/retrieval/lucene/searcher';

/**
 * Why the real Lucene engine cannot run here (no jar or no Java >= 21), or undefined when it can.
 * Under CI a missing engine fails the file instead of skipping it (`.ci/run` sets it up).
 */
export function luceneSkipReason(what: string): string | undefined {
  let reason: string | undefined;
  try {
    luceneRuntime();
  } catch (error) {
    reason = (error as Error).message;
  }
  if (reason) {
    if (process.env.CI) throw new Error(`${what} cannot run: ${reason}`);
    console.warn(`[skip] ${what}: ${reason}`);
  }
  return reason;
}
