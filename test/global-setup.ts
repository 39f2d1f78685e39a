import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { venvDir } from '../src/config/paths';
import { mlflowExecutable, startLocalServer, type LocalServer } from '../src/tracking/server';

/**
 * Gives the tests a real MLflow server. `.ci/run` starts one itself and exports
 * MLFLOW_TRACKING_URI, which is then used as is. Otherwise, when the project venv has mlflow,
 * a throw-away server is started on a temporary store for this test run and stopped at the end.
 *
 * Starting MLflow costs 15–40 s on two busy cores, so it never happens for the `unit` project
 * (no test there talks to a server) and otherwise only when a selected test file asks for the
 * server (mentions MLFLOW_TRACKING_URI, `inject('mlflowTrackingUri')` or `trackingUri()`), so
 * that `npx vitest run test/llm` does not pay for it. Override with AMBIQA_TEST_MLFLOW=always|never.
 * Tests read the address from `inject('mlflowTrackingUri')` or MLFLOW_TRACKING_URI (both are set).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** Empty when no server is available (tests that need one then skip, or fail under CI). */
    mlflowTrackingUri: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const preset = process.env.MLFLOW_TRACKING_URI?.trim();
  if (preset) {
    project.provide('mlflowTrackingUri', preset);
    return undefined;
  }
  project.provide('mlflowTrackingUri', '');
  const mode = process.env.AMBIQA_TEST_MLFLOW ?? 'auto';
  if (mode === 'never') return undefined;
  // The unit project needs no server by definition (vitest.config.ts); starting one there cost
  // `npm run test:unit` 13–40 s of its minute before any test ran.
  if (mode !== 'always' && project.name === 'unit') return undefined;
  if (mode !== 'always' && !(await selectionNeedsMlflow(project))) return undefined;
  const venv = venvDir();
  if (!existsSync(mlflowExecutable(venv))) {
    console.warn(`[global-setup] no MLflow server for the tests: MLFLOW_TRACKING_URI is unset and ${mlflowExecutable(venv)} is missing (run \`npx ambiqa setup\`)`);
    return undefined;
  }

  const storeDir = mkdtempSync(join(tmpdir(), 'ambiqa-mlflow-test-'));
  const started = Date.now();
  let server: LocalServer;
  try {
    server = await startLocalServer({ storeDir, venv });
  } catch (error) {
    rmSync(storeDir, { recursive: true, force: true });
    throw error;
  }
  console.log(`[global-setup] MLflow for the tests at ${server.uri} (started in ${((Date.now() - started) / 1000).toFixed(1)} s, store ${storeDir})`);
  process.env.MLFLOW_TRACKING_URI = server.uri;
  project.provide('mlflowTrackingUri', server.uri);
  return async () => {
    await server.stop();
    delete process.env.MLFLOW_TRACKING_URI;
    rmSync(storeDir, { recursive: true, force: true });
  };
}

/** Does any test file in this run ask for the server? No file filter means the whole suite: yes. */
async function selectionNeedsMlflow(project: TestProject): Promise<boolean> {
  // `filenamePattern` holds the CLI's file filters (not a public API; without it we assume yes).
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  if (!filters || filters.length === 0) return true;
  try {
    const { testFiles } = await project.globTestFiles(filters);
    return testFiles.some((file) => /MLFLOW_TRACKING_URI|mlflowTrackingUri|\btrackingUri\(/.test(readFileSync(file, 'utf8')));
  } catch {
    return true;
  }
}
