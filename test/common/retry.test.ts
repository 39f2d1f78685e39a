import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RetryPolicy, withRetries } from '../../src/common/retry';
import { Limiter } from '../../src/llm/limiter';
import { LlmRequestError } from '../../src/llm/errors';
import { MlflowClient, MlflowHttpError } from '../../src/tracking/client';

const transient = () => new LlmRequestError('HTTP 503', { kind: 'server', status: 503 });

describe('the retry policy', () => {
  it('lets a call retry longer when the run sees more failures (adaptive limit)', () => {
    const policy = new RetryPolicy();
    // Prior: one failure in four → f = 0.25 → 10 attempts keep a streak above 1e-6.
    expect(policy.retriesAllowed()).toBe(9);
    for (let i = 0; i < 200; i++) (i % 2 === 0 ? policy.recordFailure() : policy.recordSuccess());
    expect(policy.failureRate()).toBeCloseTo(0.5, 1);
    expect(policy.retriesAllowed()).toBeGreaterThanOrEqual(19); // 0.5^20 ≈ 1e-6
    const healthy = new RetryPolicy();
    for (let i = 0; i < 200; i++) healthy.recordSuccess();
    expect(healthy.retriesAllowed()).toBe(3); // the floor
    expect(new RetryPolicy({ maxRetries: 2 }).retriesAllowed()).toBe(2);
  });

  it('opens the circuit breaker after a run-wide failure streak and closes it on a success', () => {
    let now = 0;
    const policy = new RetryPolicy({ breakerThreshold: 5, breakerCooldownMs: 1000, now: () => now });
    for (let i = 0; i < 4; i++) policy.recordFailure();
    expect(policy.isOpen()).toBe(false);
    policy.recordFailure();
    expect(policy.isOpen()).toBe(true);
    now = 1001;
    expect(policy.isOpen()).toBe(false); // attempts may go out again…
    policy.recordFailure();
    expect(policy.isOpen()).toBe(true); // …and one more failure reopens it
    now = 2002;
    policy.recordSuccess();
    expect(policy.failureStreak).toBe(0);
    expect(policy.isOpen()).toBe(false);
  });
});

describe('withRetries', () => {
  afterEach(() => vi.useRealTimers());

  it('does not give up at a 50% failure rate where a fixed 4 attempts loses calls', async () => {
    // Seeded coin flips: every attempt fails with probability 1/2, shared by 400 calls.
    let state = 7;
    const coin = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31 < 0.5;
    };
    const run = async (policy: RetryPolicy) => {
      let lost = 0;
      for (let call = 0; call < 400; call++) {
        await withRetries(
          async () => {
            if (coin()) throw transient();
            return 'ok';
          },
          { policy, classify: () => ({ retryable: true }) },
        ).catch(() => lost++);
      }
      return lost;
    };
    expect(await run(new RetryPolicy({ baseDelayMs: 0, maxRetries: 3 }))).toBeGreaterThan(5); // the old default
    expect(await run(new RetryPolicy({ baseDelayMs: 0 }))).toBe(0);
  });

  it('fails fast once the breaker is open, saying why', async () => {
    const limiter = new Limiter({ baseDelayMs: 0, breakerThreshold: 6 });
    let attempts = 0;
    const dead = () => limiter.run(async () => {
      attempts++;
      throw transient();
    });
    await expect(dead()).rejects.toThrow(/circuit breaker open/);
    expect(attempts).toBe(6);
    await expect(dead()).rejects.toThrow(/last 6 attempts across the run all failed/);
    expect(attempts).toBe(6); // no request at all while open
  });

  it('stops waiting the moment the caller aborts a backoff (fake timers)', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const policy = new RetryPolicy({ baseDelayMs: 60_000, random: () => 0 });
    const p = withRetries(async () => Promise.reject(transient()), { policy, classify: () => ({ retryable: true }), signal: controller.signal });
    const settled = expect(p).rejects.toThrow('user stopped');
    await vi.advanceTimersByTimeAsync(1000);
    controller.abort(new Error('user stopped'));
    await settled;
  });

  it('no MaxListenersExceededWarning when many calls wait on one signal', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const limiter = new Limiter({ maxConcurrency: 2, baseDelayMs: 1, maxRetries: 1 });
      const controller = new AbortController();
      const failedOnce = new Set<number>();
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          limiter.run(
            async (_signal) => {
              // Every other call fails once, so backoff waits also listen on the signal.
              if (i % 2 === 0 && !failedOnce.has(i)) {
                failedOnce.add(i);
                throw transient();
              }
              await new Promise((r) => setTimeout(r, 2));
            },
            { signal: controller.signal },
          ),
        ),
      );
      await new Promise((r) => setTimeout(r, 10)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});

describe('the MLflow client retries through the same core', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });
  const serve = async (answers: Array<{ status: number; headers?: Record<string, string> }>) => {
    let i = 0;
    server = createServer((req, res) => {
      const a = answers[Math.min(i++, answers.length - 1)]!;
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.status === 200 ? JSON.stringify({ experiment: { experiment_id: '7', name: 'x' } }) : JSON.stringify({ error_code: 'X', message: 'busy' }));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return { uri: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, count: () => i };
  };

  it('says so when the server asks to wait longer than it will, instead of silently capping', async () => {
    const s = await serve([{ status: 429, headers: { 'retry-after': '90' } }]);
    const client = new MlflowClient({ uri: s.uri, maxRetryAfterMs: 30_000 });
    const p = client.getExperiment('7');
    await expect(p).rejects.toBeInstanceOf(MlflowHttpError);
    await expect(p).rejects.toThrow(/asked to wait 90 s before retrying, longer than the 30 s/);
    expect(s.count()).toBe(1);
  });

  it('honours a short Retry-After and then succeeds', async () => {
    const s = await serve([{ status: 503, headers: { 'retry-after': '0.05' } }, { status: 200 }]);
    const exp = await new MlflowClient({ uri: s.uri }).getExperiment('7');
    expect(exp.experimentId).toBe('7');
    expect(s.count()).toBe(2);
  });

  it('stops retrying when its signal aborts', async () => {
    const s = await serve([{ status: 503 }]);
    const controller = new AbortController();
    const client = new MlflowClient({ uri: s.uri, attempts: 10, baseDelayMs: 5000, signal: controller.signal });
    const started = Date.now();
    const p = client.getExperiment('7');
    setTimeout(() => controller.abort(new Error('run interrupted')), 100);
    await expect(p).rejects.toThrow('run interrupted');
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
