import { APIConnectionError, APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { LlmRequestError } from '../../src/llm/errors';
import { Limiter, classifyError as limiterClassification, parseRetryAfter, type RetryEvent } from '../../src/llm/limiter';
// The provider classifies its own SDK's and fetch's failures; the limiter decides on the kind.
import { OpenAICompatibleProvider, classifyOpenAIError as classifyError } from '../../src/llm/providers/openai-compatible';
import { startFaultServer, type FaultServer } from './fault-server';

describe('Retry-After parsing', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads seconds, HTTP dates and retry-after-ms, from Headers or records', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '3' }), now)).toBe(3000);
    expect(parseRetryAfter({ 'Retry-After': '1.5' }, now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('error classification', () => {
  it('retries 429, 408 and 5xx, not other 4xx, from openai errors', () => {
    const err = (status: number, headers: Record<string, string> = {}) =>
      APIError.generate(status, { message: 'x' }, 'x', new Headers(headers));
    expect(classifyError(err(429, { 'retry-after': '2' }))).toEqual({ kind: 'rate-limit', retryable: true, status: 429, retryAfterMs: 2000 });
    expect(classifyError(err(503))).toMatchObject({ kind: 'server', retryable: true });
    expect(classifyError(err(408))).toMatchObject({ kind: 'timeout', retryable: true });
    for (const s of [400, 401, 403, 404, 422]) expect(classifyError(err(s)).retryable).toBe(false);
    expect(classifyError(new APIConnectionError({ message: 'reset' }))).toMatchObject({ kind: 'connection', retryable: true });
  });

  it('retries connection resets from plain fetch, not unknown hosts or programming errors', () => {
    const fetchError = (code: string) => new TypeError('fetch failed', { cause: Object.assign(new Error(code), { code }) });
    expect(classifyError(fetchError('ECONNRESET'))).toMatchObject({ kind: 'connection', retryable: true });
    expect(classifyError(fetchError('UND_ERR_SOCKET')).retryable).toBe(true);
    expect(classifyError(fetchError('ENOTFOUND')).retryable).toBe(false);
    expect(classifyError(new TypeError('x is not a function')).retryable).toBe(false);
    expect(classifyError(new LlmRequestError('m', { kind: 'rate-limit', retryAfterMs: 5 }))).toMatchObject({ retryable: true, retryAfterMs: 5 });
  });

  it('the limiter decides on the kind a provider gave; an untranslated error is other and not retried', () => {
    expect(limiterClassification(new LlmRequestError('m', { kind: 'server', status: 503 }))).toEqual({ kind: 'server', retryable: true, status: 503 });
    // An SDK-looking error nobody translated: the limiter does not guess from its status.
    expect(limiterClassification(Object.assign(new Error('HTTP 503'), { status: 503 }))).toEqual({ kind: 'other', retryable: false });
    expect(limiterClassification(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toMatchObject({ kind: 'aborted', retryable: false });
  });
});

describe('Limiter', () => {
  it('backs off exponentially with jitter, capped, and uses Retry-After when given', () => {
    const lo = new Limiter({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 0 });
    const hi = new Limiter({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.999999 });
    const c = { kind: 'server' as const, retryable: true };
    expect([0, 1, 2, 3, 4, 5].map((a) => lo.delayFor(a, c))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 5].map((a) => hi.delayFor(a, c))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(lo.delayFor(0, { ...c, retryAfterMs: 4000 })).toBe(4000);
    expect(new Limiter({ maxRetryAfterMs: 1000 }).delayFor(0, { ...c, retryAfterMs: 5000 })).toBeNull();
  });

  it('never runs more than maxConcurrency tasks at once and runs them all', async () => {
    const limiter = new Limiter({ maxConcurrency: 2 });
    let active = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        limiter.run(async () => {
          active++;
          peak = Math.max(peak, active);
          await new Promise((r) => setTimeout(r, 10));
          active--;
          return i;
        }),
      ),
    );
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(2);
    expect(limiter.running).toBe(0);
  });

  it('stops at maxRetries and says how many attempts it made', async () => {
    const limiter = new Limiter({ maxRetries: 2, baseDelayMs: 1 });
    let attempts = 0;
    const failing = limiter.run(async () => {
      attempts++;
      throw new LlmRequestError('HTTP 503 from x', { kind: 'server', status: 503 });
    });
    await expect(failing).rejects.toThrow(/gave up after 3 attempts/);
    expect(attempts).toBe(3);
  });

  it('stops retrying when the caller aborts', async () => {
    const limiter = new Limiter({ maxRetries: 5, baseDelayMs: 10_000 });
    const controller = new AbortController();
    const p = limiter.run(async () => {
      throw new LlmRequestError('HTTP 500', { kind: 'server' });
    }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stopped by caller')), 20);
    await expect(p).rejects.toThrow('stopped by caller');
  });
});

describe('limiter against a fault-injecting OpenAI-compatible server', () => {
  let server: FaultServer;
  beforeAll(async () => {
    server = await startFaultServer();
  });
  afterAll(async () => {
    await server.close();
  });
  beforeEach(() => {
    server.script = [];
    server.requests = [];
    server.maxInFlight = 0;
    server.okDelayMs = 0;
  });

  const client = (limiter: ConstructorParameters<typeof Limiter>[0], events: RetryEvent[] = []) =>
    new LlmClient(new OpenAICompatibleProvider({ baseUrl: server.url, model: 'fault-model', apiKey: 'test-key-123' }), {
      limiter: { baseDelayMs: 20, ...limiter, onRetry: (e) => events.push(e) },
    });

  it('honours Retry-After (seconds) on 429 instead of its own backoff', async () => {
    server.script = [{ kind: 'status', status: 429, headers: { 'retry-after': '1' } }];
    const events: RetryEvent[] = [];
    // A backoff of 20 s would fail the test by timeout: the 1 s Retry-After must win.
    const r = await client({ baseDelayMs: 20_000, maxRetries: 2 }, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toContain('echo: hi');
    expect(server.requests).toHaveLength(2);
    const waited = server.requests[1]!.at - server.requests[0]!.at;
    expect(waited).toBeGreaterThanOrEqual(950);
    expect(waited).toBeLessThan(10_000);
    expect(events).toMatchObject([{ attempt: 1, kind: 'rate-limit', status: 429, delayMs: 1000 }]);
  }, 30_000);

  it('honours retry-after-ms on 429', async () => {
    server.script = [{ kind: 'status', status: 429, headers: { 'retry-after-ms': '300' } }];
    const events: RetryEvent[] = [];
    await client({ maxRetries: 1 }, events).generate({ prompt: 'hi' });
    expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(280);
    expect(events[0]!.delayMs).toBe(300);
  });

  it('retries a 500 and then succeeds', async () => {
    server.script = [{ kind: 'status', status: 500 }, { kind: 'ok', text: 'recovered' }];
    const events: RetryEvent[] = [];
    const r = await client({ maxRetries: 3 }, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('recovered');
    expect(server.requests).toHaveLength(2);
    expect(events.map((e) => e.kind)).toEqual(['server']);
  });

  it('times out a hung request, then retries it', async () => {
    server.script = [{ kind: 'hang' }, { kind: 'ok', text: 'after the hang' }];
    const events: RetryEvent[] = [];
    const started = Date.now();
    const r = await client({ maxRetries: 2, timeoutMs: 400 }, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('after the hang');
    expect(server.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(events.map((e) => e.kind)).toEqual(['timeout']);
  });

  it('gives a timeout error naming the setting when every attempt hangs', async () => {
    server.script = [{ kind: 'hang' }, { kind: 'hang' }];
    const p = client({ maxRetries: 1, timeoutMs: 200 }).generate({ prompt: 'hi' });
    await expect(p).rejects.toMatchObject({ kind: 'timeout', hint: expect.stringContaining('timeoutSeconds') });
    expect(server.requests).toHaveLength(2);
  });

  it('retries a dropped connection', async () => {
    server.script = [{ kind: 'reset' }, { kind: 'ok', text: 'reconnected' }];
    const r = await client({ maxRetries: 2 }).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('reconnected');
    expect(server.requests).toHaveLength(2);
  });

  it('does not retry a 400', async () => {
    server.script = [{ kind: 'status', status: 400, body: { error: { message: 'max_tokens is too large' } } }];
    const p = client({ maxRetries: 3 }).generate({ prompt: 'hi' });
    await expect(p).rejects.toMatchObject({ kind: 'client', status: 400, message: expect.stringContaining('max_tokens is too large') });
    expect(server.requests).toHaveLength(1);
  });

  it('keeps at most maxConcurrency requests in flight at the server', async () => {
    server.okDelayMs = 60;
    const c = client({ maxConcurrency: 2 });
    await Promise.all(Array.from({ length: 6 }, (_, i) => c.generate({ prompt: `q${i}` })));
    expect(server.requests).toHaveLength(6);
    expect(server.maxInFlight).toBe(2);
  });

  it('retries a 200 whose JSON is cut short, naming what the server sent, not the baseUrl', async () => {
    server.script = [{ kind: 'truncated' }, { kind: 'ok', text: 'whole reply' }];
    const events: RetryEvent[] = [];
    const r = await client({}, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('whole reply');
    expect(server.requests).toHaveLength(2);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'server', status: 200 });
    expect(events[0]!.message).toMatch(/malformed reply \(HTTP 200, not JSON: Unterminated string.*\): \d+ bytes: '\{"id":"chatcmpl-.*"content":"a reply'$/);
    expect(events[0]!.message).not.toContain('baseUrl');
  });

  it('when every reply is malformed, the final error quotes the reply and the attempts', async () => {
    server.script = [{ kind: 'truncated' }, { kind: 'truncated' }];
    const p = client({ maxRetries: 1 }).generate({ prompt: 'hi' });
    await expect(p).rejects.toThrow(/malformed reply .*"content":"a reply' \(gave up after 2 attempts\)/);
  });

  it('retries a connection that drops mid-body and one reset before the headers', async () => {
    server.script = [{ kind: 'cut' }, { kind: 'reset' }, { kind: 'ok', text: 'third time' }];
    const events: RetryEvent[] = [];
    const r = await client({}, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('third time');
    expect(events.map((e) => e.kind)).toEqual(['connection', 'connection']);
    expect(events[1]!.message).toMatch(/closed the connection before replying|broke while reading/);
  });

  it('retries a reply with no choices (a 200 that is not a completion)', async () => {
    server.script = [{ kind: 'status', status: 200, body: { error: 'overloaded' } }, { kind: 'ok', text: 'fine' }];
    const events: RetryEvent[] = [];
    const r = await client({}, events).generate({ prompt: 'hi' });
    expect(r.completions[0]!.text).toBe('fine');
    expect(events[0]!.message).toContain(`'{"error":"overloaded"}'`);
  });

  it('retries a judgment whose reply is cut mid-body or truncated, like a generation', async () => {
    server.script = [{ kind: 'cut' }, { kind: 'truncated' }, { kind: 'ok', text: 'Yes' }, { kind: 'ok', text: 'Yes' }];
    const events: RetryEvent[] = [];
    const r = await client({}, events).judge({ prompt: 'Is it?', labels: ['Yes', 'No'] });
    expect(r.label).toBe('Yes');
    expect(events.map((e) => e.kind)).toEqual(['connection', 'server']);
  });
});

