import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Bm25Retriever } from '../../src/retrieval/bm25';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import type { Passage } from '../../src/retrieval/types';

/**
 * A stand-in for a ColBERTv2 retrieval server on 127.0.0.1: the API Tree of Clarifications' code
 * calls (gankim/tree-of-clarifications, dsp/modules/colbertv2.py) — `GET /?query=&k=` or a POST
 * of `{query, k}` → `{"topk": [{"text": "Title | passage", "pid", "rank", "score", "prob"}]}` —
 * answering from a small corpus with ambiqa's own BM25 instead of ColBERT's late interaction.
 * Like the hosted server it refuses k > 100. `mode` makes it answer in another shape or fail.
 */
export interface ColbertRequest {
  method: string;
  query: string;
  k: number;
  /** The Authorization header, when one came. */
  authorization?: string;
}

export interface ColbertServer {
  url: string;
  requests: ColbertRequest[];
  /** `ok`; `shape`: a JSON answer without `topk`; `status`: HTTP 503 on everything. */
  mode: 'ok' | 'shape' | 'status';
  /** When set, requests without this Authorization header get HTTP 401. */
  requiredAuthorization?: string;
  close(): Promise<void>;
}

export async function startColbertServer(passages: Passage[], options: { path?: string } = {}): Promise<ColbertServer> {
  const retriever = Bm25Retriever.create(corpusFromPassages(passages), {}, { cache: false });
  const path = options.path ?? '/api/search';
  const sockets = new Set<Socket>();
  const state: ColbertServer = { url: '', requests: [], mode: 'ok', close: async () => undefined };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const readBody = (req: IncomingMessage) =>
    new Promise<string>((done) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => done(body));
    });

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== path) return json(res, 404, { error: 'not found' });
    let query: unknown;
    let k: unknown;
    if (req.method === 'POST') {
      try {
        const body = JSON.parse(await readBody(req)) as { query?: unknown; k?: unknown };
        query = body.query;
        k = body.k;
      } catch {
        return json(res, 400, { error: 'body is not JSON' });
      }
    } else {
      query = url.searchParams.get('query');
      k = Number(url.searchParams.get('k') ?? 10);
    }
    if (typeof query !== 'string' || typeof k !== 'number' || !Number.isInteger(k) || k < 1) return json(res, 400, { error: 'query and k required' });
    const authorization = req.headers.authorization;
    state.requests.push({ method: req.method ?? 'GET', query, k, ...(authorization ? { authorization } : {}) });
    if (state.requiredAuthorization && authorization !== state.requiredAuthorization) return json(res, 401, { error: 'unauthorized' });
    if (state.mode === 'status') return json(res, 503, { error: 'unavailable' });
    if (state.mode === 'shape') return json(res, 200, { results: [] });
    if (k > 100) return json(res, 400, { error: 'Only k <= 100 is supported' });
    const hits = await retriever.search(query, k);
    const total = hits.reduce((a, h) => a + Math.exp(h.score), 0) || 1;
    return json(res, 200, {
      query,
      topk: hits.map((h, i) => ({
        text: `${h.passage.title} | ${h.passage.text}`,
        pid: /^\d+$/.test(h.passage.id) ? Number(h.passage.id) : h.passage.id,
        rank: i + 1,
        score: h.score,
        prob: Math.exp(h.score) / total,
      })),
      latency: 1,
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  state.close = () =>
    new Promise<void>((done) => {
      for (const s of sockets) s.destroy();
      server.close(() => done());
    });
  return state;
}
