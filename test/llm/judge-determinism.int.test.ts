import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestPath } from '../../src/config/models';
import { LlmClient } from '../../src/llm/client';
import { CANONICAL_CHUNK, LlamaCppProvider, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import type { ChatMessage, JudgeRequest } from '../../src/llm/types';

/**
 * Determinism of the embedded judge, bit for bit: the same judge request gives the same P
 * (compared with Object.is on the doubles, or as the hex of their bits across processes) whatever
 * the provider evaluated before or beside it — prefix reuse on or off, any history, any slot of
 * the pool, other judgments in flight, a cache replay, a fresh process. At temperature 0 the
 * greedy reply is the same too. The prompts are ToC-verification-shaped and short (the model's
 * real 0.5B GGUF, one thread), so the file stays around a minute on a busy machine.
 *
 * Why it can break: llama.cpp's CPU kernels compute a token with other arithmetic depending on
 * the batch it is evaluated in, so the same prompt split differently gives other bits (P moved
 * by up to 0.02 by hand). The provider therefore evaluates every prompt canonically, in chunks
 * aligned to CANONICAL_CHUNK from position 0, and resumes a slot only at such a boundary.
 */
const hasModel = existsSync(manifestPath());
if (!hasModel) console.log(`skipping the judge determinism tests: ${manifestPath()} is absent (run \`npx ambiqa setup\`)`);

const system: ChatMessage = {
  role: 'system',
  content:
    'You check whether a passage supports the answer to a question. Read the passage carefully; look at the names, ' +
    'dates and places it mentions, and answer True only when the passage states the answer.',
};
const passage =
  'The Danube is the second-longest river in Europe. It rises in the Black Forest and flows through Ulm, Regensburg, ' +
  'Linz, Vienna, Bratislava, Budapest and Belgrade before it reaches the Black Sea. Vienna, on its banks, is the ' +
  'capital of Austria; Budapest is the capital of Hungary.';
const verify = (question: string, answer: string): JudgeRequest => ({
  messages: [system, { role: 'user', content: `Passage: ${passage}\nQuestion: ${question}\nProposed answer: ${answer}\nIs the proposed answer supported by the passage? Answer True or False.` }],
  labels: ['True', 'False'],
  purpose: 'test.verify',
});
const target = verify('Which city on the Danube is the capital of Austria?', 'Vienna');
const others = [verify('Which city on the Danube is the capital of Hungary?', 'Prague'), verify('Where does the Danube rise?', 'The Black Forest')];
/** A prompt sharing the target's system message and passage, then something else: a resume point mid-chunk. */
const sharesPrefix = { messages: [system, { role: 'user' as const, content: `Passage: ${passage}\nQuestion: Name a city on the Danube.` }], maxTokens: 4 };
const unrelated = { messages: [{ role: 'user' as const, content: 'Name three colours of the rainbow.' }], maxTokens: 6 };

const bits = (p: number) => Buffer.from(new Float64Array([p]).buffer).toString('hex');
/** A provider of its own (its own context: `pool`), so that no test resumes another's slots. */
const fresh = (pool: string, options: Partial<ConstructorParameters<typeof LlamaCppProvider>[0]> = {}) =>
  new LlamaCppProvider({ threads: 1, contextSize: 1024, sequences: 3, pool, ...options });

describe.skipIf(!hasModel)('embedded judgments are bit-identical whatever ran before or beside them (real model)', () => {
  let dir: string;
  let reference: number;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-det-'));
    // The reference: a fresh provider, reuse off, nothing evaluated before.
    reference = (await new LlmClient(fresh('reference', { prefixReuse: false })).judge(target)).p;
    expect(reference).toBeGreaterThan(0);
    expect(reference).toBeLessThan(1);
  });
  afterAll(async () => {
    await unloadEmbeddedModels();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reuse on, after unrelated prompts and after a prompt sharing its prefix: the same bits; the prefix was resumed', async () => {
    const provider = fresh('history');
    const llm = new LlmClient(provider);
    expect(Object.is((await llm.judge(target)).p, reference)).toBe(true);
    // Judged again: the slot holds the whole prompt; a naive resume would evaluate the last token alone.
    provider.resetStats();
    expect(Object.is((await llm.judge(target)).p, reference)).toBe(true);
    expect(provider.stats.promptTokensEvaluated).toBeLessThanOrEqual(CANONICAL_CHUNK);
    await llm.generate(unrelated);
    await llm.judge(others[0]!);
    await llm.generate(sharesPrefix);
    await llm.generate(sharesPrefix);
    provider.resetStats();
    const after = (await llm.judge(target)).p;
    expect(bits(after)).toBe(bits(reference));
    // Resumed from the shared system message and passage (not re-read), yet the same bits.
    expect(provider.stats.promptTokensEvaluated).toBeLessThanOrEqual(provider.stats.promptTokens - CANONICAL_CHUNK);
  });

  it('any slot of the pool: the same prompt judged on another slot gives the same bits', async () => {
    const provider = fresh('slots', { sequences: 2 });
    const llm = new LlmClient(provider);
    const first = (await llm.judge(target)).p;
    const firstSlot = provider.lastSlots[0];
    // Two unrelated prompts take the least recently used slots: the target's prefix is evicted.
    await llm.generate(unrelated);
    await llm.generate({ ...unrelated, messages: [{ role: 'user', content: 'Name two kinds of trees.' }] });
    const second = (await llm.judge(target)).p;
    expect(provider.lastSlots[0]).not.toBe(firstSlot);
    expect(Object.is(first, reference)).toBe(true);
    expect(Object.is(second, reference)).toBe(true);
  });

  it('other judgments in flight on the same client and on another context at once: the same bits', async () => {
    const provider = fresh('concurrent');
    const llm = new LlmClient(provider, { limiter: { maxConcurrency: 4 } });
    const beside = new LlmClient(fresh('beside'), { limiter: { maxConcurrency: 4 } });
    const [a, , , b] = await Promise.all([llm.judge(target), llm.judge(others[0]!), llm.judge(others[1]!), beside.judge(target), beside.judge(others[1]!)]);
    // In reverse order too.
    const [, , c] = await Promise.all([llm.judge(others[1]!), llm.judge(others[0]!), new LlmClient(provider).judge(target)]);
    for (const p of [a!.p, b!.p, c!.p]) expect(bits(p)).toBe(bits(reference));
  });

  it('a resume replays the stored value; a fresh process recomputes the same bits', async () => {
    const path = join(dir, 'judge.sqlite');
    const live = new LlmClient(fresh('history'), { cache: { path } });
    const stored = await live.judge(target);
    live.close();
    const replay = new LlmClient(fresh('history'), { cache: { path } });
    const replayed = await replay.judge(target);
    replay.close();
    expect(replayed.cacheHit).toBe(true);
    expect(Object.is(replayed.p, stored.p)).toBe(true);
    expect(Object.is(stored.p, reference)).toBe(true);
    // Another process, another provider, the requests in another order.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(__dirname, 'fixtures', 'judge-once.ts'), JSON.stringify([others[1], target]), JSON.stringify({ threads: 1, contextSize: 1024, sequences: 3 })],
      { timeout: 110_000, env: { ...process.env } },
    );
    const [, child] = JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
    expect(child).toBe(bits(reference));
  });

  it('at temperature 0 the greedy reply is the same, text-mode judgments included, with or without reuse and history', async () => {
    const request = { messages: target.messages!, maxTokens: 12 };
    const clean = await new LlmClient(fresh('text-clean', { prefixReuse: false })).generate(request);
    const busy = fresh('text-busy');
    const llm = new LlmClient(busy);
    await llm.generate(sharesPrefix);
    await llm.judge(others[1]!);
    const after = await llm.generate(request);
    expect(after.completions[0]!.text).toBe(clean.completions[0]!.text);
    const textJudge = new LlmClient(busy, { judgeMode: 'text' });
    await llm.generate(sharesPrefix);
    const judged = await textJudge.judge(target);
    const judgedClean = await new LlmClient(fresh('text-clean', { prefixReuse: false }), { judgeMode: 'text' }).judge(target);
    expect(judged.mode).toBe('text');
    expect(judged.text).toBe(judgedClean.text);
  });
});
