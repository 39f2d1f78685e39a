import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel, describeLlmConfig, resolveLlmConfig } from '../../src/llm/config';
import { redactSecrets, safeUrl } from '../../src/llm/errors';
import type { RetryEvent } from '../../src/llm/limiter';
import { OpenAICompatibleProvider } from '../../src/llm/providers/openai-compatible';
import { startFaultServer, type FaultServer } from './fault-server';

/**
 * The API key must never reach an error message, a log line, describe() output or the cache.
 * The fault server plays a hostile server that echoes the key it received in its error bodies,
 * as some real servers do, and every output channel is captured while the client works.
 */
const KEY = `sk-test-${randomBytes(12).toString('hex')}`;
const KEY_ENV = 'AMBIQA_TEST_SECRET_KEY';

let server: FaultServer;
let dir: string;
const captured: string[] = [];
const restore: Array<() => void> = [];

beforeAll(async () => {
  server = await startFaultServer();
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-secret-'));
  process.env[KEY_ENV] = KEY;
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      captured.push(String(chunk));
      return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restore.push(() => {
      stream.write = original;
    });
  }
  const onWarning = (w: Error) => captured.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  restore.push(() => process.off('warning', onWarning));
});

afterAll(async () => {
  for (const r of restore) r();
  delete process.env[KEY_ENV];
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Everything a person or a log could see of an error. */
function exposure(error: unknown): string {
  const e = error as Error & { hint?: string };
  return [describeError(error), e.message, e.hint ?? '', e.stack ?? '', inspect(error, { depth: 6 }), JSON.stringify(error)].join('\n');
}

describe('the API key never leaks', () => {
  const config = () =>
    ({ provider: 'openai-compatible', baseUrl: server.url, model: 'm', apiKeyEnv: KEY_ENV, cache: { path: join(dir, 'c.sqlite') } }) as const;

  it('a 401 names the environment variable, not the key, even when the server echoes the key', async () => {
    server.requiredKey = 'the-right-key';
    const client = await createLanguageModel(config());
    const error = await client.generate({ prompt: 'hello' }).catch((e: unknown) => e);
    server.requiredKey = undefined;
    expect(server.requests.at(-1)!.authorization).toBe(`Bearer ${KEY}`); // the key was sent…
    const text = exposure(error);
    expect(text).toContain(KEY_ENV); // …the message names its variable…
    expect(text).toContain('rejected the API key (HTTP 401)');
    expect(text).not.toContain(KEY); // …and never the key
    client.close();
  });

  it('server messages that echo the key are scrubbed from retried and final errors', async () => {
    const echo = { error: { message: `upstream failed for key ${KEY}` } };
    server.script = [
      { kind: 'status', status: 500, body: echo },
      { kind: 'status', status: 422, body: echo },
    ];
    const events: RetryEvent[] = [];
    const provider = new OpenAICompatibleProvider({ baseUrl: server.url, model: 'm', apiKeyEnv: KEY_ENV });
    const client = new LlmClient(provider, { limiter: { maxRetries: 2, baseDelayMs: 5, onRetry: (e) => events.push(e) } });
    const error = await client.generate({ prompt: 'hello' }).catch((e: unknown) => e);
    expect(events).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain(KEY);
    expect(exposure(error)).toContain('upstream failed for key');
    expect(exposure(error)).not.toContain(KEY);
  });

  it('describe(), inspect() and JSON of the provider, client and config never show it', async () => {
    const client = await createLanguageModel(config());
    await client.generate({ prompt: 'ok' });
    const described = describeLlmConfig(config());
    expect(described).toMatchObject({ provider: 'openai-compatible', apiKeyEnv: KEY_ENV, apiKeySet: true, baseUrl: server.url });
    const views = [
      JSON.stringify(described),
      inspect(client, { depth: 8, showHidden: true }),
      inspect(client.backend, { depth: 8, showHidden: true }),
      JSON.stringify(client.backend),
      JSON.stringify(resolveLlmConfig(config())),
    ];
    for (const view of views) expect(view).not.toContain(KEY);
    client.close();
  });

  it('the cache file holds no key', async () => {
    const client = await createLanguageModel(config());
    await client.generate({ prompt: 'store me' });
    client.close();
    for (const f of readdirSync(dir).filter((n) => n.startsWith('c.sqlite'))) {
      expect(readFileSync(join(dir, f)).includes(Buffer.from(KEY))).toBe(false);
    }
  });

  it('a key written into a config is refused without echoing it', async () => {
    const error = await createLanguageModel({ ...config(), apiKey: KEY } as never).catch((e: unknown) => e);
    const text = exposure(error);
    expect(text).toContain('llm.apiKey: API keys never go into config files');
    expect(text).not.toContain(KEY);
  });

  it('URLs lose their credentials and key-like parameters in messages', () => {
    expect(safeUrl(`https://user:${KEY}@example.com/v1`)).toBe('https://user:***@example.com/v1');
    expect(safeUrl(`https://example.com/v1?api_key=${KEY}`)).not.toContain(KEY);
    expect(redactSecrets(`Authorization: Bearer ${KEY}`)).toBe('Authorization: Bearer ***');
    expect(redactSecrets('a plain sentence about keys')).toBe('a plain sentence about keys');
  });

  it('nothing written to stdout, stderr or process warnings contained it', () => {
    // Runs last: covers every call above.
    expect(captured.join('\n')).not.toContain(KEY);
  });
});
