import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';

/**
 * The real MLflow server for these tests: from test/global-setup.ts or `.ci/run`
 * (MLFLOW_TRACKING_URI). Without one the server tests skip with a reason, except under CI,
 * where a missing server is a failure rather than a quiet skip.
 */
export function trackingUri(): string {
  let provided = '';
  try {
    provided = inject('mlflowTrackingUri');
  } catch {
    /* not running under the global setup */
  }
  const uri = provided || process.env.MLFLOW_TRACKING_URI || '';
  if (!uri) {
    const reason = 'no MLflow server: set MLFLOW_TRACKING_URI or run `npx ambiqa setup` so that test/global-setup.ts can start one';
    if (process.env.CI) throw new Error(reason);
    console.warn(`[tracking tests] skipped: ${reason}`);
  }
  return uri;
}

/** Experiment names unique to one test, so that repeated runs against one server do not mix. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function tempDir(prefix = 'ambiqa-tracking-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
