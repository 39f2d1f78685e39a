import { defineConfig } from 'vitest/config';

/**
 * Two projects, told apart by the test file's name; test/ mirrors src/, so a module's tests of
 * both kinds sit in the same folder. `unit` (`*.test.ts`): no network, no models, no MLflow
 * server, no browser or Jupyter — the logic, with scripted models and fake servers;
 * `npm run test:unit` runs it in well under a minute, and starts no MLflow server
 * (test/global-setup.ts). `integration` (`*.int.test.ts`): tests that need the real things (the
 * embedded model, MiniLM, a real MLflow server, Chromium, Jupyter, the package registries), spawn
 * the CLI and other processes, or compile (the notebooks' type check: ~17 s of TypeScript).
 * `npm test` (the Quick start's command) runs both.
 */
const INTEGRATION = 'test/**/*.int.test.ts';

// Real-model and real-server tests are slow on 2 cores; give them room, and run test files in
// forked processes so that a native addon (llama.cpp, onnxruntime) never shares a worker thread.
const shared = {
  // tmp-sandbox first: every scratch folder of the run goes in one that is removed at the end.
  globalSetup: ['test/tmp-sandbox.ts', 'test/global-setup.ts'],
  pool: 'forks' as const,
  testTimeout: 120_000,
  hookTimeout: 300_000,
  // Test workers compete for the cores: one llama.cpp thread each (see defaultThreads), whatever
  // the machine looked like when a worker started.
  env: { AMBIQA_LLM_THREADS: '1' },
};

export default defineConfig({
  test: {
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/**/*.test.ts'], exclude: [INTEGRATION] } },
      { test: { ...shared, name: 'integration', include: [INTEGRATION] } },
    ],
  },
});
