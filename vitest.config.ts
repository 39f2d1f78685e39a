import { defineConfig } from 'vitest/config';

// Real-model and real-server tests are slow on 2 cores; give them room, and run test files in
// forked processes so that a native addon (llama.cpp, onnxruntime) never shares a worker thread.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
