/**
 * The persistent retrieval cache: a retriever's answers in SQLite, as the LLM cache keeps
 * completions (src/llm/cache.ts: WAL, a busy timeout, one row per key), so that `--resume`, a
 * sweep over LLM settings and a rerun ask a retrieval server each query once. A row's key hashes
 * the retriever's identity — its `name` and everything `describe()` says (engine, URL, index and
 * its checksum) — with the query and k: another server, index or setting misses, and a rebuilt
 * index that describes itself by checksum never replays old hits.
 *
 * On by default for engines outside the process (a ColBERTv2 server), where a query costs a round
 * trip and the answer may change when the server's index does; in-memory engines are not wrapped
 * (recomputing is cheaper than a row). `refresh` recomputes and overwrites, as the LLM cache's.
 */
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { openCacheDatabase } from '../../common/sqlite';
import { cacheDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import type { Retriever, ScoredPassage } from '../types';
import { validateK } from '../validate';

export type RetrievalCacheMode = 'use' | 'refresh' | 'off';

/** Bump when the key's content or the stored value's shape changes; old rows then miss. */
export const RETRIEVAL_CACHE_VERSION = 1;

export function defaultRetrievalCachePath(): string {
  return join(cacheDir(), 'retrieval-cache.sqlite');
}

export interface RetrievalCacheStats {
  hits: number;
  misses: number;
}

/** The key of one retrieval: the retriever's identity, the query and k. */
export function retrievalCacheKey(retriever: Retriever, query: string, k: number): string {
  const describe = retriever.describe?.() ?? {};
  const identity = Object.keys(describe)
    .sort()
    .map((key) => [key, describe[key]]);
  const material = JSON.stringify({ v: RETRIEVAL_CACHE_VERSION, name: retriever.name, describe: identity, query, k });
  return createHash('sha256').update(material).digest('hex');
}

/** One SQLite file of retrievals, shared by every cached retriever of a process. */
export class RetrievalCache {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { value: string }>;
  private readonly putStmt: Database.Statement<[string, string, string, string]>;

  constructor(options: { path?: string; busyTimeoutMs?: number } = {}) {
    this.path = resolve(options.path ?? defaultRetrievalCachePath());
    this.db = openCacheDatabase(this.path, {
      what: 'retrieval cache',
      fix: 'set AMBIQA_CACHE_DIR to a writable folder, or retriever.cache: off',
      ...(options.busyTimeoutMs !== undefined ? { busyTimeoutMs: options.busyTimeoutMs } : {}),
    });
    this.db.exec(`CREATE TABLE IF NOT EXISTS retrievals (
      key TEXT PRIMARY KEY,
      retriever TEXT NOT NULL,
      created_at TEXT NOT NULL,
      value TEXT NOT NULL
    )`);
    this.getStmt = this.db.prepare('SELECT value FROM retrievals WHERE key = ?');
    this.putStmt = this.db.prepare('INSERT OR REPLACE INTO retrievals (key, retriever, created_at, value) VALUES (?, ?, ?, ?)');
  }

  get(key: string): ScoredPassage[] | undefined {
    const row = this.getStmt.get(key);
    if (!row) return undefined;
    try {
      const value = JSON.parse(row.value) as unknown;
      return Array.isArray(value) ? (value as ScoredPassage[]) : undefined;
    } catch {
      return undefined; // a torn row is a miss, and is overwritten
    }
  }

  put(key: string, retriever: string, hits: ScoredPassage[]): void {
    this.putStmt.run(key, retriever, new Date().toISOString(), JSON.stringify(hits));
  }

  size(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM retrievals').get() as { n: number }).n;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/**
 * A retriever whose answers go through a RetrievalCache. It keeps the base's name and
 * description (the cache is not part of a retriever's identity) and counts hits and misses.
 */
export class CachedRetriever implements Retriever {
  readonly name: string;
  readonly stats: RetrievalCacheStats = { hits: 0, misses: 0 };
  /** Keys this instance wrote in `refresh` mode: asked twice, answered the same twice. */
  private readonly refreshed = new Set<string>();
  private readonly inFlight = new Map<string, Promise<ScoredPassage[]>>();

  constructor(
    readonly base: Retriever,
    private readonly cache: RetrievalCache,
    readonly mode: Exclude<RetrievalCacheMode, 'off'> = 'use',
  ) {
    this.name = base.name;
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const key = retrievalCacheKey(this.base, query, k);
    if (this.mode === 'use' || this.refreshed.has(key)) {
      const stored = this.cache.get(key);
      if (stored) {
        this.stats.hits++;
        return stored;
      }
    }
    // Identical queries in flight at once (concurrent questions) share one request.
    const pending = this.inFlight.get(key);
    if (pending) {
      const hits = await pending;
      this.stats.hits++;
      return hits;
    }
    const request = this.base.search(query, k).then((hits) => {
      this.stats.misses++;
      this.cache.put(key, this.base.name, hits);
      if (this.mode === 'refresh') this.refreshed.add(key);
      return hits;
    });
    this.inFlight.set(key, request);
    try {
      return await request;
    } finally {
      this.inFlight.delete(key);
    }
  }

  preflight(): Promise<void> {
    return this.base.preflight?.() ?? Promise.resolve();
  }

  describe(): Record<string, string> {
    return { ...(this.base.describe?.() ?? {}), cache: this.mode };
  }

  async close(): Promise<void> {
    await this.base.close?.();
  }
}

/** Hit and miss counts of every cached retriever inside `retriever` (hybrid, exclusion included). */
export function retrievalCacheStats(retriever: Retriever | undefined): RetrievalCacheStats | undefined {
  const found: RetrievalCacheStats[] = [];
  const seen = new Set<unknown>();
  const walk = (r: unknown): void => {
    if (!r || typeof r !== 'object' || seen.has(r)) return;
    seen.add(r);
    if (r instanceof CachedRetriever) {
      found.push(r.stats);
      return;
    }
    const o = r as { base?: unknown; retrievers?: unknown };
    walk(o.base);
    if (Array.isArray(o.retrievers)) o.retrievers.forEach(walk);
  };
  walk(retriever);
  if (found.length === 0) return undefined;
  return found.reduce((a, s) => ({ hits: a.hits + s.hits, misses: a.misses + s.misses }), { hits: 0, misses: 0 });
}
