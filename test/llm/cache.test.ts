import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LlmCache, cacheKey, cacheKeyMaterial, canonicalJson } from '../../src/llm/cache';
import { LlmClient, normaliseRequest } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import type { GenerateRequest, NormalisedRequest } from '../../src/llm/types';
import { diffUsage, meterUsage, UsageMeter, usageOf } from '../../src/llm/usage';
import { wrapModel } from '../../src/llm/middleware';

/** A provider whose every live sample is unique, so a replay is told apart from a new call. */
function countingProvider(model = 'm') {
  let live = 0;
  return new ScriptedProvider((req, sampleIndex) => `live#${live++} idx=${sampleIndex} t=${req.temperature}`, model);
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-cache-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const ask = (extra: Partial<GenerateRequest> = {}): GenerateRequest => ({ prompt: 'Who won?', temperature: 0.7, ...extra });

describe('cache keys', () => {
  const base: NormalisedRequest = normaliseRequest({ prompt: 'q', temperature: 0.5, seed: 3 });
  const key = (r: Partial<NormalisedRequest>, sampleIndex = 0, provider = 'p', model = 'm') =>
    cacheKey({ provider, model, request: { ...base, ...r }, sampleIndex });

  it('ignores n and purpose but not any sampling parameter, the sample index, provider or model', () => {
    const k0 = key({});
    expect(key({ n: 5 })).toBe(k0);
    expect(key({ purpose: 'toc.rac' })).toBe(k0);
    const variants = [
      key({ temperature: 0.6 }),
      key({ topP: 0.9 }),
      key({ maxTokens: 17 }),
      key({ stop: ['\n'] }),
      key({ seed: 4 }),
      key({ seed: null }),
      key({ messages: [{ role: 'system', content: 'q' }] }),
      key({}, 1),
      key({}, 0, 'other-provider'),
      key({}, 0, 'p', 'other-model'),
    ];
    expect(new Set([k0, ...variants]).size).toBe(variants.length + 1);
  });

  it('is independent of object key order and of extra message properties', () => {
    const a = { b: 1, a: [{ y: 2, x: 1 }] };
    const b = { a: [{ x: 1, y: 2 }], b: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    const withExtra = { ...base, messages: [{ role: 'user' as const, content: 'q', name: 'bob' } as never] };
    expect(key(withExtra)).toBe(key({}));
    expect(cacheKeyMaterial({ provider: 'p', model: 'm', request: base, sampleIndex: 2 })).toMatchObject({ sampleIndex: 2, seed: 3 });
  });
});

describe('LlmClient with the persistent cache', () => {
  it('marks replayed samples as hits and returns them unchanged', async () => {
    const client = new LlmClient(countingProvider(), { cache: { path: join(dir, 'c.sqlite') } });
    const first = await client.generate(ask());
    const again = await client.generate(ask({ purpose: 'a different purpose' }));
    expect(first.completions[0]!.cacheHit).toBe(false);
    expect(again.completions[0]!.cacheHit).toBe(true);
    expect(again.completions[0]!.text).toBe(first.completions[0]!.text);
    expect(again.completions[0]!.usage).toEqual(first.completions[0]!.usage);
    expect(again.completions[0]!.latencySeconds).toBe(0);
    expect((client.backend as ScriptedProvider).received).toHaveLength(1);
    client.close();
  });

  it('gives n distinct samples at temperature > 0 that replay identically, index by index', async () => {
    const client = new LlmClient(countingProvider(), { cache: { path: join(dir, 'c.sqlite') } });
    const first = await client.generate(ask({ n: 3 }));
    const texts = first.completions.map((c) => c.text);
    expect(new Set(texts).size).toBe(3);
    expect(first.completions.map((c) => c.sampleIndex)).toEqual([0, 1, 2]);
    const replay = await client.generate(ask({ n: 3 }));
    expect(replay.completions.map((c) => c.text)).toEqual(texts);
    expect(replay.completions.every((c) => c.cacheHit)).toBe(true);
    client.close();
  });

  it('lets n=5 reuse the first 3 samples of n=3 and only computes the 2 new ones', async () => {
    const provider = countingProvider();
    const client = new LlmClient(provider, { cache: { path: join(dir, 'c.sqlite') } });
    const three = await client.generate(ask({ n: 3 }));
    const five = await client.generate(ask({ n: 5 }));
    expect(five.completions.slice(0, 3).map((c) => c.text)).toEqual(three.completions.map((c) => c.text));
    expect(five.completions.map((c) => c.cacheHit)).toEqual([true, true, true, false, false]);
    expect(provider.received.map((r) => r.sampleIndex)).toEqual([0, 1, 2, 3, 4]);
    // And n=3 after n=5 is all hits.
    const threeAgain = await client.generate(ask({ n: 3 }));
    expect(threeAgain.completions.every((c) => c.cacheHit)).toBe(true);
    client.close();
  });

  it('survives a restart: a second client on the same file replays without calling its provider', async () => {
    const path = join(dir, 'restart.sqlite');
    const a = new LlmClient(countingProvider(), { cache: { path } });
    const before = await a.generate(ask({ n: 2, seed: 7 }));
    a.close();
    const provider = new ScriptedProvider([], 'm'); // would throw if called
    const b = new LlmClient(provider, { cache: { path } });
    const after = await b.generate(ask({ n: 2, seed: 7 }));
    expect(after.completions.map((c) => c.text)).toEqual(before.completions.map((c) => c.text));
    expect(after.completions.every((c) => c.cacheHit)).toBe(true);
    expect(provider.received).toHaveLength(0);
    b.close();
  });

  it('does not share samples across models or providers', async () => {
    const path = join(dir, 'c.sqlite');
    const a = new LlmClient(countingProvider('model-a'), { cache: { path } });
    const b = new LlmClient(countingProvider('model-b'), { cache: { path } });
    await a.generate(ask());
    const fromB = await b.generate(ask());
    expect(fromB.completions[0]!.cacheHit).toBe(false);
    a.close();
    b.close();
  });

  it('refresh mode recomputes and overwrites; a later use-mode client sees the new sample', async () => {
    const path = join(dir, 'c.sqlite');
    const a = new LlmClient(countingProvider(), { cache: { path } });
    const old = await a.generate(ask());
    a.close();
    const refresh = new LlmClient(new ScriptedProvider(['fresh answer'], 'm'), { cache: { path, mode: 'refresh' } });
    const fresh = await refresh.generate(ask());
    expect(fresh.completions[0]!.cacheHit).toBe(false);
    expect(fresh.completions[0]!.text).toBe('fresh answer');
    // Within the refresh run, asking again replays the refreshed sample (the script is empty now).
    const again = await refresh.generate(ask());
    expect(again.completions[0]).toMatchObject({ text: 'fresh answer', cacheHit: true });
    refresh.close();
    const c = new LlmClient(new ScriptedProvider([], 'm'), { cache: { path } });
    const replay = await c.generate(ask());
    expect(replay.completions[0]!.text).toBe('fresh answer');
    expect(replay.completions[0]!.text).not.toBe(old.completions[0]!.text);
    c.close();
  });

  it('off mode (and the default) never reads or writes a cache', async () => {
    const path = join(dir, 'c.sqlite');
    const warm = new LlmClient(countingProvider(), { cache: { path } });
    await warm.generate(ask());
    warm.close();
    const off = new LlmClient(countingProvider(), { cache: { path, mode: 'off' } });
    expect(off.cache).toBeNull();
    const r1 = await off.generate(ask());
    const r2 = await off.generate(ask());
    expect([r1, r2].map((r) => r.completions[0]!.cacheHit)).toEqual([false, false]);
    expect(r1.completions[0]!.text).not.toBe(r2.completions[0]!.text);
    expect(new LlmClient(countingProvider()).cacheMode).toBe('off');
    const store = new LlmCache({ path });
    expect(store.size()).toBe(1); // only the warm client's sample
    store.close();
  });

  it('single-flight: identical concurrent requests make one provider call', async () => {
    let calls = 0;
    const slow = new ScriptedProvider(() => `answer ${calls++}`, 'm');
    const original = slow.doGenerate.bind(slow);
    slow.doGenerate = async (r, i) => {
      await new Promise((res) => setTimeout(res, 30));
      return original(r, i);
    };
    const client = new LlmClient(slow, { cache: { path: join(dir, 'c.sqlite') } });
    const results = await Promise.all([client.generate(ask()), client.generate(ask()), client.generate(ask({ purpose: 'x' }))]);
    expect(calls).toBe(1);
    expect(new Set(results.map((r) => r.completions[0]!.text)).size).toBe(1);
    expect(results.map((r) => r.completions[0]!.cacheHit).sort()).toEqual([false, true, true]);
    expect(client.usage).toMatchObject({ calls: 3, samples: 3, cacheHits: 2 });
    client.close();
  });

  it('records who computed each entry: a replay names its writer (cachedFrom), samples and judgments, stored or in flight', async () => {
    const path = join(dir, 'c.sqlite');
    const writerA = new LlmClient(new ScriptedProvider(() => 'from A', 'm', () => 0.8), { cache: { path } });
    const first = await writerA.generate(ask({ n: 2, cacheWriter: 'run-a@t0' }));
    expect(first.completions.map((c) => [c.cacheHit, c.cachedFrom])).toEqual([[false, undefined], [false, undefined]]);
    const judgedA = await writerA.judge({ prompt: 'Is it?', labels: ['True', 'False'], cacheWriter: 'run-a@t0' });
    expect(judgedA.cachedFrom).toBeUndefined();
    writerA.close();
    // Another client (another run) on the same file: its replays name run A, not itself.
    const b = new LlmClient(new ScriptedProvider(() => 'from B', 'm', () => 0.1), { cache: { path } });
    const again = await b.generate(ask({ n: 3, cacheWriter: 'run-b@t1' }));
    expect(again.completions.map((c) => [c.text, c.cacheHit, c.cachedFrom])).toEqual([
      ['from A', true, 'run-a@t0'],
      ['from A', true, 'run-a@t0'],
      ['from B', false, undefined],
    ]);
    const judgedB = await b.judge({ prompt: 'Is it?', labels: ['True', 'False'], cacheWriter: 'run-b@t1' });
    expect([judgedB.p, judgedB.cacheHit, judgedB.cachedFrom]).toEqual([0.8, true, 'run-a@t0']);
    // The writer is kept beside the value, never in the key or the replayed text.
    const c = new LlmClient(countingProvider(), { cache: { path } });
    const third = await c.generate(ask({ n: 3 }));
    expect(third.completions.map((x) => x.cachedFrom)).toEqual(['run-a@t0', 'run-a@t0', 'run-b@t1']);
    // Entries written without a writer (as before writers were recorded) replay without one.
    const d = await c.generate(ask({ prompt: 'Where?' }));
    expect(d.completions[0]!.cacheHit).toBe(false);
    expect((await c.generate(ask({ prompt: 'Where?', cacheWriter: 'run-c@t2' }))).completions[0]).toMatchObject({ cacheHit: true });
    expect((await c.generate(ask({ prompt: 'Where?' }))).completions[0]!.cachedFrom).toBeUndefined();
    c.close();
    b.close();
  });

  it('an identical call in flight is shared with its writer named', async () => {
    const slow = new ScriptedProvider(() => 'slow', 'm');
    const original = slow.doGenerate.bind(slow);
    slow.doGenerate = async (r, i) => {
      await new Promise((res) => setTimeout(res, 30));
      return original(r, i);
    };
    const client = new LlmClient(slow, { cache: { path: join(dir, 'c.sqlite') } });
    const [a, b] = await Promise.all([client.generate(ask({ cacheWriter: 'sweep-point-1@t' })), client.generate(ask({ cacheWriter: 'sweep-point-2@t' }))]);
    expect([a.completions[0]!.cacheHit, a.completions[0]!.cachedFrom]).toEqual([false, undefined]);
    expect([b.completions[0]!.cacheHit, b.completions[0]!.cachedFrom]).toEqual([true, 'sweep-point-1@t']);
    client.close();
  });

  it('two clients writing the same file concurrently in one process lose nothing', async () => {
    const path = join(dir, 'c.sqlite');
    const a = new LlmClient(countingProvider(), { cache: { path } });
    const b = new LlmClient(countingProvider(), { cache: { path } });
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).generate(ask({ prompt: `question ${i}`, n: 2 }))),
    );
    const store = new LlmCache({ path });
    expect(store.size()).toBe(80);
    store.close();
    a.close();
    b.close();
  });
});

describe('usage accounting', () => {
  it('sums calls, samples, tokens, hits and live seconds per run, with snapshot and reset', async () => {
    const client = new LlmClient(countingProvider(), { cache: { path: join(dir, 'c.sqlite') } });
    const r1 = await client.generate(ask({ n: 2 }));
    const snap = client.usage;
    await client.generate(ask({ n: 3 }));
    const u = client.usage;
    expect(snap.calls).toBe(1); // the snapshot did not move
    expect(u.calls).toBe(2);
    expect(u.samples).toBe(5);
    expect(u.cacheHits).toBe(2);
    expect(u.promptTokens).toBe(5 * r1.completions[0]!.usage.promptTokens!);
    expect(u.completionTokens).toBeGreaterThan(0);
    expect(u.liveSeconds).toBeGreaterThanOrEqual(0);
    expect(client.resetUsage().samples).toBe(5);
    expect(client.usage.calls).toBe(0);
    client.close();
  });

  it('meters each question on its own while questions share one client', async () => {
    const client = new LlmClient(countingProvider(), { cache: { path: join(dir, 'c.sqlite') } });
    const m1 = new UsageMeter();
    const m2 = new UsageMeter();
    const q1 = wrapModel(client, [meterUsage(m1)]);
    const q2 = wrapModel(client, [meterUsage(m2)]);
    const before = client.usage;
    const [r1] = await Promise.all([q1.generate(ask({ prompt: 'first', n: 2 })), q2.generate(ask({ prompt: 'second' }))]);
    await q2.generate(ask({ prompt: 'second' })); // a hit
    expect(m1.snapshot()).toEqual(usageOf(r1));
    expect(m1.snapshot()).toMatchObject({ calls: 1, samples: 2, cacheHits: 0 });
    expect(m2.snapshot()).toMatchObject({ calls: 2, samples: 2, cacheHits: 1 });
    expect(diffUsage(client.usage, before)).toMatchObject({ calls: 3, samples: 4, cacheHits: 1 });
    client.close();
  });
});
