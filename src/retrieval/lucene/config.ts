/**
 * The `retriever:` fields of the Lucene engine, kept here so factory.ts gains two lines:
 * `engine` (memory, today's default, or lucene), and for lucene exactly one of `index` (a local
 * Lucene index folder) or `url` (+ `indexName`) for an Anserini/Pyserini REST server.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { AmbiqaError } from '../../errors';
import { DEFAULT_BM25 } from '../bm25';
import type { Retriever } from '../types';
import { ANNOTATIONS_FILE, readAnnotations } from './index-dir';
import { LuceneRetriever } from './retriever';

export const luceneFields = {
  // No default written into the parsed config: configs that never name an engine parse as before
  // (same run config, same cache keys); absent means memory.
  engine: z.enum(['memory', 'lucene']).optional(),
  index: z.string().min(1).optional(),
  url: z.string().url().optional(),
  indexName: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().optional(),
};

interface LuceneFieldValues {
  engine?: 'memory' | 'lucene' | undefined;
  index?: string | undefined;
  url?: string | undefined;
  indexName?: string | undefined;
  timeoutMs?: number | undefined;
}

/** One line when the engine's fields do not fit together. */
export function checkEngineFields(c: LuceneFieldValues): void {
  if (c.engine !== 'lucene') {
    const stray = (['index', 'url', 'indexName'] as const).find((f) => c[f] !== undefined);
    if (stray) throw new AmbiqaError(`retriever.${stray} is for engine: lucene, but retriever.engine is memory`, 'add `engine: lucene` (or `--set retriever.engine=lucene`)');
    return;
  }
  if (c.index === undefined && c.url === undefined) {
    throw new AmbiqaError('retriever.engine lucene needs retriever.index (a Lucene index folder) or retriever.url (an Anserini REST server)', 'build an index with `npx ambiqa index --from dpr-tsv|jsonl <file> --engine lucene --out <dir>`');
  }
  if (c.index !== undefined && c.url !== undefined) {
    throw new AmbiqaError('retriever.index and retriever.url are exclusive', 'give the local index folder or the server, not both');
  }
  if (c.indexName !== undefined && c.url === undefined) {
    throw new AmbiqaError('retriever.indexName names an index on a server: it goes with retriever.url', 'drop it for a local index');
  }
}

/**
 * The in-memory BM25's settings that a Lucene searcher cannot take: Anserini's REST search scores
 * with its own (k1 0.9, b 0.4, Porter, its English stop words), which equal the in-memory
 * defaults. A changed one would be ignored without a word, so it is refused.
 */
function checkBm25Settings(c: Partial<Record<keyof typeof DEFAULT_BM25, unknown>>): void {
  for (const key of Object.keys(DEFAULT_BM25) as (keyof typeof DEFAULT_BM25)[]) {
    if (c[key] !== undefined && c[key] !== DEFAULT_BM25[key]) {
      throw new AmbiqaError(
        `retriever.${key}: ${JSON.stringify(c[key])} cannot apply to engine: lucene (Anserini's searcher scores with k1 ${DEFAULT_BM25.k1}, b ${DEFAULT_BM25.b}, Porter stemming and its own stop words)`,
        `drop retriever.${key}, or use the in-memory engine`,
      );
    }
  }
}

export function createLuceneRetriever(c: LuceneFieldValues & Partial<Record<keyof typeof DEFAULT_BM25, unknown>>): Retriever {
  checkEngineFields(c);
  checkBm25Settings(c);
  return new LuceneRetriever({
    ...(c.index !== undefined ? { index: resolve(c.index) } : {}),
    ...(c.url !== undefined ? { url: c.url } : {}),
    ...(c.indexName !== undefined ? { indexName: c.indexName } : {}),
    ...(c.timeoutMs !== undefined ? { timeoutMs: c.timeoutMs } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
}

/** The parts of a retriever config tree this module looks at (hybrid's `retrievers`, multi-query's `base`). */
interface ConfigNode {
  type: string;
  engine?: string;
  index?: string;
  url?: string;
  retrievers?: ConfigNode[];
  base?: ConfigNode;
}

function nodes(c: ConfigNode): ConfigNode[] {
  return [c, ...(c.retrievers ?? []).flatMap(nodes), ...(c.base ? nodes(c.base) : [])];
}

/** Does this config read a local Lucene index folder (whose sidecar holds the questions' own passages)? */
export function hasLocalLuceneIndex(c: ConfigNode): boolean {
  return nodes(c).some((n) => n.engine === 'lucene' && n.index !== undefined);
}

/**
 * For `exclude: own` without the corpus: the first Lucene index folder of the config, whose
 * sidecar (`ambiqa index` wrote it from the JSONL's `annotated_for`) says which passages are
 * each question's own. A server (`url`) or a prebuilt index has none: the refusal says so.
 */
export function onDiskAnnotations(c: ConfigNode): { annotations: Map<string, Set<string>>; where: string } {
  const local = nodes(c).find((n) => n.engine === 'lucene' && n.index !== undefined);
  if (!local) return { annotations: new Map(), where: 'a remote Lucene server (retriever.url)' };
  const dir = resolve(local.index!);
  return { annotations: readAnnotations(dir), where: `the index ${dir} (its ${ANNOTATIONS_FILE})` };
}
