import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CostCap, CostLimitError, spendCap } from '../../src/llm/budget';
import { wrapModel } from '../../src/llm/middleware';
import { LlmClient } from '../../src/llm/client';
import { resolveLlmConfig, resolvePrice } from '../../src/llm/config';
import { builtinPrice, callCostUsd, formatUsd } from '../../src/llm/pricing';
import { ScriptedProvider } from '../../src/llm/providers/scripted';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-pricing-'));

describe('pricing', () => {
  it('prices tokens per million, cached prompt tokens at the cached rate (hand-worked)', () => {
    // 1,000 prompt tokens at $2/M = $0.002; 500 completion at $8/M = $0.004.
    expect(callCostUsd({ promptTokens: 1000, completionTokens: 500 }, { prompt: 2, completion: 8 })).toBeCloseTo(0.006, 12);
    // 400 of the 1,000 cached at $0.5/M: 600×2 + 400×0.5 + 500×8 = 1200 + 200 + 4000 = 5400 → $0.0054.
    expect(callCostUsd({ promptTokens: 1000, completionTokens: 500, cachedPromptTokens: 400 }, { prompt: 2, completion: 8, cachedPrompt: 0.5 })).toBeCloseTo(0.0054, 12);
    // Without a cached rate, cached tokens cost the full prompt rate.
    expect(callCostUsd({ promptTokens: 1000, completionTokens: 0, cachedPromptTokens: 400 }, { prompt: 2, completion: 8 })).toBeCloseTo(0.002, 12);
    expect(formatUsd(0)).toBe('$0');
    expect(formatUsd(0.00123)).toBe('$0.00123');
    expect(formatUsd(0.0523)).toBe('$0.0523');
    expect(formatUsd(12.345)).toBe('$12.35');
  });

  it('finds built-in prices by name, snapshot suffix or provider prefix; config wins; embedded is free', () => {
    expect(builtinPrice('gpt-4o-mini')?.pricing).toEqual({ prompt: 0.15, completion: 0.6, cachedPrompt: 0.075 });
    expect(builtinPrice('gpt-4o-mini-2024-07-18')?.name).toBe('gpt-4o-mini');
    expect(builtinPrice('openai/gpt-4.1')?.name).toBe('gpt-4.1');
    expect(builtinPrice('qwen2.5-0.5b')).toBeUndefined();
    expect(resolvePrice({ provider: 'openai-compatible', model: 'gpt-4o-mini' }, {})?.source).toMatch(/built-in table \(\d{4}-\d{2}-\d{2}\) for gpt-4o-mini/);
    expect(resolvePrice({ provider: 'openai-compatible', model: 'gpt-4o-mini', pricing: { prompt: 1, completion: 1 } }, {})?.pricing).toEqual({ prompt: 1, completion: 1 });
    expect(resolvePrice({ provider: 'embedded' }, {})).toMatchObject({ pricing: { prompt: 0, completion: 0 }, free: true });
    expect(resolvePrice({ provider: 'openai-compatible', model: 'my-local-model' }, {})).toBeUndefined();
  });

  it('refuses a spending cap without a price, naming the field', () => {
    expect(() => resolveLlmConfig({ provider: 'openai-compatible', model: 'my-local-model', maxCostUsd: 1 })).toThrow(/llm.maxCostUsd is set, but no price is known for model "my-local-model"/);
    expect(() => resolveLlmConfig({ provider: 'openai-compatible', model: 'my-local-model', pricing: { prompt: -1, completion: 1 } })).toThrow(/llm.pricing.prompt/);
  });
});

describe('LlmClient cost', () => {
  // Scripted usage: 7 prompt + 3 completion tokens per sample (set below); at $1/$2 per M that
  // is 7×1 + 3×2 = 13 micro-dollars per sample.
  const provider = () => {
    const p = new ScriptedProvider(() => 'yes');
    const inner = p.doGenerate.bind(p);
    p.doGenerate = async (request, index) => ({ ...(await inner(request, index)), usage: { promptTokens: 7, completionTokens: 3 } });
    return p;
  };

  it('charges live samples, replays at 0, and leaves cost out without a price', async () => {
    const cache = join(dir, 'cost.sqlite');
    const a = new LlmClient(provider(), { cache: { path: cache }, pricing: { prompt: 1, completion: 2 } });
    const live = await a.generate({ prompt: 'q', n: 3, temperature: 1 });
    expect(live.completions.map((c) => c.costUsd)).toEqual([13e-6, 13e-6, 13e-6]);
    expect(a.usage.costUsd).toBeCloseTo(39e-6, 12);
    const replay = await a.generate({ prompt: 'q', n: 3, temperature: 1 });
    expect(replay.completions.map((c) => [c.cacheHit, c.costUsd])).toEqual([[true, 0], [true, 0], [true, 0]]);
    expect(a.usage.costUsd).toBeCloseTo(39e-6, 12);
    // A judgment through the text fallback is one live call: charged too.
    const judged = await a.judge({ prompt: 'is it?', labels: ['yes', 'no'] });
    expect(judged.costUsd).toBeCloseTo(13e-6, 12);
    a.close();
    const unpriced = new LlmClient(provider());
    const r = await unpriced.generate({ prompt: 'q' });
    expect(r.completions[0]!.costUsd).toBeUndefined();
    expect(unpriced.usage.costUsd).toBeUndefined();
  });

  it('a cap stops live calls that would pass it, never replays', async () => {
    const cache = join(dir, 'cap.sqlite');
    const client = new LlmClient(provider(), { cache: { path: cache }, pricing: { prompt: 1, completion: 2 } });
    let stopped: CostLimitError | undefined;
    // 40 µ$: calls 1–3 spend 39 µ$; the 4th would reach 52 µ$ (3 spent + 1 estimated at 13) → refused.
    const cap = new CostCap(40e-6, 0, 0, (e) => (stopped = e));
    const model = wrapModel(client, [spendCap(cap)]);
    for (let i = 0; i < 3; i++) await model.generate({ prompt: `q${i}` });
    await expect(model.generate({ prompt: 'q3' })).rejects.toThrow('stopped by the cost cap: $0.000039 spent, and the next call would pass the cap of $0.00004');
    expect(stopped).toBeInstanceOf(CostLimitError);
    expect(cap.spentUsd).toBeCloseTo(39e-6, 12);
    // Replays cost nothing and are never refused.
    const again = await model.generate({ prompt: 'q1' });
    expect(again.completions[0]!.cacheHit).toBe(true);
    // Earlier sessions' spend and calls count: with 39 µ$ spent on 3 calls, the next is expected
    // to cost 13 µ$, so a 40 µ$ cap refuses at once and a 60 µ$ cap lets it go.
    const resumed = new CostCap(40e-6, 39e-6, 3);
    expect(() => resumed.open()).toThrow(CostLimitError);
    const roomy = new CostCap(60e-6, 39e-6, 3);
    expect(() => roomy.open()).not.toThrow();
    const full = new CostCap(40e-6, 40e-6);
    expect(() => full.open()).toThrow(CostLimitError);
    client.close();
  });
});
