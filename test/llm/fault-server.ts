import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A tiny OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 whose answers a test
 * scripts one request at a time: succeed, fail with a status (and headers), hang, or drop the
 * connection. It records every request so tests can check what the client sent and when.
 */
export type FaultAction =
  | {
      kind: 'ok';
      text?: string;
      finishReason?: string;
      usage?: { prompt_tokens: number; completion_tokens: number } | null;
      /** The choice's `logprobs` object, as OpenAI returns it when asked (`{content: [...]}`). */
      logprobs?: unknown;
    }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'reset' }
  /** HTTP 200 with a well-framed body that is cut off mid-JSON (a proxy or server bug). */
  | { kind: 'truncated' }
  /** HTTP 200 headers and half a body, then the socket is destroyed. */
  | { kind: 'cut' };

/**
 * Random faults for a chaos test: each request draws one outcome from a seeded generator, so a
 * run sees the same faults every time. Rates are per request; what is left succeeds.
 */
export interface ChaosRates {
  rateLimit: number;
  serverError: number;
  hang: number;
  truncated: number;
  reset: number;
  /** Retry-After sent with a 429, in seconds (fractions allowed; sent as retry-after-ms too). */
  retryAfterSeconds: number;
  seed: number;
}

export interface RecordedRequest {
  at: number;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** What the server did with it (script or chaos draw). */
  action?: FaultAction['kind'];
}

export interface FaultServer {
  url: string;
  /** Answers for the next requests, in order; when empty, requests succeed. */
  script: FaultAction[];
  requests: RecordedRequest[];
  /** Highest number of requests being handled at the same time. */
  maxInFlight: number;
  /** Delay before each successful answer, to make concurrency observable. */
  okDelayMs: number;
  /** When set, requests whose bearer token differs get a 401 that echoes the token (as some servers do). */
  requiredKey?: string;
  /** Random faults drawn per request (after `script` is used up). */
  chaos?: ChaosRates;
  /** Counts of what the chaos drew, by kind. */
  injected: Record<string, number>;
  /** A hostile endpoint: every reply (and error) quotes the bearer token it was sent. */
  echoKey?: boolean;
  /** The reply text for a request; default echoes the last message and the seed. */
  replyFor?: (body: Record<string, unknown>) => string;
  /** The choice's `logprobs` for a request that asked for them (`logprobs: true`); default none. */
  logprobsFor?: (body: Record<string, unknown>) => unknown;
  /**
   * Models `GET /models` lists (checked against `requiredKey` like chat requests, as OpenAI's
   * API does). Default: no list (404), so a provider's model check is skipped.
   */
  models?: string[];
  /** `GET /models` requests seen (not in `requests`, which holds chat requests only). */
  modelListings: number;
  close(): Promise<void>;
}

export async function startFaultServer(): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  let inFlight = 0;
  const state: FaultServer = {
    url: '',
    script: [],
    requests: [],
    maxInFlight: 0,
    okDelayMs: 0,
    injected: {},
    modelListings: 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    res.on('close', () => inFlight--);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      /* recorded as {} */
    }
    const authorization = req.headers.authorization;
    // The provider reads the model list once before its first call; this server has none (404,
    // so the check is skipped), and tests count chat requests only.
    if (req.method === 'GET' && /\/models$/.test(req.url ?? '')) {
      state.modelListings += 1;
      if (!state.models) return json(res, 404, { error: { message: 'no model list here', type: 'not_found' } });
      const token = authorization?.replace(/^Bearer\s+/i, '') ?? '';
      if (state.requiredKey !== undefined && token !== state.requiredKey) {
        return json(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
      }
      return json(res, 200, { object: 'list', data: state.models.map((id) => ({ id, object: 'model', owned_by: 'test' })) });
    }
    state.requests.push({ at: Date.now(), path: req.url ?? '', authorization, body });

    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return json(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'not_found' } });
    }
    if (state.requiredKey !== undefined) {
      const token = authorization?.replace(/^Bearer\s+/i, '') ?? '';
      if (token !== state.requiredKey) {
        return json(res, 401, { error: { message: `Incorrect API key provided: ${token}`, type: 'invalid_request_error' } });
      }
    }
    const token = authorization?.replace(/^Bearer\s+/i, '') ?? '';
    const action = state.script.shift() ?? (state.chaos ? draw(state.chaos) : { kind: 'ok' });
    if (state.chaos) state.injected[action.kind] = (state.injected[action.kind] ?? 0) + 1;
    state.requests[state.requests.length - 1]!.action = action.kind;
    const chatBody = (text: string) => ({
      id: `chatcmpl-${state.requests.length}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: String(body.model ?? 'unknown'),
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
    switch (action.kind) {
      case 'hang':
        return; // never answer; the client must time out
      case 'reset':
        req.socket.destroy();
        return;
      case 'status':
        return json(
          res,
          action.status,
          action.body ?? { error: { message: `injected ${action.status}${state.echoKey ? ` for key ${token}` : ''}` } },
          action.headers,
        );
      case 'truncated': {
        const full = JSON.stringify(chatBody(`a reply cut short${state.echoKey ? ` (key ${token})` : ''}`));
        const part = full.slice(0, Math.floor(full.length * 0.6));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(part)) });
        res.end(part);
        return;
      }
      case 'cut': {
        const full = JSON.stringify(chatBody('a reply whose connection drops'));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(full)) });
        res.write(full.slice(0, 40));
        setTimeout(() => req.socket.destroy(), 5);
        return;
      }
      case 'ok': {
        if (state.okDelayMs > 0) await new Promise((r) => setTimeout(r, state.okDelayMs));
        const messages = (body.messages as Array<{ content: string }> | undefined) ?? [];
        let text = action.text ?? state.replyFor?.(body) ?? `echo: ${messages[messages.length - 1]?.content ?? ''} seed=${String(body.seed ?? 'none')}`;
        if (state.echoKey) text = `${text} [your key is ${token}]`;
        const usage = action.usage === undefined ? { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } : action.usage;
        const logprobs = action.logprobs ?? (body.logprobs === true ? state.logprobsFor?.(body) : undefined);
        return json(res, 200, {
          id: `chatcmpl-${state.requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: String(body.model ?? 'unknown'),
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text },
              finish_reason: action.finishReason ?? 'stop',
              ...(logprobs !== undefined ? { logprobs } : {}),
            },
          ],
          ...(usage ? { usage } : {}),
        });
      }
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return state;
}

/** mulberry32 over a per-server counter: the n-th request draws the same fault on every run. */
function draw(rates: ChaosRates): FaultAction {
  const n = (chaosCounters.get(rates) ?? 0) + 1;
  chaosCounters.set(rates, n);
  let t = (rates.seed + n * 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  let edge = rates.rateLimit;
  if (u < edge) {
    const ms = Math.round(rates.retryAfterSeconds * 1000);
    return { kind: 'status', status: 429, headers: { 'retry-after': String(rates.retryAfterSeconds), 'retry-after-ms': String(ms) } };
  }
  if (u < (edge += rates.serverError)) return { kind: 'status', status: 500 };
  if (u < (edge += rates.hang)) return { kind: 'hang' };
  if (u < (edge += rates.truncated)) return { kind: 'truncated' };
  if (u < (edge += rates.reset)) return { kind: 'reset' };
  return { kind: 'ok' };
}
const chaosCounters = new WeakMap<ChaosRates, number>();

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
