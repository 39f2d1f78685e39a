/**
 * A ColBERTv2 retrieval server, spoken to as Tree of Clarifications' released code does
 * (gankim/tree-of-clarifications, `dsp/modules/colbertv2.py` at 75a3ddd: `ColBERTv2(url,
 * post_requests=False)`): `GET <url>?query=…&k=…`, or with `post: true` a POST of the JSON body
 * `{"query", "k"}` to the same URL; either way the answer is `{"topk": [{"text", "pid", "rank",
 * "score", "prob"?}, …]}`, best first. The hosted server answers k ≤ 100 (the dsp module asserts
 * it), so `maxK` caps what is asked; a larger k gets what the cap allows.
 *
 * A hit's `text` is the passage as the server stores it, "Title | passage" in the Wikipedia
 * collections ToC used (its own wiki_utils.py builds `title + " | " + psg`): split at the first
 * " | " into title and text; without one the title is empty and the whole text is the passage.
 * The passage keeps the server's `pid` as its id, so `exclude: own` and AC@k see the server's
 * identity of a passage, and two servers over one collection agree on ids.
 */
import { RetryPolicy } from '../../common/retry';
import { AmbiqaError } from '../../errors';
import type { Passage, Retriever, ScoredPassage } from '../types';
import { validateK } from '../validate';
import { describeUrl, fetchJson } from './http';

export interface ColbertV2Options {
  url: string;
  /** POST a JSON body instead of GET with a query string (dsp's `post_requests`). */
  post?: boolean;
  /** Largest k asked of the server (the hosted server's 100 by default). */
  maxK?: number;
  /** Per attempt, milliseconds. */
  timeoutMs?: number;
  /** The field named in messages. */
  field?: string;
}

/** One hit as the API returns it; extra fields (e.g. `long_text`, `prob`) are allowed. */
interface ColbertHit {
  text: string;
  pid: string | number;
  score?: number;
  rank?: number;
}

/** A URL fit for params and cache keys: no credentials (a query string here is part of the endpoint). */
export function stripCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

/** "Title | passage" → title and text, as ToC's collections store them. */
export function splitColbertText(text: string): { title: string; text: string } {
  const at = text.indexOf(' | ');
  if (at < 0) return { title: '', text: text.trim() };
  return { title: text.slice(0, at).trim(), text: text.slice(at + 3).trim() };
}

/** The hits of one answer, or a one-line description of what is wrong with its shape. */
export function parseColbertAnswer(body: unknown): ColbertHit[] | string {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return 'the answer is not a JSON object';
  const topk = (body as { topk?: unknown }).topk;
  if (!Array.isArray(topk)) return `the answer has no "topk" list (keys: ${Object.keys(body).slice(0, 6).join(', ') || 'none'})`;
  const hits: ColbertHit[] = [];
  for (const [i, raw] of topk.entries()) {
    const hit = raw as Partial<ColbertHit> | null;
    if (!hit || typeof hit !== 'object') return `topk[${i}] is not an object`;
    if (typeof hit.text !== 'string') return `topk[${i}] has no "text" string`;
    if (typeof hit.pid !== 'string' && typeof hit.pid !== 'number') return `topk[${i}] has no "pid"`;
    if (hit.score !== undefined && typeof hit.score !== 'number') return `topk[${i}].score is not a number`;
    hits.push({ text: hit.text, pid: hit.pid, ...(hit.score !== undefined ? { score: hit.score } : {}), ...(hit.rank !== undefined ? { rank: hit.rank } : {}) });
  }
  return hits;
}

export class ColbertV2Retriever implements Retriever {
  readonly name = 'colbertv2';
  readonly url: string;
  private readonly post: boolean;
  private readonly maxK: number;
  private readonly timeoutMs: number;
  private readonly field: string;
  private readonly headers: Record<string, string> = {};
  // One policy for every call to this server: a server that is down opens its breaker once.
  private readonly policy = new RetryPolicy({ maxRetries: 2, baseDelayMs: 200, maxDelayMs: 2_000 });

  constructor(options: ColbertV2Options) {
    let parsed: URL;
    const field = options.field ?? 'retriever.url';
    try {
      parsed = new URL(options.url);
    } catch {
      throw new AmbiqaError(`${field}: ${JSON.stringify(options.url.slice(0, 200))} is not a URL`, 'give the server as http://host:port/path');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new AmbiqaError(`${field}: ${describeUrl(options.url)} is not an http(s) URL`, 'give the server as http://host:port/path');
    }
    // fetch refuses a URL with credentials: they travel as HTTP basic auth instead, and never
    // reach a message, a param or a cache key (which all use the URL without them).
    if (parsed.username || parsed.password) {
      const user = decodeURIComponent(parsed.username);
      const password = decodeURIComponent(parsed.password);
      this.headers = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
    }
    this.url = stripCredentials(options.url);
    this.post = options.post ?? false;
    this.maxK = options.maxK ?? 100;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.field = field;
  }

  private requestUrl(query: string, k: number): string {
    if (this.post) return this.url;
    const u = new URL(this.url);
    u.searchParams.set('query', query);
    u.searchParams.set('k', String(k));
    return u.toString();
  }

  private async ask(query: string, k: number, policy: RetryPolicy): Promise<ColbertHit[]> {
    const body = await fetchJson(this.requestUrl(query, k), {
      method: this.post ? 'POST' : 'GET',
      ...(this.post ? { body: { query, k } } : {}),
      timeoutMs: this.timeoutMs,
      policy,
      field: this.field,
      headers: this.headers,
    });
    const hits = parseColbertAnswer(body);
    if (typeof hits === 'string') {
      throw new AmbiqaError(`${this.field} ${describeUrl(this.url)} does not answer as a ColBERTv2 server: ${hits}`, 'point retriever.url at a server speaking the ColBERTv2 API ({"topk": [{"text", "pid", "score"}]})');
    }
    return hits;
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const asked = Math.min(k, this.maxK);
    const hits = await this.ask(query, asked, this.policy);
    // dsp keeps the first k whatever the server sent; the order is the server's.
    return hits.slice(0, asked).map((hit, rank) => {
      const { title, text } = splitColbertText(hit.text);
      const passage: Passage = { id: String(hit.pid), title, text, source: 'colbertv2' };
      return { passage, score: hit.score ?? -rank, rank };
    });
  }

  /** One query of one passage, without retries: reachable, and answering in the API's shape. */
  async preflight(): Promise<void> {
    const once = new RetryPolicy({ maxRetries: 0 });
    // An empty `topk` is still the API's shape (a lexical stand-in may match nothing).
    try {
      await this.ask('preflight', 1, once);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const hint = error instanceof AmbiqaError && error.hint ? error.hint : 'start the server, or set retriever.url to where it listens';
      throw new AmbiqaError(message.startsWith(this.field) ? message : `${this.field} ${describeUrl(this.url)}: ${message}`, hint);
    }
  }

  describe(): Record<string, string> {
    return { engine: 'colbertv2', url: stripCredentials(this.url), method: this.post ? 'POST' : 'GET', maxK: String(this.maxK) };
  }
}
