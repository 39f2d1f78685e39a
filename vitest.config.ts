import { defineConfig } from 'vitest/config';

/**
 * Two projects. `unit`: no network, no models, no MLflow server, no browser or Jupyter — the
 * logic, with scripted models and fake servers; `npm run test:unit` runs it in well under a
 * minute. `integration`: the files below, which need the real things (the embedded model,
 * MiniLM, a real MLflow server, Chromium, Jupyter, the package registries) or spawn the CLI and
 * other processes. `npm test` (the Quick start's command) runs both.
 */
const integration = [
  'test/experiments/exit-statuses.test.ts',
  'test/experiments/input-refusals.test.ts',
  'test/experiments/judge-diagnostics.test.ts',
  'test/experiments/judge-embedded.test.ts',
  'test/experiments/merge.test.ts',
  'test/experiments/merge-mlflow.test.ts',
  'test/experiments/offline-sync.test.ts',
  'test/experiments/preflight.test.ts',
  'test/experiments/readme-shards.test.ts',
  'test/experiments/resume-kill.test.ts',
  'test/experiments/run-lock.test.ts',
  'test/experiments/slurm.test.ts',
  'test/experiments/sweep.test.ts',
  'test/layering/**/*.test.ts',
  'test/library/**/*.test.ts',
  'test/llm/cache-processes.test.ts',
  'test/llm/chaos.test.ts',
  'test/llm/embedded.test.ts',
  'test/llm/llama-server.test.ts',
  'test/llm/judge-determinism.test.ts',
  'test/metrics/reader-embedded.test.ts',
  'test/notebooks/cli.test.ts',
  'test/notebooks/jupyterlab.test.ts',
  'test/notebooks/notebooks.test.ts',
  'test/pipelines/e2e.test.ts',
  'test/plots/export.test.ts',
  'test/plots/overlap.test.ts',
  'test/report/compare.test.ts',
  'test/report/mlflow.test.ts',
  'test/report/report.test.ts',
  'test/retrieval/dense.test.ts',
  'test/security/hostile-endpoint.test.ts',
  'test/setup/real-models.test.ts',
  'test/setup/registry.test.ts',
  'test/setup/setup.test.ts',
  'test/setup/stop-with-parent.test.ts',
  'test/setup/system.test.ts',
  'test/tracking/client.test.ts',
  'test/tracking/cost-mlflow.test.ts',
  'test/tracking/mlflow-ui.test.ts',
  'test/tracking/otel-lazy.test.ts',
  'test/tracking/otel-export.test.ts',
  'test/tracking/run-page.test.ts',
  'test/tracking/server.test.ts',
  'test/tracking/tracking.test.ts',
];

// Real-model and real-server tests are slow on 2 cores; give them room, and run test files in
// forked processes so that a native addon (llama.cpp, onnxruntime) never shares a worker thread.
const shared = {
  globalSetup: ['test/global-setup.ts'],
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
      { test: { ...shared, name: 'unit', include: ['test/**/*.test.ts'], exclude: integration } },
      { test: { ...shared, name: 'integration', include: integration } },
    ],
  },
});
