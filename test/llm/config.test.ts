import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { createLanguageModel, describeLlmConfig, llmConfigSchema, resolveLlmConfig } from '../../src/llm/config';
import { availableParallelism } from 'node:os';
import { busyShare, defaultThreads } from '../../src/llm/providers/llama-cpp';

describe('llmConfigSchema', () => {
  it('fills defaults: embedded provider, cache on, adaptive retries (no fixed cap), key from OPENAI_API_KEY', () => {
    expect(llmConfigSchema.parse({})).toEqual({
      provider: 'embedded',
      apiKeyEnv: 'OPENAI_API_KEY',
      contextSize: 4096,
      judgeMode: 'probability',
      cache: { mode: 'use' },
    });
  });

  it('fills provider-dependent defaults when resolved', () => {
    const embedded = resolveLlmConfig({});
    expect(embedded).toMatchObject({ maxConcurrency: 1, timeoutSeconds: 600, threads: defaultThreads() });
    expect(embedded.cache.path).toMatch(/llm-cache\.sqlite$/);
    expect(resolveLlmConfig({ provider: 'openai-compatible' })).toMatchObject({ maxConcurrency: 4, timeoutSeconds: 120 });
    expect(resolveLlmConfig({ provider: 'openai-compatible', maxConcurrency: 9, timeoutSeconds: 5 })).toMatchObject({
      maxConcurrency: 9,
      timeoutSeconds: 5,
    });
  });

  it('defaults threads to AMBIQA_LLM_THREADS, else every core on an idle machine and one fewer on a busy one, never 0', () => {
    expect(defaultThreads({ AMBIQA_LLM_THREADS: '3' }, () => false)).toBe(3);
    const cores = availableParallelism();
    expect(defaultThreads({ AMBIQA_LLM_THREADS: 'lots' }, () => false)).toBe(Math.max(1, cores - 1));
    expect(defaultThreads({}, () => true)).toBe(cores);
    expect(defaultThreads({}, () => false)).toBe(Math.max(1, cores - 1));
    expect(busyShare({ busy: 100, total: 1000 }, { busy: 150, total: 1100 })).toBeCloseTo(0.5);
    expect(busyShare({ busy: 5, total: 10 }, { busy: 5, total: 10 })).toBe(0);
  });

  it('accepts a cache path as a string', () => {
    expect(llmConfigSchema.parse({ cache: '/tmp/x.sqlite' }).cache).toEqual({ mode: 'use', path: '/tmp/x.sqlite' });
  });

  it('rejects unknown fields, bad values and names the field', () => {
    expect(llmConfigSchema.safeParse({ temprature: 0.5 }).success).toBe(false);
    const bad = () => resolveLlmConfig({ provider: 'gpt' as never, maxRetries: -1, cache: { mode: 'sometimes' as never } });
    expect(bad).toThrow(/invalid llm config/);
    const text = (() => {
      try {
        bad();
      } catch (e) {
        return describeError(e);
      }
      return '';
    })();
    expect(text).toContain('llm.provider');
    expect(text).toContain('llm.maxRetries');
    expect(text).toContain('llm.cache.mode');
    expect(text).toContain('fix:');
    expect(llmConfigSchema.safeParse({ apiKeyEnv: 'not a name' }).success).toBe(false);
  });
});

describe('embedded provider: bad input', () => {
  let dir: string;
  let savedCacheDir: string | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-config-'));
    savedCacheDir = process.env.AMBIQA_CACHE_DIR;
  });
  afterEach(() => {
    if (savedCacheDir === undefined) delete process.env.AMBIQA_CACHE_DIR;
    else process.env.AMBIQA_CACHE_DIR = savedCacheDir;
    rmSync(dir, { recursive: true, force: true });
  });

  it('a missing model file names the path and the fix', async () => {
    const missing = join(dir, 'no-such-model.gguf');
    const error = await createLanguageModel({ model: missing, cache: { mode: 'off' } }).catch((e: unknown) => e);
    const text = describeError(error);
    expect(text).toContain(`embedded model file not found: ${missing}`);
    expect(text).toContain('npx ambiqa setup');
    expect(text).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('without setup (no manifest) it says to run `npx ambiqa setup`', async () => {
    process.env.AMBIQA_CACHE_DIR = dir;
    const error = await createLanguageModel({ cache: { mode: 'off' } }).catch((e: unknown) => e);
    const text = describeError(error);
    expect(text).toContain(join(dir, 'models', 'manifest.json'));
    expect(text).toContain('npx ambiqa setup');
    expect(describeLlmConfig({ cache: { mode: 'off' } })).toMatchObject({ provider: 'embedded', model: '(setup manifest missing)' });
  });

  it('describes an embedded config as a flat, loggable record', () => {
    const model = join(dir, 'm.gguf');
    expect(describeLlmConfig({ model, threads: 2, cache: { path: join(dir, 'c.sqlite') } })).toEqual({
      provider: 'embedded',
      judgeMode: 'probability',
      model,
      threads: 2,
      contextSize: 4096,
      sequences: 8,
      prefixReuse: true,
      batchSamples: true,
      flashAttention: true,
      engine: expect.stringMatching(/^node-llama-cpp@\d+\.\d+\.\d+$/),
      cpu: expect.stringMatching(/\S/),
      maxConcurrency: 1,
      maxRetries: 'adaptive',
      timeoutSeconds: 600,
      pricing: 'embedded model: free (runs on this machine)',
      cacheMode: 'use',
      cachePath: join(dir, 'c.sqlite'),
    });
  });
});
