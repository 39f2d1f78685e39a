/**
 * How ambiqa opens its SQLite caches (the LLM cache, the retrieval cache): the folder made, the
 * file opened, then WAL with a busy timeout so several processes (a sweep's runs, Slurm shards on
 * one machine, a notebook beside a run) share one file. A file that cannot be opened is one line
 * naming it, with the caller's fix.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { AmbiqaError } from '../errors';

export function openCacheDatabase(path: string, options: { what: string; fix: string; busyTimeoutMs?: number }): Database.Database {
  let db: Database.Database;
  try {
    mkdirSync(dirname(path), { recursive: true });
    db = new Database(path);
  } catch (error) {
    throw new AmbiqaError(`cannot open the ${options.what} at ${path}: ${(error as Error).message}`, options.fix);
  }
  // busy_timeout first: switching to WAL itself needs a lock another process may hold.
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across application crashes in WAL mode; only an OS crash may lose the
  // last transactions, which for a cache costs a re-computation, nothing more.
  db.pragma('synchronous = NORMAL');
  return db;
}
