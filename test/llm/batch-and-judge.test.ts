import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { labelProbabilities, labelSurfaceForms } from '../../src/llm/providers/llama-cpp';
import type {
  LanguageModelProvider,
  NormalisedRequest,
  ProviderBatch,
  ProviderCompletion,
} from '../../src/llm/types';
import { TraceRecorder } from '../../src/trace/recorder';
import type { Token } from 'node-llama-cpp';

/**
 * The client's batched-sample path (`doGenerateBatch`) and the embedded provider's label
 * probability logic, with test doubles: no model needed.
 */
class BatchingDouble implements LanguageModelProvider {
  readonly provider = 'batching-double';
  readonly model = 'double-1';
  readonly batches: number[][] = [];
  readonly singles: number[] = [];
  warnings: string[] = [];
  failNext = false;
  delayMs = 0;

  private reply(request: NormalisedRequest, sampleIndex: number): ProviderCompletion {
    const text = `${request.messages.at(-1)!.content} #${(request.seed ?? 0) + sampleIndex}`;
    return { text, finishReason: 'stop', usage: { promptTokens: 10, completionTokens: sampleIndex + 1 } };
  }

  async doGenerate(request: NormalisedRequest, sampleIndex: number): Promise<ProviderCompletion> {
    this.singles.push(sampleIndex);
    return this.reply(request, sampleIndex);
  }

  async doGenerateBatch(request: NormalisedRequest, sampleIndices: number[]): Promise<ProviderBatch> {
    this.batches.push([...sampleIndices]);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failNext) {
      this.failNext = false;
      throw new Error('batch failed');
    }
    return {
      completions: sampleIndices.map((i) => this.reply(request, i)),
      ...(this.warnings.length > 0 ? { warnings: this.warnings } : {}),
    };
  }
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-batch-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('LlmClient with a provider that batches samples', () => {
  const request = { prompt: 'Q', temperature: 0.7, seed: 100, n: 4 };

  it('sends the n samples of one request in one batch, in order, each with its own index', async () => {
    const backend = new BatchingDouble();
    const client = new LlmClient(backend);
    const r = await client.generate(request);
    expect(backend.batches).toEqual([[0, 1, 2, 3]]);
    expect(backend.singles).toEqual([]);
    expect(r.completions.map((c) => c.text)).toEqual(['Q #100', 'Q #101', 'Q #102', 'Q #103']);
    expect(r.completions.map((c) => c.sampleIndex)).toEqual([0, 1, 2, 3]);
    expect(r.usage).toEqual({ promptTokens: 40, completionTokens: 10 });
    // The batch's seconds are shared out, so per-sample latencies add up to the batch's time.
    const latencies = r.completions.map((c) => c.latencySeconds);
    expect(new Set(latencies).size).toBe(1);
    expect(client.usage).toMatchObject({ calls: 1, samples: 4, cacheHits: 0 });
  });

  it('caches per sample: only the misses go to the provider, and a replay calls nothing', async () => {
    const backend = new BatchingDouble();
    const path = join(dir, 'batch.sqlite');
    const client = new LlmClient(backend, { cache: { path } });
    await client.generate({ ...request, n: 2 });
    expect(backend.batches).toEqual([[0, 1]]);
    const four = await client.generate(request);
    expect(backend.batches).toEqual([[0, 1], [2, 3]]);
    expect(four.completions.map((c) => c.cacheHit)).toEqual([true, true, false, false]);
    expect(four.completions.map((c) => c.text)).toEqual(['Q #100', 'Q #101', 'Q #102', 'Q #103']);
    // One miss left: a plain single-sample call.
    const five = await client.generate({ ...request, n: 5 });
    expect(backend.singles).toEqual([4]);
    expect(five.completions[4]!.text).toBe('Q #104');
    client.close();
    const replay = new LlmClient(new BatchingDouble(), { cache: { path } });
    const again = await replay.generate(request);
    expect(again.completions.every((c) => c.cacheHit)).toBe(true);
    expect(again.completions.map((c) => c.text)).toEqual(four.completions.map((c) => c.text));
    replay.close();
  });

  it('firstSample continues the sample indices (seeds, cache keys) of an earlier call', async () => {
    const backend = new BatchingDouble();
    const client = new LlmClient(backend, { cache: { path: join(dir, 'first.sqlite') } });
    const all = await client.generate(request);
    const later = await client.generate({ ...request, n: 2, firstSample: 2 });
    expect(later.completions.map((c) => [c.sampleIndex, c.text, c.cacheHit])).toEqual([
      [2, 'Q #102', true],
      [3, 'Q #103', true],
    ]);
    const fresh = await client.generate({ ...request, n: 3, firstSample: 4 });
    expect(backend.batches).toEqual([[0, 1, 2, 3], [4, 5, 6]]);
    expect(fresh.completions.map((c) => c.text)).toEqual(['Q #104', 'Q #105', 'Q #106']);
    expect(all.request.firstSample).toBeUndefined();
    expect(fresh.request.firstSample).toBe(4);
    await expect(client.generate({ ...request, firstSample: -1 })).rejects.toThrow(/firstSample=-1/);
    client.close();
  });

  it('shares one in-flight batch between identical concurrent requests', async () => {
    const backend = new BatchingDouble();
    backend.delayMs = 20;
    const client = new LlmClient(backend, { cache: { path: join(dir, 'flight.sqlite') }, limiter: { maxConcurrency: 4 } });
    const [a, b] = await Promise.all([client.generate(request), client.generate(request)]);
    expect(backend.batches).toEqual([[0, 1, 2, 3]]);
    expect(b!.completions.map((c) => c.text)).toEqual(a!.completions.map((c) => c.text));
    client.close();
  });

  it('rejects when the batch fails, and a retry of the request reaches the provider again', async () => {
    const backend = new BatchingDouble();
    backend.failNext = true;
    const client = new LlmClient(backend, { cache: { path: join(dir, 'fail.sqlite') }, limiter: { maxRetries: 0 } });
    await expect(client.generate(request)).rejects.toThrow('batch failed');
    const r = await client.generate(request);
    expect(backend.batches).toEqual([[0, 1, 2, 3], [0, 1, 2, 3]]);
    expect(r.completions).toHaveLength(4);
    client.close();
  });

  it("puts the provider's warnings in the result and in the trace", async () => {
    const backend = new BatchingDouble();
    backend.warnings = ['samples were decoded one by one — lower `sequences`'];
    const recorder = new TraceRecorder('cot-sc', { id: 'q1', question: 'Q' }, new LlmClient(backend));
    const r = await recorder.llm.generate({ ...request, purpose: 'cot-sc.sample' });
    expect(r.warnings).toEqual(backend.warnings);
    expect(recorder.warnings).toEqual([{ purpose: 'cot-sc.sample', message: backend.warnings[0] }]);
  });
});

describe('labelProbabilities (next-token distributions over label tokens)', () => {
  // Token ids are branded numbers in node-llama-cpp's types; plain numbers stand in for them here.
  const vocab = new Map<string, number[]>();
  const tokenize = (text: string) => (vocab.get(text) ?? [999]) as unknown as Token[];

  it('lists case and leading-space variants of a label', () => {
    expect(labelSurfaceForms('true')).toEqual(['true', ' true', 'TRUE', ' TRUE', 'True', ' True']);
    expect(labelSurfaceForms(' Yes ')).toContain(' yes');
  });

  it('sums the first-token probability of every variant per label and renormalises', async () => {
    vocab.clear();
    for (const [form, ids] of Object.entries({ True: [1], ' True': [2], true: [3], ' true': [4], TRUE: [5, 6], ' TRUE': [7] })) vocab.set(form, ids);
    for (const [form, ids] of Object.entries({ False: [11], ' False': [12], false: [13], ' false': [14], FALSE: [15], ' FALSE': [16] })) vocab.set(form, ids);
    const paths: number[][] = [];
    const dist = new Map([[1, 0.4], [2, 0.1], [3, 0.05], [5, 0.05], [11, 0.2], [14, 0.1], [42, 0.1]]);
    const r = await labelProbabilities(['True', 'False'], tokenize, async (path) => {
      paths.push(path as unknown as number[]);
      return dist as unknown as Map<Token, number>;
    });
    expect(paths).toEqual([[]]); // one distribution: no label needs a second token
    expect(r.labelMass).toBeCloseTo(0.9, 12);
    expect(r.probabilities[0]).toBeCloseTo(0.6 / 0.9, 12);
    expect(r.probabilities[1]).toBeCloseTo(0.3 / 0.9, 12);
    expect(r.extraTokens).toBe(0);
  });

  it('follows a first token two labels share and reads the next distribution', async () => {
    vocab.clear();
    vocab.set('Useful', [10, 11]);
    vocab.set(' Useful', [20, 11]);
    vocab.set('Useless', [10, 12]);
    vocab.set(' Useless', [21]);
    const dists = new Map<string, Map<number, number>>([
      ['', new Map([[10, 0.6], [20, 0.2], [21, 0.05], [7, 0.15]])],
      ['10', new Map([[11, 0.75], [12, 0.25]])],
    ]);
    const asked: string[] = [];
    const r = await labelProbabilities(['Useful', 'Useless'], tokenize, async (path) => {
      asked.push(path.join(','));
      return dists.get(path.join(','))! as unknown as Map<Token, number>;
    });
    expect(asked).toEqual(['', '10']);
    expect(r.extraTokens).toBe(1);
    // Useful: 0.6·0.75 + 0.2 ; Useless: 0.6·0.25 + 0.05
    expect(r.labelMass).toBeCloseTo(0.85, 12);
    expect(r.probabilities[0]).toBeCloseTo(0.65 / 0.85, 12);
  });

  it('reports zero mass without dividing by zero', async () => {
    vocab.clear();
    const r = await labelProbabilities(['Yes', 'No'], () => [5] as unknown as Token[], async () => new Map([[6 as unknown as Token, 1]]));
    expect(r).toEqual({ probabilities: [0, 0], labelMass: 0, extraTokens: 0 });
  });
});
