import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel } from '../../src/llm/config';
import { OpenAICompatibleProvider } from '../../src/llm/providers/openai-compatible';
import { startFaultServer, type FaultServer } from './fault-server';

let server: FaultServer;
let dir: string;
beforeAll(async () => {
  server = await startFaultServer();
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-openai-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.script = [];
  server.requests = [];
  server.requiredKey = undefined;
});

const provider = (extra: Partial<ConstructorParameters<typeof OpenAICompatibleProvider>[0]> = {}) =>
  new OpenAICompatibleProvider({ baseUrl: server.url, model: 'local-model', apiKey: 'k-local-0001', ...extra }, {});

/** A port nothing listens on: bind one, then free it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('OpenAI-compatible provider, end to end against a local server', () => {
  it('sends the model, messages and every sampling parameter, one request per sample', async () => {
    const client = new LlmClient(provider());
    const r = await client.generate({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Who wrote it?' },
      ],
      temperature: 0.7,
      topP: 0.9,
      maxTokens: 33,
      stop: ['\n\n'],
      seed: 5,
      n: 3,
    });
    expect(server.requests).toHaveLength(3);
    const bodies = server.requests.map((q) => q.body).sort((a, b) => Number(a.seed) - Number(b.seed));
    for (const body of bodies) {
      expect(body).toMatchObject({
        model: 'local-model',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Who wrote it?' },
        ],
        temperature: 0.7,
        top_p: 0.9,
        max_tokens: 33,
        stop: ['\n\n'],
        n: 1,
      });
    }
    // The sample index is added to the seed: distinct samples, each reproducible.
    expect(bodies.map((b) => b.seed)).toEqual([5, 6, 7]);
    expect(r.completions.map((c) => c.text)).toEqual([
      'echo: Who wrote it? seed=5',
      'echo: Who wrote it? seed=6',
      'echo: Who wrote it? seed=7',
    ]);
    expect(r.completions[0]).toMatchObject({ finishReason: 'stop', usage: { promptTokens: 11, completionTokens: 7 }, cacheHit: false });
    expect(r.usage).toEqual({ promptTokens: 33, completionTokens: 21 });
    expect(server.requests[0]!.authorization).toBe('Bearer k-local-0001');
  });

  it('omits stop and seed when not set, and maps finish reasons and missing usage', async () => {
    server.script = [
      { kind: 'ok', text: 'cut', finishReason: 'length' },
      { kind: 'ok', text: 'filtered', finishReason: 'content_filter', usage: null },
    ];
    const client = new LlmClient(provider());
    const a = await client.generate({ prompt: 'one' });
    const b = await client.generate({ prompt: 'two' });
    expect(server.requests[0]!.body).not.toHaveProperty('stop');
    expect(server.requests[0]!.body).not.toHaveProperty('seed');
    expect(a.completions[0]).toMatchObject({ text: 'cut', finishReason: 'length' });
    // Missing usage is unknown (issue 37: `number | undefined`), no longer stored as 0.
    expect(b.completions[0]).toMatchObject({ text: 'filtered', finishReason: 'other', usage: { promptTokens: undefined, completionTokens: undefined } });
  });

  it('replays from the persistent cache without a request', async () => {
    const path = join(dir, 'openai.sqlite');
    const first = new LlmClient(provider(), { cache: { path } });
    const live = await first.generate({ prompt: 'cache me', temperature: 0.9, n: 2 });
    first.close();
    const second = new LlmClient(provider(), { cache: { path } });
    const replay = await second.generate({ prompt: 'cache me', temperature: 0.9, n: 2 });
    expect(server.requests).toHaveLength(2);
    expect(replay.completions.map((c) => c.text)).toEqual(live.completions.map((c) => c.text));
    expect(replay.completions.every((c) => c.cacheHit)).toBe(true);
    second.close();
  });

  it('is built by createLanguageModel from a config and OPENAI_* variables', async () => {
    const client = await createLanguageModel(
      { provider: 'openai-compatible', cache: { mode: 'off' } },
      { env: { OPENAI_BASE_URL: server.url, OPENAI_MODEL: 'from-env', OPENAI_API_KEY: 'k-env-0002' } },
    );
    expect(client.provider).toBe('openai-compatible');
    expect(client.model).toBe('from-env');
    await client.generate({ prompt: 'x' });
    expect(server.requests[0]!.body.model).toBe('from-env');
    expect(server.requests[0]!.authorization).toBe('Bearer k-env-0002');
  });
});

describe('OpenAI-compatible provider: bad input', () => {
  it('names an unreachable base URL and the fix', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const client = new LlmClient(provider({ baseUrl: url }), { limiter: { maxRetries: 1, baseDelayMs: 5 } });
    const error = await client.generate({ prompt: 'x' }).catch((e: unknown) => e);
    const text = describeError(error);
    expect(text).toContain(`cannot reach the OpenAI-compatible server at ${url}`);
    expect(text).toContain('ECONNREFUSED');
    expect(text).toMatch(/fix: .*baseUrl.*OPENAI_BASE_URL/);
  });

  it('explains a base URL that is not the API root (404)', async () => {
    const root = server.url.replace(/\/v1$/, '');
    const client = new LlmClient(provider({ baseUrl: root }));
    const text = describeError(await client.generate({ prompt: 'x' }).catch((e: unknown) => e));
    expect(text).toContain(`HTTP 404 from ${root}/chat/completions`);
    expect(text).toMatch(/fix: .*API root.*\/v1/);
    expect(server.requests).toHaveLength(1); // a 404 is not retried
  });

  it('rejects a base URL that is not a URL, and a missing model name', () => {
    expect(() => new OpenAICompatibleProvider({ baseUrl: 'localhost:8080', model: 'm' }, {})).toThrow(/not an http\(s\) URL/);
    expect(() => new OpenAICompatibleProvider({ baseUrl: server.url }, {})).toThrow(/no model name/);
    expect(() => new OpenAICompatibleProvider({ model: 'gpt-x' }, {})).toThrow(/OPENAI_API_KEY is not set/);
  });
});
