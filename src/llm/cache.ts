import { openCacheDatabase } from '../common/sqlite';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { cacheDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { NormalisedJudgeRequest, NormalisedRequest, ProviderCompletion, ProviderJudgement } from './types';

/**
 * The persistent completion cache: one row per sample, in SQLite (WAL, so many readers and
 * writers in one process and across processes; a busy timeout instead of "database is locked").
 *
 * A row's key hashes everything that determines a sample — provider, model, messages, every
 * sampling parameter and the sample index — but not `n` and not `purpose`: a request for 5
 * samples reuses the 3 a request for 3 samples already paid for (a Verify-and-Edit threshold
 * sweep relies on this), and two pipelines that send the same prompt under different purposes
 * share it. At temperature > 0 the sample index makes samples distinct; replaying returns the
 * same sample for the same index.
 */
/**
 * `use`: replay and store. `refresh`: recompute what was stored before, overwrite it. `replay`:
 * replay only — a call the cache does not hold is refused, never sent (`ambiqa reproduce` of an
 * endpoint run). `off`: no cache.
 */
export type CacheMode = 'use' | 'refresh' | 'replay' | 'off';

export interface CacheOptions {
  /** `use`: read and write. `refresh`: recompute what was stored before, overwrite it. `replay`: read only, never call. `off`: no cache. */
  mode?: CacheMode;
  /** SQLite file. Default `<cacheDir()>/llm-cache.sqlite`. */
  path?: string;
  /** How long a writer waits for another writer's lock. Default 10 s. */
  busyTimeoutMs?: number;
}

export interface CacheKeyInput {
  provider: string;
  model: string;
  /** The provider's endpoint (API root without credentials); absent for in-process providers. */
  endpoint?: string;
  /** The in-process engine and its version; absent for providers that call a server. */
  engine?: string;
  request: NormalisedRequest;
  sampleIndex: number;
}

/**
 * A stored sample. Its token counts are left out when the provider did not report them (read back
 * as undefined, unknown); rows written before issue 37 store 0 there, which may mean either a real
 * 0 or "not reported" — they replay as 0.
 */
export interface CachedSample extends ProviderCompletion {
  /** Seconds the live call took when it was stored. */
  latencySeconds: number;
  /** The `cacheWriter` of the call that stored it; absent in rows written before writers were recorded. */
  writer?: string;
}

/** Bump when the key's content or the stored value's shape changes; old rows then miss. */
export const CACHE_KEY_VERSION = 1;

export function defaultCachePath(): string {
  return join(cacheDir(), 'llm-cache.sqlite');
}

/** What the key hashes, exactly; exported so tests and docs can show it. */
export function cacheKeyMaterial({ provider, model, endpoint, engine, request, sampleIndex }: CacheKeyInput): Record<string, unknown> {
  return {
    v: CACHE_KEY_VERSION,
    provider,
    model,
    // Only for providers that call a server, so that embedded rows stay valid.
    ...(endpoint ? { endpoint } : {}),
    // Only for in-process providers: rows drawn by another engine version miss.
    ...(engine ? { engine } : {}),
    // Only role and content: extra properties a caller left on a message must not split keys.
    messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
    temperature: request.temperature,
    topP: request.topP,
    maxTokens: request.maxTokens,
    stop: request.stop,
    seed: request.seed,
    sampleIndex,
    // Only when asked, so that keys written before log-probabilities existed stay valid.
    ...(request.logprobs ? { logprobs: true } : {}),
  };
}

export interface CachedJudgement extends ProviderJudgement {
  latencySeconds: number;
  /** As `CachedSample.writer`. */
  writer?: string;
}

/** Key of a judgment: its own kind, so it never collides with a generation of the same prompt. */
export function judgeCacheKey(input: {
  provider: string;
  model: string;
  endpoint?: string;
  engine?: string;
  request: NormalisedJudgeRequest;
  /** `text` when the client was told to parse replies; absent (probability) keeps the keys of earlier runs. */
  judgeMode?: 'text';
}): string {
  const material = {
    v: CACHE_KEY_VERSION,
    kind: 'judge',
    ...(input.judgeMode ? { judgeMode: input.judgeMode } : {}),
    provider: input.provider,
    model: input.model,
    ...(input.endpoint ? { endpoint: input.endpoint } : {}),
    ...(input.engine ? { engine: input.engine } : {}),
    messages: input.request.messages.map((m) => ({ role: m.role, content: m.content })),
    labels: input.request.labels,
  };
  return createHash('sha256').update(canonicalJson(material)).digest('hex');
}

export function cacheKey(input: CacheKeyInput): string {
  return createHash('sha256').update(canonicalJson(cacheKeyMaterial(input))).digest('hex');
}

/** JSON with object keys sorted at every level, so equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new AmbiqaError(`LLM request parameter ${value} is not a finite number`, 'pass finite sampling parameters');
  }
  return value;
}

export class LlmCache {
  readonly mode: CacheMode;
  readonly path: string;
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { value: string }>;
  private readonly putStmt: Database.Statement<[string, string, string, number, string, string]>;
  /** Keys written by this instance in `refresh` mode. */
  private readonly refreshed = new Set<string>();

  constructor(options: CacheOptions = {}) {
    this.mode = options.mode ?? 'use';
    if (this.mode === 'off') {
      throw new AmbiqaError('LlmCache was created with mode `off`', 'create no cache when the mode is `off` (see openCache)');
    }
    this.path = resolve(options.path ?? defaultCachePath());
    this.db = openCacheDatabase(this.path, {
      what: 'LLM cache',
      fix: 'set `cache.path` in the llm config to a writable file, or `cache.mode: off`',
      ...(options.busyTimeoutMs !== undefined ? { busyTimeoutMs: options.busyTimeoutMs } : {}),
    });
    this.db.exec(`CREATE TABLE IF NOT EXISTS completions (
      key TEXT PRIMARY KEY,
      provider TEXT NOT NULL,
      model TEXT NOT NULL,
      sample_index INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      value TEXT NOT NULL
    )`);
    this.getStmt = this.db.prepare('SELECT value FROM completions WHERE key = ?');
    this.putStmt = this.db.prepare(
      'INSERT OR REPLACE INTO completions (key, provider, model, sample_index, created_at, value) VALUES (?, ?, ?, ?, ?, ?)',
    );
  }

  /**
   * The stored sample, or undefined. In `refresh` mode rows from before are stale and miss, but
   * a row this cache wrote itself is fresh: a refresh run that asks the same thing twice gets
   * the same answer twice, as a `use` run would.
   */
  get(key: string): CachedSample | undefined {
    if (this.mode === 'refresh' && !this.refreshed.has(key)) return undefined;
    const row = this.getStmt.get(key);
    if (!row) return undefined;
    try {
      return JSON.parse(row.value) as CachedSample;
    } catch {
      return undefined; // a torn or foreign row is a miss, and will be overwritten
    }
  }

  /** Store a sample; `writer` (the run that computed it) is kept inside the value, not the key. */
  put(key: string, input: Omit<CacheKeyInput, 'request'>, sample: CachedSample, writer?: string): void {
    const value: CachedSample = {
      text: sample.text,
      finishReason: sample.finishReason,
      usage: { promptTokens: sample.usage.promptTokens, completionTokens: sample.usage.completionTokens },
      latencySeconds: sample.latencySeconds,
      ...(sample.logprob !== undefined ? { logprob: sample.logprob } : {}),
      ...(writer !== undefined ? { writer } : {}),
    };
    this.putStmt.run(key, input.provider, input.model, input.sampleIndex, new Date().toISOString(), JSON.stringify(value));
    if (this.mode === 'refresh') this.refreshed.add(key);
  }

  /** A stored judgment (`LanguageModel.judge`), keyed by `judgeCacheKey`. */
  getJudgement(key: string): CachedJudgement | undefined {
    if (this.mode === 'refresh' && !this.refreshed.has(key)) return undefined;
    const row = this.getStmt.get(key);
    if (!row) return undefined;
    try {
      const value = JSON.parse(row.value) as CachedJudgement;
      return Array.isArray(value.probabilities) ? value : undefined;
    } catch {
      return undefined;
    }
  }

  putJudgement(key: string, input: { provider: string; model: string }, judgement: CachedJudgement, writer?: string): void {
    const value: CachedJudgement = {
      probabilities: [...judgement.probabilities],
      labelMass: judgement.labelMass,
      mode: judgement.mode,
      ...(judgement.text !== undefined ? { text: judgement.text } : {}),
      ...(judgement.unparsed ? { unparsed: true } : {}),
      usage: { promptTokens: judgement.usage.promptTokens, completionTokens: judgement.usage.completionTokens },
      latencySeconds: judgement.latencySeconds,
      ...(writer !== undefined ? { writer } : {}),
    };
    this.putStmt.run(key, input.provider, input.model, 0, new Date().toISOString(), JSON.stringify(value));
    if (this.mode === 'refresh') this.refreshed.add(key);
  }

  /** Rows stored (all providers and models). */
  size(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM completions').get() as { n: number }).n;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** A cache for the given options, or null for mode `off`. */
export function openCache(options: CacheOptions | undefined): LlmCache | null {
  if (!options || (options.mode ?? 'use') === 'off') return null;
  return new LlmCache(options);
}
