/**
 * Dense retrieval: every passage (`Title | Section; text`) embedded once with the sentence
 * embedder, the vectors kept on disk as Float32 binary next to a small header, and searched by
 * inner product (= cosine, vectors are normalised). Exact search up to `approximateAbove`
 * passages, an IVF index above it (or when asked).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import type { IndexCacheOptions, IndexOrigin } from './bm25';
import { indexDir } from './cache';
import type { Corpus } from './corpus';
import { readArrays, writeArrays } from './store';
import { formatPassage, type Embedder, type Passage, type Retriever, type ScoredPassage } from './types';
import { validateK } from './validate';
import { defaultNlist, ExactIndex, IvfIndex, type IvfOptions, type VectorIndex } from './vector-index';

export interface DenseOptions extends IndexCacheOptions {
  /** `auto` (default): exact up to `approximateAbove` passages, IVF above. */
  index?: 'auto' | 'exact' | 'ivf';
  /** Corpus size from which `auto` switches to the approximate index (default 200,000). */
  approximateAbove?: number;
  ivf?: IvfOptions;
  /** Called while the corpus is being embedded (only when the index is built). */
  onProgress?: (done: number, total: number) => void;
}

const DENSE_FORMAT = 1;

/** What identifies an embedder's weights; MiniLmEmbedder exposes a fingerprint (its sha256). */
function embedderKey(embedder: Embedder): string {
  return (embedder as Embedder & { fingerprint?: string }).fingerprint ?? embedder.name;
}

export class DenseRetriever implements Retriever {
  readonly name: string;
  private readonly rowOf: Map<string, number>;

  private constructor(
    readonly corpus: Corpus,
    readonly embedder: Embedder,
    /** n × dimension, row i = passage i. */
    readonly vectors: Float32Array,
    readonly index: VectorIndex,
    readonly origin: IndexOrigin,
  ) {
    this.name = `dense:${embedder.name}${index.kind === 'exact' ? '' : `+${index.kind}`}`;
    this.rowOf = new Map(corpus.passages.map((p, i) => [p.id, i]));
  }

  static async create(corpus: Corpus, embedder: Embedder, options: DenseOptions = {}): Promise<DenseRetriever> {
    const started = Date.now();
    const useCache = options.cache !== false;
    const d = embedder.dimension;
    const dir = indexDir('dense', corpus.hash, { embedder: embedderKey(embedder), dimension: d, format: DENSE_FORMAT }, options.cacheDir);
    const file = join(dir, 'vectors.idx');
    let vectors: Float32Array | undefined;
    let fromCache = false;
    if (useCache && existsSync(file)) {
      try {
        const { meta, arrays } = readArrays(file);
        const m = meta as { count: number; dimension: number };
        if (m.count === corpus.passages.length && m.dimension === d) {
          vectors = arrays.vectors as Float32Array;
          fromCache = true;
        }
      } catch {
        /* unreadable: re-embed below */
      }
    }
    if (!vectors) {
      vectors = new Float32Array(corpus.passages.length * d);
      const embedded = await embedInChunks(embedder, corpus.passages.map(formatPassage), options.onProgress);
      embedded.forEach((v, i) => {
        if (v.length !== d) {
          throw new AmbiqaError(`embedder ${embedder.name} returned ${v.length} dimensions, expected ${d}`, 'check the embedder');
        }
        vectors!.set(v, i * d);
      });
      if (useCache) writeArrays(file, { count: corpus.passages.length, dimension: d, embedder: embedderKey(embedder), corpus: corpus.hash }, { vectors });
    }
    const mode = options.index ?? 'auto';
    const approximate = mode === 'ivf' || (mode === 'auto' && corpus.passages.length > (options.approximateAbove ?? 200_000));
    const index = approximate ? loadOrBuildIvf(vectors, d, dir, useCache, options.ivf ?? {}) : new ExactIndex(vectors, d);
    return new DenseRetriever(corpus, embedder, vectors, index, { fromCache, path: useCache ? file : undefined, buildMs: Date.now() - started });
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const [q] = await this.embedder.embed([query]);
    return this.searchVector(q, k);
  }

  searchVector(query: Float32Array, k: number): ScoredPassage[] {
    validateK(k);
    return this.index.search(query, k).map((hit, rank) => ({ passage: this.corpus.passages[hit.id], score: hit.score, rank }));
  }

  /** The stored vector of a corpus passage (a view, not a copy), or undefined for a stranger. */
  vectorOf(passage: Passage): Float32Array | undefined {
    const row = this.rowOf.get(passage.id);
    if (row === undefined) return undefined;
    const d = this.embedder.dimension;
    return this.vectors.subarray(row * d, row * d + d);
  }
}

/** Embed in slices so progress can be reported and memory stays flat. */
async function embedInChunks(embedder: Embedder, texts: string[], onProgress?: (done: number, total: number) => void) {
  const out: Float32Array[] = [];
  const chunk = 512;
  for (let i = 0; i < texts.length; i += chunk) {
    out.push(...(await embedder.embed(texts.slice(i, i + chunk))));
    onProgress?.(Math.min(i + chunk, texts.length), texts.length);
  }
  return out;
}

function loadOrBuildIvf(vectors: Float32Array, d: number, dir: string, useCache: boolean, options: IvfOptions): IvfIndex {
  const n = vectors.length / d;
  const nlist = Math.max(1, Math.min(n, options.nlist ?? defaultNlist(n)));
  const settings = { ...options, nlist, seed: options.seed ?? 1 };
  const file = join(dir, `ivf-${nlist}-${settings.seed}-${options.iterations ?? 8}-${options.trainSize ?? 'auto'}.idx`);
  if (useCache && existsSync(file)) {
    try {
      const { meta, arrays } = readArrays(file);
      const index = IvfIndex.fromParts(vectors, d, {
        centroids: arrays.centroids as Float32Array,
        listOffsets: arrays.listOffsets as Uint32Array,
        listIds: arrays.listIds as Uint32Array,
        nprobe: options.nprobe ?? (meta as { nprobe: number }).nprobe,
      });
      if (index.listIds.length === n) return index;
    } catch {
      /* rebuild */
    }
  }
  const index = IvfIndex.build(vectors, d, settings);
  if (useCache) {
    writeArrays(file, { nprobe: index.nprobe }, { centroids: index.centroids, listOffsets: index.listOffsets, listIds: index.listIds });
  }
  return index;
}
