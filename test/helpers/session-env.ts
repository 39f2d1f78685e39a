import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { closeSession } from '../../src/experiments/session';

/**
 * For a test file that runs experiments in-process: artifacts under `dir`, tracking off, and
 * afterwards the notebook session closed and both variables put back as they were.
 */
export function useIsolatedSession(dir: string): void {
  const before = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };
  beforeAll(() => {
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.AMBIQA_TRACKING = 'off';
  });
  afterAll(async () => {
    await closeSession();
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', before.artifacts], ['AMBIQA_TRACKING', before.tracking]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}
