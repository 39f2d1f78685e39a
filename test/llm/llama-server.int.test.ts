import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestPath, readModelManifest } from '../../src/config/models';
import { venvDir } from '../../src/config/paths';
import { describeError } from '../../src/errors';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel } from '../../src/llm/config';
import { LlmRequestError } from '../../src/llm/errors';
import type { RetryEvent } from '../../src/llm/limiter';
import { LlamaCppProvider, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { buildToolsMissing, hasLlamaServer, LLAMA_CPP_PYTHON_VERSION, llamaServerMissing, startLlamaServer, type RunningLlamaServer } from '../../src/setup/llama-server';

/**
 * The openai-compatible provider against a real server: llama.cpp's, as llama-cpp-python serves
 * it (`ambiqa setup --server`, `ambiqa serve`), on the embedded GGUF. Both sides render prompts
 * with the chat template stored in the GGUF and run the same weights, so the server's graded
 * judgments (read from `top_logprobs`) must agree with the embedded provider's (read from the
 * full next-token distribution), and greedy replies must be the same text.
 *
 * Without the server installed the tests skip and say why; under CI a missing server fails, as
 * the MLflow tests do: CI installs it (`.ci/run` runs `ambiqa setup --server`).
 */
const installed = hasLlamaServer(venvDir());
const hasModel = existsSync(manifestPath());
let skipReason: string | undefined;
if (!installed || !hasModel) {
  const tools = await buildToolsMissing();
  skipReason = !hasModel
    ? `${manifestPath()} is absent (run \`npx ambiqa setup\`)`
    : `${llamaServerMissing(venvDir())?.message} (run \`npx ambiqa setup --server\`${tools ? `; it cannot be built here: ${tools}` : ''})`;
  if (process.env.CI) throw new Error(`llama.cpp server tests cannot run: ${skipReason}`);
  console.log(`skipping the llama.cpp server tests: ${skipReason}`);
}

/**
 * Largest |P_server − P_embedded| accepted for one judgment. Measured on the prompts below:
 * see docs/llm.md "A real server" for the figures; the bound leaves room for the two builds'
 * floating-point differences (different llama.cpp versions and kernels), not for a different
 * prompt or a different way of reading the labels.
 */
const P_TOLERANCE = 0.05;

const JUDGMENTS: Array<{ claim: string }> = [
  { claim: 'Paris is the capital of France.' },
  { claim: 'The Moon is larger than the Earth.' },
  { claim: 'Water boils at 100 degrees Celsius at sea level.' },
  { claim: 'The Pacific is the smallest ocean.' },
  { claim: 'Python is a programming language.' },
  { claim: 'Berlin is in Spain.' },
  { claim: 'A week has seven days.' },
  { claim: 'Spiders have six legs.' },
  { claim: 'The sun rises in the east.' },
  { claim: 'Two plus two is five.' },
  { claim: 'Tokyo is the capital of Japan.' },
  { claim: 'Ice is colder than steam.' },
];

function judgeMessages(claim: string) {
  return [
    { role: 'system' as const, content: 'You check facts. Answer with Yes or No only.' },
    { role: 'user' as const, content: `Is this statement true? ${claim}` },
  ];
}

describe.skipIf(skipReason !== undefined)(`llama.cpp server (llama-cpp-python ${LLAMA_CPP_PYTHON_VERSION}) through the openai-compatible provider`, () => {
  let server: RunningLlamaServer;
  let dir: string;
  let embedded: LlmClient;
  let serverLog = '';

  const client = (extra: Record<string, unknown> = {}, onRetry?: (e: RetryEvent) => void) =>
    createLanguageModel(
      { provider: 'openai-compatible', baseUrl: server.baseUrl, model: server.model, cache: { path: join(dir, 'server.sqlite') }, ...extra },
      { env: {}, ...(onRetry ? { onRetry } : {}) },
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ambiqa-llama-server-'));
    const manifest = readModelManifest();
    server = await startLlamaServer({
      venvDir: venvDir(),
      modelPath: manifest.llm.file,
      alias: manifest.llm.name,
      threads: 1,
      onLog: (t) => (serverLog = (serverLog + t).slice(-20_000)),
    });
    embedded = new LlmClient(new LlamaCppProvider({ threads: 1 }));
  });
  afterAll(async () => {
    await server?.stop();
    await unloadEmbeddedModels();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is the lean build setup asks for: libllama and ggml, no multimodal or llama.cpp common library', () => {
    const lib = join(venvDir(), 'lib');
    const pkgLib = readdirSync(lib)
      .map((py) => join(lib, py, 'site-packages', 'llama_cpp', 'lib'))
      .find((d) => existsSync(d));
    expect(pkgLib, `llama_cpp/lib not found under ${lib}`).toBeDefined();
    const files = readdirSync(pkgLib!);
    expect(files.some((f) => /^libllama\.so/.test(f))).toBe(true);
    expect(files.some((f) => /^libggml-cpu\.so/.test(f))).toBe(true);
    // A wheel built before setup's lean CMake arguments (a developer's pip cache) has these:
    // `.venv/bin/pip uninstall -y llama-cpp-python && .venv/bin/pip cache remove llama_cpp_python`, then `npx ambiqa setup --server`.
    expect(files.filter((f) => /mtmd|llava|llama-common/.test(f))).toEqual([]);
  });

  it('renders prompts with the GGUF chat template, as the embedded provider does', () => {
    // llama-cpp-python prints which template it chose; a guessed generic format would differ.
    expect(serverLog).toMatch(/Using gguf chat template|chat_template\.default/);
  });

  it(`graded judgments from top_logprobs agree with the embedded provider's P within ${P_TOLERANCE}`, async () => {
    const api = await client({ cache: { mode: 'off' } });
    const rows: Array<{ claim: string; server: number; embedded: number; mass: number }> = [];
    for (const { claim } of JUDGMENTS) {
      const request = { messages: judgeMessages(claim), labels: ['Yes', 'No'], purpose: 'test.verify' };
      const s = await api.judge(request);
      const e = await embedded.judge(request);
      expect(s.mode).toBe('probability');
      expect(e.mode).toBe('probability');
      rows.push({ claim, server: s.p, embedded: e.p, mass: s.labelMass });
    }
    const diffs = rows.map((r) => Math.abs(r.server - r.embedded));
    const max = Math.max(...diffs);
    const mean = diffs.reduce((a, b) => a + b, 0) / diffs.length;
    console.log(
      `judge P, server vs embedded, ${rows.length} prompts: max |ΔP| ${max.toFixed(4)}, mean ${mean.toFixed(4)}\n` +
        rows.map((r) => `  ${r.server.toFixed(4)} vs ${r.embedded.toFixed(4)}  (label mass ${r.mass.toFixed(3)})  ${r.claim}`).join('\n'),
    );
    expect(max).toBeLessThanOrEqual(P_TOLERANCE);
    // The judgments are not all the same: the comparison spans both verdicts.
    expect(rows.some((r) => r.embedded > 0.5) && rows.some((r) => r.embedded < 0.5)).toBe(true);
    api.close();
  });

  it('greedy replies name the same answer as the embedded model, and usage is counted as the embedded model counts it', async () => {
    const api = await client({ cache: { mode: 'off' } });
    // The two llama.cpp builds differ in arithmetic, so where two first tokens are nearly tied a
    // greedy reply can start differently (measured: "Name a primary colour." gave "Primary colour
    // is red." from the server and "The primary colour is red." embedded); the answer is the same.
    const answer = (t: string) => t.trim().toLowerCase().replace(/[^\p{L}\p{N} ]/gu, '').split(/\s+/).pop();
    for (const prompt of ['What is the capital of France? Answer in one word.', 'Name a primary colour.', 'Write the number after 41.']) {
      const request = { messages: [{ role: 'user' as const, content: prompt }], maxTokens: 12 };
      const s = (await api.generate(request)).completions[0]!;
      const e = (await embedded.generate(request)).completions[0]!;
      console.log(`greedy: server ${JSON.stringify(s.text)} / embedded ${JSON.stringify(e.text)}`);
      expect(answer(s.text)).toBe(answer(e.text));
      expect(s.usage.promptTokens).toBe(e.usage.promptTokens);
      expect(s.usage.completionTokens).toBeGreaterThan(0);
      expect(s.usage.completionTokens).toBeLessThanOrEqual(12);
    }
    expect(api.usage.calls).toBe(3);
    expect(api.usage.promptTokens).toBeGreaterThan(30);
    api.close();
  });

  it('n samples are distinct, and replay from the cache one by one', async () => {
    const request = { prompt: 'Write one short sentence about rivers.', temperature: 1.2, maxTokens: 12, seed: 7 };
    const a = await client();
    const three = await a.generate({ ...request, n: 3 });
    expect(three.completions.every((c) => !c.cacheHit)).toBe(true);
    expect(new Set(three.completions.map((c) => c.text)).size).toBe(3);
    a.close();
    const b = await client();
    // Four samples: the first three replay, the fourth is drawn live.
    const four = await b.generate({ ...request, n: 4 });
    expect(four.completions.map((c) => c.cacheHit)).toEqual([true, true, true, false]);
    expect(four.completions.slice(0, 3).map((c) => c.text)).toEqual(three.completions.map((c) => c.text));
    // One later sample on its own (adaptive rounds) replays too.
    const third = await b.generate({ ...request, n: 1, firstSample: 2 });
    expect(third.completions[0]).toMatchObject({ cacheHit: true, text: three.completions[2]!.text });
    expect(b.usage).toMatchObject({ calls: 2, samples: 5, cacheHits: 4 });
    b.close();
  });

  it('stop strings end a reply before the stop', async () => {
    const api = await client({ cache: { mode: 'off' } });
    const free = (await api.generate({ prompt: 'Count from 1 to 10, separated by commas.', maxTokens: 40 })).completions[0]!;
    expect(free.text).toContain('5');
    const stopped = (await api.generate({ prompt: 'Count from 1 to 10, separated by commas.', maxTokens: 40, stop: ['5'] })).completions[0]!;
    expect(stopped.text).not.toContain('5');
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.usage.completionTokens).toBeLessThan(free.usage.completionTokens!);
    api.close();
  });

  it('an unknown model name is a config error, not retried and not silently served by the one loaded model', async () => {
    const events: RetryEvent[] = [];
    const api = await client({ model: 'no-such-model', cache: { mode: 'off' }, maxRetries: 3 }, (e) => events.push(e));
    const error = await api.generate({ prompt: 'hello', maxTokens: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).kind).toBe('config');
    expect(describeError(error)).toContain(`does not serve model "no-such-model" (its /models lists "${server.model}")`);
    expect(events).toHaveLength(0);
    api.close();
  });

  it('a dropped connection is retried by the limiter and then answered; without retries it is a connection error', async () => {
    // A TCP relay in front of the real server that, while `drops` > 0, drops the connection a
    // request arrives on (the server never sees it) and forwards everything else. Requests are
    // counted per request, not per connection: clients keep connections alive.
    let drops = 0;
    const sockets = new Set<Socket>();
    const url = new URL(server.baseUrl);
    const relay: Server = createServer((inbound) => {
      const outbound = new Socket();
      sockets.add(inbound);
      sockets.add(outbound);
      const close = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on('error', close);
      outbound.on('error', close);
      outbound.on('close', () => inbound.destroy());
      outbound.connect(Number(url.port), url.hostname);
      outbound.pipe(inbound);
      inbound.on('data', (chunk: Buffer) => {
        if (drops > 0 && /^(GET|POST) /.test(chunk.subarray(0, 5).toString('latin1'))) {
          drops -= 1;
          close();
          return;
        }
        outbound.write(chunk);
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    const port = (relay.address() as { port: number }).port;
    const viaRelay = (maxRetries: number, onRetry?: (e: RetryEvent) => void) =>
      createLanguageModel(
        { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${port}/v1`, model: server.model, cache: { mode: 'off' }, maxRetries, backoffSeconds: 0.05 },
        { env: {}, ...(onRetry ? { onRetry } : {}) },
      );
    try {
      const events: RetryEvent[] = [];
      const retrying = await viaRelay(2, (e) => events.push(e));
      // The model check's GET /models goes first, through the relay; then drop a chat request.
      await retrying.generate({ prompt: 'warm up', maxTokens: 1 });
      expect(events).toHaveLength(0);
      drops = 1;
      const answered = await retrying.generate({ prompt: 'Say hello.', maxTokens: 4 });
      expect(answered.completions[0]!.text.length).toBeGreaterThan(0);
      expect(events.length).toBeGreaterThanOrEqual(1);
      expect(events[0]!.kind).toBe('connection');
      retrying.close();

      const once = await viaRelay(0);
      await once.generate({ prompt: 'warm up', maxTokens: 1 });
      drops = 1;
      const error = await once.generate({ prompt: 'Say hello again.', maxTokens: 4 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LlmRequestError);
      expect((error as LlmRequestError).kind).toBe('connection');
      once.close();
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => relay.close(() => r()));
    }
  });
});
