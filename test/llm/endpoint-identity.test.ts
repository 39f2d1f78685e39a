import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmCache, cacheKeyMaterial } from '../../src/llm/cache';
import { LlmClient, normaliseRequest } from '../../src/llm/client';
import { embeddedEngine } from '../../src/llm/providers/llama-cpp';
import { OpenAICompatibleProvider } from '../../src/llm/providers/openai-compatible';
import type { LanguageModelProvider } from '../../src/llm/types';
import { startFaultServer, type FaultServer } from './fault-server';

// Two things that made a cache lie: answers shared between two servers that serve the same model
// name, and n byte-identical requests for n samples (a deterministic server answers n copies).
let a: FaultServer;
let b: FaultServer;
let dir: string;
beforeAll(async () => {
  [a, b] = await Promise.all([startFaultServer(), startFaultServer()]);
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-endpoint-'));
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const client = (server: FaultServer, cache: LlmCache) =>
  new LlmClient(new OpenAICompatibleProvider({ baseUrl: server.url, model: 'same-name', apiKey: 'k-123456789' }), { cache, limiter: { baseDelayMs: 1 } });

describe('the cache key', () => {
  it('includes the endpoint: a second server with the same model name is asked, not replayed', async () => {
    const cache = new LlmCache({ path: join(dir, 'shared.sqlite') });
    a.replyFor = () => 'from server A';
    b.replyFor = () => 'from server B';
    expect((await client(a, cache).generate({ prompt: 'q' })).completions[0]!.text).toBe('from server A');
    const fromB = await client(b, cache).generate({ prompt: 'q' });
    expect(fromB.completions[0]).toMatchObject({ text: 'from server B', cacheHit: false });
    expect(b.requests).toHaveLength(1);
    // …and each replays its own.
    expect((await client(a, cache).generate({ prompt: 'q' })).completions[0]).toMatchObject({ text: 'from server A', cacheHit: true });
    cache.close();
  });

  it('holds the endpoint without credentials, and only for providers that have one', () => {
    const request = normaliseRequest({ prompt: 'q' });
    expect(cacheKeyMaterial({ provider: 'openai-compatible', model: 'm', endpoint: 'http://h:1/v1', request, sampleIndex: 0 })).toMatchObject({ endpoint: 'http://h:1/v1' });
    expect(cacheKeyMaterial({ provider: 'llama-cpp', model: 'm', request, sampleIndex: 0 })).not.toHaveProperty('endpoint');
    expect(new OpenAICompatibleProvider({ baseUrl: `${a.url}/`, model: 'm' }, {}).endpoint).toBe(a.url);
  });
});

/** An in-process provider whose replies name the engine that drew them. */
function engineProvider(engine: string): LanguageModelProvider & { calls: number } {
  const provider = {
    provider: 'in-process',
    model: 'same-file',
    engine,
    calls: 0,
    async doGenerate() {
      provider.calls++;
      return { text: `drawn by ${engine}`, finishReason: 'stop' as const, usage: { promptTokens: 1, completionTokens: 3 } };
    },
    async doJudge() {
      provider.calls++;
      const yes = engine.endsWith('2') ? 0.9 : 0.1;
      return { probabilities: [yes, 1 - yes], labelMass: 1, mode: 'probability' as const, usage: { promptTokens: 1, completionTokens: 0 } };
    },
  };
  return provider;
}

describe('the cache key of an in-process provider', () => {
  it('includes the engine: what an older engine version stored is drawn again, not replayed', async () => {
    // node-llama-cpp 3.21.1 garbled batched samples; after the upgrade its rows must miss.
    const cache = new LlmCache({ path: join(dir, 'engine.sqlite') });
    const old = engineProvider('lib@1');
    const fixed = engineProvider('lib@2');
    const ask = { prompt: 'q', n: 2, temperature: 0.7 };
    const judge = { prompt: 'is it?', labels: ['yes', 'no'] };
    await new LlmClient(old, { cache }).generate(ask);
    await new LlmClient(old, { cache }).judge(judge);
    const redrawn = await new LlmClient(fixed, { cache }).generate(ask);
    expect(redrawn.completions.map((c) => [c.text, c.cacheHit])).toEqual([['drawn by lib@2', false], ['drawn by lib@2', false]]);
    const rejudged = await new LlmClient(fixed, { cache }).judge(judge);
    expect(rejudged.cacheHit).toBe(false);
    expect(rejudged.p).toBeCloseTo(0.9);
    expect(fixed.calls).toBe(3);
    // The same engine replays its own rows.
    const replay = await new LlmClient(engineProvider('lib@2'), { cache }).generate(ask);
    expect(replay.completions.every((c) => c.cacheHit && c.text === 'drawn by lib@2')).toBe(true);
    cache.close();
  });

  it('names the installed node-llama-cpp, at least 3.22 (3.21.1 garbled batched samples)', () => {
    const m = /^node-llama-cpp@(\d+)\.(\d+)\.\d+$/.exec(embeddedEngine());
    expect(m).not.toBeNull();
    expect(Number(m![1]) * 1000 + Number(m![2])).toBeGreaterThanOrEqual(3022);
    const request = normaliseRequest({ prompt: 'q' });
    expect(cacheKeyMaterial({ provider: 'llama-cpp', model: 'm', engine: embeddedEngine(), request, sampleIndex: 0 })).toMatchObject({ engine: embeddedEngine() });
    expect(cacheKeyMaterial({ provider: 'openai-compatible', model: 'm', endpoint: 'http://h:1/v1', request, sampleIndex: 0 })).not.toHaveProperty('engine');
  });
});

describe('n samples from a deterministic server that ignores seeds', () => {
  it('are n distinct requests, so n distinct answers, each replayed from the cache', async () => {
    // Answers depend on every field but the seed: what a caching proxy or a greedy server does.
    a.requests = [];
    a.replyFor = (body) => {
      const { seed: _ignored, ...rest } = body;
      return `answer ${createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 8)}`;
    };
    const cache = new LlmCache({ path: join(dir, 'samples.sqlite') });
    const first = await client(a, cache).generate({ prompt: 'which?', n: 4, temperature: 0.8 });
    const texts = first.completions.map((c) => c.text);
    expect(new Set(texts).size).toBe(4);
    const bodies = a.requests.map((r) => JSON.stringify(r.body));
    expect(new Set(bodies).size).toBe(4);
    expect(a.requests.map((r) => r.body.seed ?? null).sort()).toEqual([1, 2, 3, null]);
    // Replay: the same four, in order, and no request.
    const again = await client(a, cache).generate({ prompt: 'which?', n: 4, temperature: 0.8 });
    expect(again.completions.map((c) => c.text)).toEqual(texts);
    expect(again.completions.every((c) => c.cacheHit)).toBe(true);
    expect(a.requests).toHaveLength(4);
    cache.close();
  });

  it('a seeded request varies the seed per sample and leaves sample 0 as it was', async () => {
    a.requests = [];
    a.replyFor = undefined;
    await new LlmClient(new OpenAICompatibleProvider({ baseUrl: a.url, model: 'm', apiKey: 'k-123456789' })).generate({ prompt: 'p', n: 3, seed: 10, temperature: 1 });
    const byIndex = a.requests.map((r) => ({ seed: r.body.seed, user: r.body.user })).sort((x, y) => Number(x.seed) - Number(y.seed));
    expect(byIndex).toEqual([{ seed: 10, user: undefined }, { seed: 11, user: 'ambiqa-sample-1' }, { seed: 12, user: 'ambiqa-sample-2' }]);
  });
});
