import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A tiny OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 whose answers a test
 * scripts one request at a time: succeed, fail with a status (and headers), hang, or drop the
 * connection. It records every request so tests can check what the client sent and when.
 */
export type FaultAction =
  | { kind: 'ok'; text?: string; finishReason?: string; usage?: { prompt_tokens: number; completion_tokens: number } | null }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'reset' };

export interface RecordedRequest {
  at: number;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
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
    const action = state.script.shift() ?? { kind: 'ok' };
    switch (action.kind) {
      case 'hang':
        return; // never answer; the client must time out
      case 'reset':
        req.socket.destroy();
        return;
      case 'status':
        return json(res, action.status, action.body ?? { error: { message: `injected ${action.status}` } }, action.headers);
      case 'ok': {
        if (state.okDelayMs > 0) await new Promise((r) => setTimeout(r, state.okDelayMs));
        const messages = (body.messages as Array<{ content: string }> | undefined) ?? [];
        const text = action.text ?? `echo: ${messages[messages.length - 1]?.content ?? ''} seed=${String(body.seed ?? 'none')}`;
        const usage = action.usage === undefined ? { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } : action.usage;
        return json(res, 200, {
          id: `chatcmpl-${state.requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: String(body.model ?? 'unknown'),
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: action.finishReason ?? 'stop' }],
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

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
