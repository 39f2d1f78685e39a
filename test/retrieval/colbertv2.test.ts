import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AmbiqaError } from '../../src/errors';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { withExclusion } from '../../src/retrieval/exclude';
import { createRetriever, needsCorpus, needsEmbedder, parseRetrieverConfig } from '../../src/retrieval/factory';
import { HybridRetriever } from '../../src/retrieval/hybrid';
import { CachedRetriever, RetrievalCache, retrievalCacheStats } from '../../src/retrieval/remote/cache';
import { ColbertV2Retriever, splitColbertText } from '../../src/retrieval/remote/colbertv2';
import { preflightRetriever, retrieverParams } from '../../src/retrieval/remote/inspect';
import type { Passage } from '../../src/retrieval/types';
import { freePort } from '../../src/tracking/server';
import { startColbertServer, type ColbertServer } from '../helpers/colbert-server';

const cities = ['Paris', 'Lyon', 'Nice', 'Lille', 'Brest'];
const passages: Passage[] = Array.from({ length: 30 }, (_, i) => ({
  id: String(1000 + i),
  title: `Festival ${i}`,
  text: `Festival ${i} is held in ${cities[i % cities.length]} every summer and draws many visitors.`,
}));

let server: ColbertServer;
let dir: string;
beforeAll(async () => {
  server = await startColbertServer(passages);
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-colbert-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests = [];
  server.mode = 'ok';
});

describe('ColbertV2Retriever', () => {
  it('GET ?query=&k=: the server passages, best first, with the server pid as id and "Title | text" split', async () => {
    const r = new ColbertV2Retriever({ url: server.url });
    const hits = await r.search('Festival 7 Nice', 3);
    expect(server.requests).toEqual([{ method: 'GET', query: 'Festival 7 Nice', k: 3 }]);
    expect(hits).toHaveLength(3);
    expect(hits[0]!.passage).toEqual({ id: '1007', title: 'Festival 7', text: passages[7]!.text, source: 'colbertv2' });
    expect(hits.map((h) => h.rank)).toEqual([0, 1, 2]);
    expect(hits[0]!.score).toBeGreaterThanOrEqual(hits[1]!.score);
  });

  it('POST {query, k} with post: true gets the same passages', async () => {
    const get = await new ColbertV2Retriever({ url: server.url }).search('Lille visitors', 5);
    const post = await new ColbertV2Retriever({ url: server.url, post: true }).search('Lille visitors', 5);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'POST']);
    expect(post.map((h) => h.passage.id)).toEqual(get.map((h) => h.passage.id));
  });

  it('asks at most maxK (the hosted server refuses k > 100)', async () => {
    const hits = await new ColbertV2Retriever({ url: server.url }).search('festival', 150);
    expect(server.requests[0]!.k).toBe(100);
    expect(hits).toHaveLength(30);
    await new ColbertV2Retriever({ url: server.url, maxK: 4 }).search('festival', 10);
    expect(server.requests[1]!.k).toBe(4);
  });

  it('splits at the first " | " only; no separator: empty title', () => {
    expect(splitColbertText('A | b | c')).toEqual({ title: 'A', text: 'b | c' });
    expect(splitColbertText('just text')).toEqual({ title: '', text: 'just text' });
  });

  it('an answer in another shape fails in one line naming retriever.url', async () => {
    server.mode = 'shape';
    const error = await new ColbertV2Retriever({ url: server.url }).search('x', 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AmbiqaError);
    expect((error as Error).message).toBe(`retriever.url ${server.url} does not answer as a ColBERTv2 server: the answer has no "topk" list (keys: results)`);
  });

  it('refuses a URL that is not http(s), naming the field', () => {
    expect(() => new ColbertV2Retriever({ url: 'ftp://x/y' })).toThrow(/^retriever\.url: ftp:\/\/x\/y is not an http\(s\) URL$/);
    expect(() => new ColbertV2Retriever({ url: 'nowhere' })).toThrow(/^retriever\.url: "nowhere" is not a URL$/);
  });

  it('credentials in the URL travel as basic auth, never in messages or the description', async () => {
    server.requiredAuthorization = `Basic ${Buffer.from('reader:s3cret').toString('base64')}`;
    try {
      const url = server.url.replace('http://', 'http://reader:s3cret@');
      const hits = await new ColbertV2Retriever({ url }).search('Paris', 2);
      expect(hits).toHaveLength(2);
      expect(server.requests[0]!.authorization).toBe(server.requiredAuthorization);
      const wrong = await new ColbertV2Retriever({ url: server.url.replace('http://', 'http://reader:nope@') }).preflight().catch((e: Error) => e);
      expect((wrong as Error).message).toBe(`retriever.url ${server.url}: HTTP 401`);
    } finally {
      server.requiredAuthorization = undefined;
    }
  });

  it('describe: engine, URL without credentials, method', () => {
    const r = new ColbertV2Retriever({ url: 'http://user:secret@host:8893/api/search', post: true });
    expect(r.describe()).toEqual({ engine: 'colbertv2', url: 'http://host:8893/api/search', method: 'POST', maxK: '100' });
  });
});

describe('preflight', () => {
  it('passes against a live server with one query of k=1', async () => {
    await new ColbertV2Retriever({ url: server.url }).preflight();
    expect(server.requests).toEqual([{ method: 'GET', query: 'preflight', k: 1 }]);
  });

  it('an unreachable server: one line naming retriever.url, no retries', async () => {
    const port = await freePort();
    const r = new ColbertV2Retriever({ url: `http://127.0.0.1:${port}/api/search` });
    const error = (await r.preflight().catch((e: unknown) => e)) as AmbiqaError;
    expect(error.message).toMatch(new RegExp(`^retriever\\.url http://127\\.0\\.0\\.1:${port}/api/search: no answer \\(ECONNREFUSED\\)$`));
    expect(error.message).not.toContain('\n');
  });

  it('HTTP 503 and another shape are refused, naming the URL', async () => {
    server.mode = 'status';
    await expect(new ColbertV2Retriever({ url: server.url }).preflight()).rejects.toThrow(`retriever.url ${server.url}: HTTP 503`);
    expect(server.requests).toHaveLength(1);
    server.mode = 'shape';
    await expect(new ColbertV2Retriever({ url: server.url }).preflight()).rejects.toThrow(/does not answer as a ColBERTv2 server/);
  });

  it('reaches the server inside a hybrid and through the cache', async () => {
    const cache = new RetrievalCache({ path: join(dir, 'preflight.sqlite') });
    const bm25 = await createRetriever('bm25', corpusFromPassages(passages), { cache: false });
    server.mode = 'shape';
    const hybrid = new HybridRetriever([bm25, new CachedRetriever(new ColbertV2Retriever({ url: server.url }), cache)]);
    await expect(preflightRetriever(hybrid)).rejects.toThrow(/does not answer as a ColBERTv2 server/);
    expect(retrieverParams(hybrid)).toEqual({ 'retriever.engine': 'colbertv2', 'retriever.url': server.url, 'retriever.method': 'GET', 'retriever.maxK': '100', 'retriever.cache': 'use' });
    cache.close();
  });
});

describe('the persistent retrieval cache', () => {
  it('replays a query across instances and processes, keyed by the retriever identity, query and k', async () => {
    const path = join(dir, 'cache.sqlite');
    const first = new CachedRetriever(new ColbertV2Retriever({ url: server.url }), new RetrievalCache({ path }));
    const live = await first.search('Paris summer', 4);
    await first.search('Paris summer', 4);
    expect(server.requests).toHaveLength(1);
    expect(first.stats).toEqual({ hits: 1, misses: 1 });

    // A new connection (as a resumed run in another process) replays from the file.
    const again = new CachedRetriever(new ColbertV2Retriever({ url: server.url }), new RetrievalCache({ path }));
    expect(await again.search('Paris summer', 4)).toEqual(live);
    expect(server.requests).toHaveLength(1);
    // Another k, another query, another server URL: misses.
    await again.search('Paris summer', 5);
    await again.search('Lyon summer', 4);
    const other = new CachedRetriever(new ColbertV2Retriever({ url: server.url + '?index=b' }), new RetrievalCache({ path }));
    await other.search('Paris summer', 4);
    expect(server.requests.map((r) => `${r.query}/${r.k}`)).toEqual(['Paris summer/4', 'Paris summer/5', 'Lyon summer/4', 'Paris summer/4']);
    expect(again.stats).toEqual({ hits: 1, misses: 2 });
  });

  it('identical queries in flight at once share one request', async () => {
    const cached = new CachedRetriever(new ColbertV2Retriever({ url: server.url }), new RetrievalCache({ path: join(dir, 'inflight.sqlite') }));
    const [a, b, c] = await Promise.all([cached.search('Brest summer', 3), cached.search('Brest summer', 3), cached.search('Brest summer', 4)]);
    expect(b).toEqual(a);
    expect(c).toHaveLength(4);
    expect(server.requests.map((r) => r.k).sort()).toEqual([3, 4]);
    expect(cached.stats).toEqual({ hits: 1, misses: 2 });
  });

  it('refresh asks again once and overwrites; off is not wrapped', async () => {
    const path = join(dir, 'refresh.sqlite');
    const cache = new RetrievalCache({ path });
    await new CachedRetriever(new ColbertV2Retriever({ url: server.url }), cache).search('Nice', 2);
    const refresh = new CachedRetriever(new ColbertV2Retriever({ url: server.url }), cache, 'refresh');
    await refresh.search('Nice', 2);
    await refresh.search('Nice', 2);
    expect(server.requests).toHaveLength(2);
    expect(refresh.stats).toEqual({ hits: 1, misses: 1 });
    const off = await createRetriever({ type: 'colbertv2', url: server.url, cache: 'off' }, undefined);
    expect(off).toBeInstanceOf(ColbertV2Retriever);
  });
});

describe('factory', () => {
  it('builds colbertv2 without a corpus, cached by default, and counts through exclusion', async () => {
    const r = await createRetriever({ type: 'colbertv2', url: server.url }, undefined, { retrievalCachePath: join(dir, 'factory.sqlite') });
    expect(r).toBeInstanceOf(CachedRetriever);
    expect(needsCorpus({ type: 'colbertv2', url: server.url })).toBe(false);
    expect(needsCorpus({ type: 'hybrid', retrievers: [{ type: 'colbertv2', url: server.url }, { type: 'bm25' }] })).toBe(true);
    expect(needsEmbedder({ type: 'colbertv2', url: server.url })).toBe(false);
    await r.search('Brest', 2);
    await r.search('Brest', 2);
    expect(retrievalCacheStats(r)).toEqual({ hits: 1, misses: 1 });
  });

  it('bm25 needs a corpus; engine lucene reads none (its own index folder, checked when opened)', async () => {
    await expect(createRetriever('bm25', undefined)).rejects.toThrow(/^retriever: bm25 needs a corpus and none was given$/);
    await expect(createRetriever({ type: 'bm25', engine: 'lucene', index: '/x' }, undefined)).rejects.toThrow(/^retriever\.index \/x: no such folder/);
    expect(parseRetrieverConfig({ type: 'bm25', engine: 'lucene', index: '/x', url: 'http://h', indexName: 'i' })).toMatchObject({ engine: 'lucene' });
  });

  it('exclude: own over colbertv2 over-fetches and filters the question annotated pids', async () => {
    const annotated = passages.map((p, i) => (i === 7 || i === 12 ? { ...p, annotatedFor: ['asqa:q1'] } : p));
    const base = await createRetriever({ type: 'colbertv2', url: server.url, cache: 'off' }, undefined);
    const own = withExclusion(base, corpusFromPassages(annotated), 'own').forQuestion!('asqa:q1');
    const all = await base.search('Festival 7 Nice', 5);
    const hits = await own.search('Festival 7 Nice', 5);
    expect(all[0]!.passage.id).toBe('1007');
    expect(server.requests.at(-1)!.k).toBe(7);
    expect(hits).toHaveLength(5);
    expect(hits.map((h) => h.passage.id)).not.toContain('1007');
    expect(hits.map((h) => h.passage.id)).not.toContain('1012');
    expect(hits.map((h) => h.rank)).toEqual([0, 1, 2, 3, 4]);
  });
});
