import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dataDir } from '../../src/config/paths';

/**
 * Tests that need the shared evaluation data find it through AMBIQA_DATA_DIR (default
 * `../shared/data`). Where it is absent (a user's fresh clone) they skip with a printed reason;
 * CI always has it.
 */
export function sharedDataPath(...parts: string[]): string {
  return join(dataDir(), ...parts);
}

export function hasSharedData(...parts: string[]): boolean {
  const ok = existsSync(sharedDataPath(...parts));
  if (!ok) {
    console.warn(`[skip] shared data not found at ${sharedDataPath(...parts)} (set AMBIQA_DATA_DIR to run these tests)`);
  }
  return ok;
}
