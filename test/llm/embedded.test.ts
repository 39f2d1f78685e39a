import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel } from '../../src/llm/config';
import { LlamaCppProvider, loadedEmbeddedModels, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { manifestPath, readModelManifest } from '../../src/setup/manifest';

/**
 * The embedded provider with the real GGUF model that `ambiqa setup` installs. Generations are
 * kept to a few tokens; the model loads once for the whole file. One thread: test files run in
 * parallel, and llama.cpp with a thread per core slows down many times when cores are shared.
 */
const hasModel = existsSync(manifestPath());
if (!hasModel) console.log(`skipping embedded LLM tests: ${manifestPath()} is absent (run \`npx ambiqa setup\`)`);

describe.skipIf(!hasModel)('embedded llama.cpp provider (real model)', () => {
  let dir: string;
  let provider: LlamaCppProvider;
  const question = [
    { role: 'system' as const, content: 'Answer with one word.' },
    { role: 'user' as const, content: 'What is the capital of France?' },
  ];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-embedded-'));
    provider = new LlamaCppProvider({ threads: 1 });
    await provider.load();
  });
  afterAll(async () => {
    await unloadEmbeddedModels();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('identifies the model by the manifest checksum and generates real tokens, counted', async () => {
    const manifest = readModelManifest();
    expect(provider.provider).toBe('llama-cpp');
    expect(provider.model).toBe(manifest.llm.sha256);
    const client = new LlmClient(provider);
    const r = await client.generate({ messages: question, maxTokens: 8 });
    const c = r.completions[0]!;
    expect(c.text.trim().length).toBeGreaterThan(0);
    expect(c.cacheHit).toBe(false);
    expect(c.latencySeconds).toBeGreaterThan(0);
    expect(c.usage.completionTokens).toBeGreaterThan(0);
    expect(c.usage.completionTokens).toBeLessThanOrEqual(8);
    if (c.finishReason === 'length') expect(c.usage.completionTokens).toBe(8);
    // The prompt is rendered through the chat template, so it has more tokens than its words.
    expect(c.usage.promptTokens).toBeGreaterThan(12);
    // A longer prompt has more prompt tokens (counted by the tokenizer, not guessed).
    const longer = await client.generate({ messages: [{ role: 'system', content: 'You are careful. ' + question[0]!.content }, question[1]!], maxTokens: 1 });
    expect(longer.completions[0]!.usage.promptTokens).toBeGreaterThan(c.usage.promptTokens);
    expect(longer.completions[0]!.usage.completionTokens).toBe(1);
    expect(longer.completions[0]!.finishReason).toBe('length');
  });

  it('replays from the cache across clients; the loaded model is shared, not reloaded', async () => {
    const path = join(dir, 'embedded.sqlite');
    const a = await createLanguageModel({ threads: 1, cache: { path } });
    const live = await a.generate({ messages: question, maxTokens: 6, temperature: 0.8, seed: 11, n: 2 });
    a.close();
    expect(live.completions.every((c) => !c.cacheHit)).toBe(true);
    const b = await createLanguageModel({ threads: 1, cache: { path } });
    const replay = await b.generate({ messages: question, maxTokens: 6, temperature: 0.8, seed: 11, n: 2 });
    expect(replay.completions.map((c) => c.text)).toEqual(live.completions.map((c) => c.text));
    expect(replay.completions.every((c) => c.cacheHit)).toBe(true);
    expect(b.usage).toMatchObject({ calls: 1, samples: 2, cacheHits: 2, liveSeconds: 0 });
    b.close();
    expect(loadedEmbeddedModels()).toEqual([readModelManifest().llm.file]);
  });

  it('sampled outputs differ per sample index and reproduce without the cache (seed + index)', async () => {
    const client = new LlmClient(provider);
    const request = { prompt: 'Write a short sentence about rivers.', maxTokens: 6, temperature: 1.2, seed: 3 };
    const two = await client.generate({ ...request, n: 2 });
    expect(two.completions[0]!.text).not.toBe(two.completions[1]!.text);
    const again = await client.generate({ ...request, n: 2 });
    expect(again.completions.map((c) => c.text)).toEqual(two.completions.map((c) => c.text));
    expect(again.completions.some((c) => c.cacheHit)).toBe(false);
  });

  it('stops before a stop string, and serialises concurrent calls on the shared context', async () => {
    const client = new LlmClient(provider, { limiter: { maxConcurrency: 4 } });
    const greedy = { messages: question, maxTokens: 8 };
    // Two greedy calls at once on one context (one with a different prompt in between) must not
    // interfere: each equals its sequential result.
    const other = { prompt: 'Name a colour.', maxTokens: 4 };
    const [x, o] = await Promise.all([client.generate(greedy), client.generate(other)]);
    const text = x!.completions[0]!.text;
    const [y, o2] = [await client.generate(greedy), await client.generate(other)];
    expect(y!.completions[0]!.text).toBe(text);
    expect(o2!.completions[0]!.text).toBe(o!.completions[0]!.text);
    const words = text.split(/\s+/).filter((w) => w.length > 1);
    if (words.length < 2) return; // nothing to cut at; the equality above already checked the text
    const stopAt = words[1]!;
    const cut = await client.generate({ ...greedy, stop: [stopAt] });
    expect(cut.completions[0]!.text).toBe(text.slice(0, text.indexOf(stopAt)));
    expect(cut.completions[0]!.finishReason).toBe('stop');
  });
});
