import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel } from '../../src/llm/config';
import { CANONICAL_CHUNK, LlamaCppProvider, loadedEmbeddedModels, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { manifestPath, readModelManifest } from '../../src/config/models';

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
    expect(longer.completions[0]!.usage.promptTokens).toBeGreaterThan(c.usage.promptTokens!);
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

  it('judges from next-token probabilities: one forward pass, nothing decoded, replayed identically', async () => {
    const path = join(dir, 'judge.sqlite');
    const judge = {
      messages: [
        { role: 'system' as const, content: 'Reply with exactly one word.' },
        { role: 'user' as const, content: 'Is Paris the capital of France? Answer Yes or No.' },
      ],
      labels: ['Yes', 'No'],
    };
    provider.resetStats();
    const a = new LlmClient(provider, { cache: { path } });
    const live = await a.judge(judge);
    a.close();
    expect(live.mode).toBe('probability');
    for (const p of live.probabilities) {
      expect(p).toBeGreaterThan(0);
      expect(p).toBeLessThan(1);
    }
    expect(live.probabilities[0]! + live.probabilities[1]!).toBeCloseTo(1, 12);
    expect(live.label).toBe('Yes');
    expect(live.p).toBeGreaterThan(0.5);
    expect(live.labelMass).toBeGreaterThan(0.5);
    expect(live.labelMass).toBeLessThanOrEqual(1);
    // No decoding: no completion token, in the result and in what the provider ran.
    expect(live.usage.completionTokens).toBe(0);
    expect(provider.stats.completionTokens).toBe(0);
    expect(live.usage.promptTokens).toBeGreaterThan(10);
    const b = new LlmClient(provider, { cache: { path } });
    const replay = await b.judge(judge);
    b.close();
    expect(replay.cacheHit).toBe(true);
    expect(replay.probabilities).toEqual(live.probabilities);
    // Computed again (the slot now holds the whole prompt): the same distribution, bit for bit
    // (test/llm/judge-determinism.int.test.ts tests that in depth).
    const again = await new LlmClient(provider).judge(judge);
    expect(again.cacheHit).toBe(false);
    expect(Object.is(again.p, live.p)).toBe(true);
  });

  it('reports the log-probability of generated text when asked', async () => {
    const r = await new LlmClient(provider).generate({ messages: question, maxTokens: 4, logprobs: true });
    const c = r.completions[0]!;
    expect(c.logprob).toBeLessThan(0);
    expect(Number.isFinite(c.logprob)).toBe(true);
    // Greedy tokens of a one-word answer are likely: the mean token log-prob is not tiny.
    expect(c.logprob! / c.usage.completionTokens!).toBeGreaterThan(-5);
  });

  it('prefix reuse gives the same greedy replies as re-reading every prompt, and evaluates far fewer tokens', async () => {
    const system = {
      role: 'system' as const,
      content:
        'You answer geography questions with the name of a city and nothing else. ' +
        'Examples: the capital of Spain is Madrid; the capital of Japan is Tokyo; the capital of Kenya is Nairobi; ' +
        'the capital of Canada is Ottawa; the capital of Peru is Lima; the capital of Egypt is Cairo; ' +
        // Long enough that the shared part spans chunks (prompts resume at CANONICAL_CHUNK boundaries).
        'the capital of Norway is Oslo; the capital of Chile is Santiago; the capital of Vietnam is Hanoi; ' +
        'the capital of Ghana is Accra; the capital of Poland is Warsaw; the capital of Greece is Athens.',
    };
    const asks = ['What is the capital of France?', 'What is the capital of Italy?', 'What is the capital of France?'];
    const reuse = new LlamaCppProvider({ threads: 1 });
    const reread = new LlamaCppProvider({ threads: 1, prefixReuse: false, batchSamples: false });
    const withReuse: string[] = [];
    const without: string[] = [];
    for (const ask of asks) {
      const request = { messages: [system, { role: 'user' as const, content: ask }], maxTokens: 8 };
      withReuse.push((await new LlmClient(reuse).generate(request)).completions[0]!.text);
      without.push((await new LlmClient(reread).generate(request)).completions[0]!.text);
    }
    expect(withReuse).toEqual(without);
    expect(withReuse[0]).toBe(withReuse[2]);
    expect(reread.stats.promptTokensEvaluated).toBe(reread.stats.promptTokens);
    expect(reuse.stats.promptTokens).toBe(reread.stats.promptTokens);
    expect(reuse.stats.promptTokensEvaluated).toBeLessThan(reread.stats.promptTokensEvaluated);
    // After the first, each prompt re-reads only its question and the rest of the chunk it starts in.
    const first = reread.stats.promptTokens / asks.length;
    expect(reuse.stats.promptTokensEvaluated).toBeLessThanOrEqual(first + (asks.length - 1) * (CANONICAL_CHUNK + 15));
  });

  it('providers with other decoding settings keep their own slots (a side-by-side benchmark must not share work)', async () => {
    // Same size, threads and sequences: before this, both used one pool and the second to ask
    // resumed the prompt the first had evaluated (bench/llm.ts credited one mode with the other's work).
    const batched = new LlamaCppProvider({ threads: 1, sequences: 2, contextSize: 768 });
    const oneByOne = new LlamaCppProvider({ threads: 1, sequences: 2, contextSize: 768, batchSamples: false });
    const twin = new LlamaCppProvider({ threads: 1, sequences: 2, contextSize: 768 });
    const request = {
      messages: [
        { role: 'system' as const, content: 'Answer with one word. Rivers of Europe and a city on each: Danube, Vienna; Rhine, Basel; Elbe, Dresden; Loire, Nantes; Tagus, Lisbon; Vistula, Warsaw; Oder, Szczecin; Seine, Rouen; Po, Turin; Ebro, Zaragoza; Douro, Porto.' },
        { role: 'user' as const, content: 'Which river flows through Paris?' },
      ],
      maxTokens: 3,
    };
    await new LlmClient(batched).generate(request);
    await new LlmClient(oneByOne).generate(request);
    expect(oneByOne.stats.promptTokens).toBeGreaterThan(70);
    expect(oneByOne.stats.promptTokensEvaluated).toBe(oneByOne.stats.promptTokens);
    // The same settings share the pool, as clients of one run should.
    await new LlmClient(twin).generate(request);
    expect(twin.stats.promptTokensEvaluated).toBeLessThan(3);
    // ...unless a benchmark names a pool of its own for a mode with the same settings.
    const named = new LlamaCppProvider({ threads: 1, sequences: 2, contextSize: 768, pool: 'fixed-demos' });
    await new LlmClient(named).generate(request);
    expect(named.stats.promptTokensEvaluated).toBe(named.stats.promptTokens);
  });

  it('flash attention is on by default; off is a pool of its own with the same answer and judgment', async () => {
    // The kernel changes only the order of floating-point sums: a one-word greedy answer and a
    // confident yes/no judgment must not move (beyond rounding), and the two settings must not
    // share evaluated prompts (a benchmark comparing them would credit one with the other's work).
    const on = new LlamaCppProvider({ threads: 1, sequences: 1, contextSize: 512 });
    const off = new LlamaCppProvider({ threads: 1, sequences: 1, contextSize: 512, flashAttention: false });
    expect(on.flashAttention).toBe(true);
    expect(off.flashAttention).toBe(false);
    const a = await new LlmClient(on).generate({ messages: question, maxTokens: 4 });
    const b = await new LlmClient(off).generate({ messages: question, maxTokens: 4 });
    expect(b.completions[0]!.text).toBe(a.completions[0]!.text);
    expect(a.completions[0]!.text).toMatch(/paris/i);
    expect(off.stats.promptTokensEvaluated).toBe(off.stats.promptTokens);
    const judge = { messages: [{ role: 'user' as const, content: 'Is Paris the capital of France? Answer Yes or No.' }], labels: ['Yes', 'No'] };
    const pOn = (await new LlmClient(on).judge(judge)).p;
    const pOff = (await new LlmClient(off).judge(judge)).p;
    expect(pOn).toBeGreaterThan(0.5);
    // How far the kernels' rounding moves P depends on the CPU library node-llama-cpp loads:
    // |ΔP| stayed under 0.02 where this test was written and was 0.0227 on an AVX-512 (zen4)
    // machine. 0.05, the bound for two llama.cpp builds (test/llm/llama-server.int.test.ts), still
    // fails a kernel that computes something else.
    expect(Math.abs(pOn - pOff)).toBeLessThan(0.05);
  });

  it("a prompt that shares only the chat template's opening with a slot does not evict that slot's prefix", async () => {
    // A fresh context (its own size), so that its slots start empty as in a new run.
    const fresh = new LlamaCppProvider({ threads: 1, sequences: 3, contextSize: 1024 });
    const llm = new LlmClient(fresh);
    const demos = {
      role: 'system' as const,
      content:
        'You answer geography questions with the name of a city and nothing else. Examples: the capital of ' +
        'Spain is Madrid; of Japan, Tokyo; of Kenya, Nairobi; of Canada, Ottawa; of Peru, Lima; of Egypt, ' +
        'Cairo; of Norway, Oslo; of Chile, Santiago; of Vietnam, Hanoi; of Ghana, Accra; of Poland, Warsaw.',
    };
    const ask = (q: string) => ({ messages: [demos, { role: 'user' as const, content: q }], maxTokens: 4 });
    await llm.generate(ask('What is the capital of France?'));
    // Like a ToC verification after an expansion: another prompt, sharing a few template tokens.
    await llm.generate({ messages: [{ role: 'user' as const, content: 'Is grass green? Reply yes or no.' }], maxTokens: 2 });
    fresh.resetStats();
    await llm.generate(ask('What is the capital of Italy?'));
    const third = fresh.resetStats();
    expect(third.promptTokens).toBeGreaterThan(80);
    // Only the new question (and the rest of its chunk) is read: the demonstrations stayed
    // evaluated in their slot.
    expect(third.promptTokensEvaluated).toBeLessThan(20 + CANONICAL_CHUNK);
    expect(third.promptTokensEvaluated).toBeLessThan(third.promptTokens - 20);
  });

  it('samples are decoded in one batch by default; greedy samples of long few-shot prompts are all the same', async () => {
    // A FEVER-like 3-way task with a long few-shot prefix (the shape of Verify-and-Edit's CoT
    // prompts). With node-llama-cpp 3.21.1 the slots of one batch were sampled concurrently
    // without a lock, and greedy samples of one prompt came out different ("NOT EN NOTOUGH INFO");
    // this test failed with batching on there. Samples of one batch evaluate identical tokens, so
    // at temperature 0 they must be identical. Against one-by-one decoding only the label is
    // compared: a batch of 5 evaluates with other matrix shapes than a batch of 1, which may flip
    // a near tie later in a sentence.
    const labels = ['SUPPORTS', 'REFUTES', 'NOT ENOUGH INFO'];
    const rivers = ['Danube', 'Rhine', 'Elbe', 'Loire', 'Tagus', 'Vistula', 'Oder', 'Seine', 'Po', 'Ebro', 'Douro', 'Rhone'];
    const cities = ['Vienna', 'Basel', 'Dresden', 'Nantes', 'Lisbon', 'Warsaw', 'Szczecin', 'Paris', 'Turin', 'Zaragoza', 'Porto', 'Lyon'];
    const messages: Array<{ role: 'system' | 'user' | 'assistant'; content: string }> = [
      { role: 'system', content: 'Decide whether the evidence supports the claim, refutes it, or is not enough. Reason briefly, then end with "So the answer is: <label>."' },
    ];
    rivers.forEach((river, i) => {
      const label = labels[i % 3]!;
      const city = label === 'REFUTES' ? cities[(i + 5) % cities.length]! : cities[i]!;
      messages.push({ role: 'user', content: `Claim: The ${river} flows through ${city}.\nEvidence: The ${river} is a river of Europe; it passes ${cities[i]} on its way to the sea, and its basin is home to millions of people.` });
      messages.push({ role: 'assistant', content: `The evidence names the cities on the ${river}. So the answer is: ${label}.` });
    });
    const batched = new LlamaCppProvider({ threads: 1 });
    expect(batched.batchSamples).toBe(true);
    const oneByOne = new LlamaCppProvider({ threads: 1, batchSamples: false });
    const label = (text: string) => /answer is:\s*([A-Z ]+)/.exec(text)?.[1]?.trim();
    for (const [river, city] of [['Danube', 'Budapest'], ['Thames', 'Oxford'], ['Rhine', 'Cologne']] as const) {
      const ask = { messages: [...messages, { role: 'user' as const, content: `Claim: The ${river} flows through ${city}.\nEvidence: The ${river} passes ${city} and many other towns.` }], maxTokens: 16, stop: ['\n'], n: 5 };
      const five = (await new LlmClient(batched).generate(ask)).completions.map((c) => c.text);
      expect(five).toEqual(Array(5).fill(five[0]));
      expect(label(five[0]!)).toBeTruthy();
      const alone = (await new LlmClient(oneByOne).generate(ask)).completions.map((c) => c.text);
      expect(alone).toEqual(Array(5).fill(alone[0]));
      expect(label(five[0]!)).toBe(label(alone[0]!));
    }
    expect(batched.stats.batchedSamples).toBe(15);
    expect(oneByOne.stats.batchedSamples).toBe(0);
    // 30 samples of a long prompt on one thread: 61–105 s in earlier fresh-clone CIs, and 120 s
    // (the suite's default limit) once beside the package test's native compile. It asserts what
    // the samples are, not how fast they come.
  }, 300_000);

  it('batched samples: greedy equals one-by-one on a short prompt; sampled ones differ and replay per sample index', async () => {
    const batched = new LlamaCppProvider({ threads: 1 });
    const oneByOne = new LlamaCppProvider({ threads: 1, batchSamples: false });
    const greedy = { prompt: 'Name three rivers.', maxTokens: 10, n: 3 };
    const g = await new LlmClient(batched).generate(greedy);
    const s = await new LlmClient(oneByOne).generate(greedy);
    expect(batched.stats.batchedSamples).toBe(3);
    expect(oneByOne.stats.batchedSamples).toBe(0);
    expect(g.completions.map((c) => c.text)).toEqual(s.completions.map((c) => c.text));
    expect(new Set(g.completions.map((c) => c.text)).size).toBe(1);

    const path = join(dir, 'batch.sqlite');
    const sampled = { prompt: 'Write a short sentence about rivers.', maxTokens: 8, temperature: 1.2, seed: 5, n: 3 };
    const live = new LlmClient(batched, { cache: { path } });
    const first = await live.generate(sampled);
    expect(new Set(first.completions.map((c) => c.text)).size).toBeGreaterThan(1);
    const more = await live.generate({ ...sampled, n: 4 });
    live.close();
    expect(more.completions.map((c) => c.cacheHit)).toEqual([true, true, true, false]);
    const replay = new LlmClient(batched, { cache: { path } });
    const again = await replay.generate({ ...sampled, n: 4 });
    replay.close();
    expect(again.completions.every((c) => c.cacheHit)).toBe(true);
    expect(again.completions.map((c) => c.text)).toEqual(more.completions.map((c) => c.text));
  });

  it('an abort in the middle of a batched generation rejects, and the model can be freed at once: no error escapes later', async () => {
    // A Ctrl-C during an embedded generation used to dispose the completion under a decode still
    // in flight: the run printed its clean stop, then died of an uncaught DisposedError (exit 1).
    // vitest fails the file on any uncaught error, so the wait below is part of the assertion.
    const client = new LlmClient(provider);
    const controller = new AbortController();
    const reason = new Error('stop now');
    const long = client.generate({
      messages: [{ role: 'user', content: 'Count from 1 to 500, one number per line.' }],
      maxTokens: 400,
      // Several samples decode as one batch (the default): the crash came from one batch item
      // disposed while the context was still resolving the others' next tokens.
      n: 3,
      temperature: 0.7,
      signal: controller.signal,
    });
    // 400 tokens take this model tens of seconds on a CPU thread: the abort lands mid-decode.
    setTimeout(() => controller.abort(reason), 800);
    await expect(long).rejects.toThrow(/stop now|abort/i);
    // What the CLI does next on Ctrl-C: free the model. Nothing may still be decoding then.
    await unloadEmbeddedModels();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // The model loads again on the next call.
    const after = await client.generate({ messages: question, maxTokens: 4 });
    expect(after.completions[0]!.text.trim().length).toBeGreaterThan(0);
  });

  it('a prompt longer than the context fails with a message naming the limit and the option, batched or not', async () => {
    const small = new LlamaCppProvider({ threads: 1, contextSize: 256, sequences: 2 });
    const client = new LlmClient(small, { limiter: { maxRetries: 0 } });
    const long = { prompt: 'river '.repeat(400), maxTokens: 4 };
    for (const n of [1, 3]) {
      const error = await client.generate({ ...long, n }).catch((e: unknown) => e);
      const text = describeError(error);
      expect(text).toMatch(/context holds \d+/);
      expect(text).toContain('contextSize');
    }
    const judged = await client.judge({ prompt: long.prompt, labels: ['Yes', 'No'] }).catch((e: unknown) => e);
    expect(describeError(judged)).toContain('contextSize');
  });
});
