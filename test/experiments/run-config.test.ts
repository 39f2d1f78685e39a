import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/config/paths';
import { createComposer, registry } from '../../src/experiments/compose';
import { resolveExperimentConfig } from '../../src/experiments/config';
import { runConfig, runDirOf } from '../../src/experiments/run-config';

/**
 * The one wiring of a run that `ambiqa run` and the library's `run()` share: its order (lock,
 * resume, run-dir check, preflight, parts, session) is what both callers get.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-run-config-'));
const before = process.env.AMBIQA_ARTIFACTS_DIR;
beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
});
afterAll(() => {
  if (before === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = before;
});

function config(name: string) {
  return resolveExperimentConfig(
    {
      name,
      dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 2 },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', cache: join(dir, 'llm-cache.sqlite') },
      metrics: ['str_em'],
      tracking: { enabled: false },
    },
    registry,
    { source: 'inline' },
  );
}

describe('runConfig', () => {
  it('runs a checked config into its run folder, and refuses the folder again without resume', async () => {
    const composer = createComposer({ notify: () => undefined });
    try {
      const c = config('wired');
      const outcome = await runConfig(c, { composer, resume: false, preflight: false });
      expect(outcome?.status).toBe('FINISHED');
      expect(outcome?.runDir).toBe(runDirOf(c));
      await expect(runConfig(c, { composer, resume: false, preflight: false })).rejects.toThrow(/run directory already exists/);
      const again = await runConfig(c, { composer, resume: true, preflight: false });
      expect(again?.answeredNow).toBe(0);
    } finally {
      await composer.close();
    }
  });

  it('starts nothing when interrupted during the preflight, and says when --resume finds no run yet', async () => {
    const composer = createComposer({ notify: () => undefined });
    const notes: string[] = [];
    const controller = new AbortController();
    const c = config('stopped');
    try {
      const stopping = { ...composer, preflight: async () => (controller.abort(), { problems: [], notes: [] }) };
      expect(await runConfig(c, { composer: stopping, resume: true, env: { signal: controller.signal, note: (m) => notes.push(m) } })).toBeUndefined();
      expect(notes).toEqual([`no run at ${runDirOf(c)} yet; starting it`]);
      expect(existsSync(join(runDirOf(c), 'config.yaml'))).toBe(false);
    } finally {
      await composer.close();
    }
  });
});
