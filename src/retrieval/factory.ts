/**
 * Retrievers and rerankers from configuration (experiment YAML, CLI flags). A bare string is
 * shorthand for `{type: <string>}`: `retriever: bm25` equals `retriever: {type: bm25}`.
 */
import { formatIssues } from '../common/zod-issues';
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { Bm25Retriever, DEFAULT_BM25 } from './bm25';
import type { Corpus } from './corpus';
import { DenseRetriever } from './dense';
import { MiniLmEmbedder } from './embedder';
import { HybridRetriever } from './hybrid';
import { MultiQueryRetriever } from './multi-query';
import { CrossEncoderReranker, EmbeddingReranker } from './rerank';
import type { Embedder, Passage, Reranker, Retriever, ScoredPassage } from './types';
import { validateK } from './validate';
import { CachedRetriever, defaultRetrievalCachePath, RetrievalCache, type RetrievalCacheMode } from './remote/cache';
import { ColbertV2Retriever } from './remote/colbertv2';
import { indexDir } from './cache';
import { buildUsearchIndex, importUsearchIndex, isUsearchIndex, USEARCH_QUANTIZATIONS, UsearchRetriever } from './usearch';
import { resolve } from 'node:path';

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
import { checkEngineFields, createLuceneRetriever, luceneFields } from './lucene/config';

const shorthand = (value: unknown) => (typeof value === 'string' ? { type: value } : value);

// Every retriever schema is strict: a field it does not know (`exlcude`, `engnie`) is refused
// with the allowed fields named, never dropped, as `pipeline:`, `llm:` and `dataset:` are.
const bm25Shape = {
  type: z.literal('bm25'),
  k1: z.number().positive().default(DEFAULT_BM25.k1),
  b: z.number().min(0).max(1).default(DEFAULT_BM25.b),
  stopWords: z.boolean().default(DEFAULT_BM25.stopWords),
  stemmer: z.enum(['none', 's', 'porter']).default(DEFAULT_BM25.stemmer),
  ...luceneFields,
};
const bm25Schema = z.strictObject(bm25Shape);

const denseShape = {
  type: z.literal('dense'),
  index: z.enum(['auto', 'exact', 'ivf']).default('auto'),
  approximateAbove: z.number().int().positive().default(200_000),
  nlist: z.number().int().positive().optional(),
  nprobe: z.number().int().positive().optional(),
  /**
   * `memory`: the vectors in the process (exact, or IVF above `approximateAbove`). `usearch`: an
   * HNSW index on disk, memory-mapped (src/retrieval/usearch.ts).
   */
  engine: z.enum(['memory', 'usearch']).default('memory'),
  /** engine usearch: the index folder (built there from the corpus when absent; default: the index cache). */
  path: z.string().min(1).optional(),
  /** engine usearch: how vectors are stored (default f16; absent for the in-memory engine, so its params stay as they were). */
  quantization: z.enum(USEARCH_QUANTIZATIONS).optional(),
  /** engine usearch: import these vectors (`.npy` float32/float16, or raw f16 with `dimension`) instead of embedding the corpus. */
  vectors: z.string().min(1).optional(),
  /** engine usearch with `vectors`: the passage id of each row, one per line. */
  ids: z.string().min(1).optional(),
  /** engine usearch with raw f16 `vectors`: values per row. */
  dimension: z.number().int().positive().optional(),
  /** engine usearch: HNSW search breadth (ef). */
  expansion: z.number().int().positive().optional(),
};
const denseSchema = z.strictObject(denseShape);

/**
 * A ColBERTv2 server (src/retrieval/remote/colbertv2.ts): the API Tree of Clarifications' code
 * calls. It needs no corpus; its answers go through the persistent retrieval cache (`cache`).
 */
const colbertShape = {
  type: z.literal('colbertv2'),
  url: z.string().refine(isHttpUrl, { error: (issue) => `must be an http(s) URL of the server's search endpoint, e.g. http://host:8893/api/search (got ${JSON.stringify(issue.input)})` }),
  /** POST `{query, k}` instead of `GET ?query=&k=` (dsp's `post_requests`). */
  post: z.boolean().default(false),
  /** The most passages one request asks for (the hosted server's cap is 100). */
  maxK: z.number().int().positive().default(100),
  /** Per request attempt, seconds. */
  timeout: z.number().positive().default(30),
  /** The persistent retrieval cache: `use` (replay and store), `refresh` (ask again, overwrite), `off`. */
  cache: z.enum(['use', 'refresh', 'off']).default('use'),
};
const colbertSchema = z.strictObject(colbertShape);

export type Bm25Config = z.infer<typeof bm25Schema>;
export type DenseConfig = z.infer<typeof denseSchema>;
export type ColbertV2Config = z.infer<typeof colbertSchema>;
export interface HybridConfig {
  type: 'hybrid';
  retrievers: RetrieverConfig[];
  weights?: number[];
  rrfK: number;
  depth: number;
}
export interface MultiQueryConfig {
  type: 'multi-query';
  base: RetrieverConfig;
  perQueryK: number;
}
export type RetrieverConfig = Bm25Config | DenseConfig | HybridConfig | MultiQueryConfig | ColbertV2Config;
/** What a user may write: a kind's name, or an object whose omitted fields take defaults. */
export type RetrieverConfigInput = RetrieverConfig['type'] | ({ type: RetrieverConfig['type'] } & Record<string, unknown>);

const hybridShape = {
  type: z.literal('hybrid'),
  // Default: BM25 and dense with equal weights.
  retrievers: z
    .array(z.lazy(() => retrieverConfigSchema))
    .min(1)
    .default(() => [bm25Schema.parse({ type: 'bm25' }), denseSchema.parse({ type: 'dense' })]),
  weights: z.array(z.number().min(0)).optional(),
  rrfK: z.number().positive().default(60),
  depth: z.number().int().positive().default(100),
};

const multiQueryShape = {
  type: z.literal('multi-query'),
  base: z.lazy(() => retrieverConfigSchema).default(() => denseSchema.parse({ type: 'dense' })),
  perQueryK: z.number().int().positive().default(20),
};

const shapes = [bm25Shape, denseShape, hybridShape, multiQueryShape, colbertShape] as const;

export const retrieverConfigSchema: z.ZodType<RetrieverConfig, unknown> = z.preprocess(
  shorthand,
  z.union(shapes.map((shape) => z.strictObject(shape)) as unknown as [typeof bm25Schema, typeof denseSchema]),
) as unknown as z.ZodType<RetrieverConfig, unknown>;

/**
 * A retriever schema with fields of the section that holds it (the experiment config's `corpus`
 * and `exclude`). Each kind's object is extended, not intersected: zod checks a strict object's
 * unknown keys per object, so in an intersection each side would refuse the other's fields.
 * `lenient` drops unknown fields instead (reading a config a run saved).
 */
export function retrieverSectionSchema<S extends z.core.$ZodLooseShape>(extra: S, options: { lenient?: boolean } = {}) {
  const of = (shape: z.core.$ZodLooseShape) => (options.lenient ? z.object({ ...shape, ...extra }) : z.strictObject({ ...shape, ...extra }));
  type Section = RetrieverConfig & z.output<z.ZodObject<S>>;
  type SectionInput = Exclude<RetrieverConfigInput, string> & z.input<z.ZodObject<S>>;
  return z.preprocess(shorthand, z.union(shapes.map(of) as unknown as [z.ZodType<Section, SectionInput>])) as unknown as z.ZodType<Section, SectionInput | string>;
}

export const rerankerConfigSchema = z.preprocess(
  shorthand,
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('none') }),
    z.object({ type: z.literal('embedding') }),
    z.object({
      type: z.literal('cross-encoder'),
      dir: z.string().min(1),
      batchSize: z.number().int().positive().default(16),
      maxLength: z.number().int().positive().default(512),
      positiveLabel: z.number().int().min(0).optional(),
    }),
  ]),
);
export type RerankerConfig = z.infer<typeof rerankerConfigSchema>;
export type RerankerConfigInput = RerankerConfig['type'] | ({ type: RerankerConfig['type'] } & Record<string, unknown>);

function parseOrThrow<T>(schema: z.ZodType<T, unknown>, input: unknown, where: string): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const [first] = formatIssues(result.error.issues, { prefix: [where], schema, input });
  throw new AmbiqaError(`invalid ${first}`, `see docs/retrieval.md for the ${where} options`);
}

export function parseRetrieverConfig(input: unknown, where = 'retriever'): RetrieverConfig {
  return parseOrThrow(retrieverConfigSchema, input, where);
}

export function parseRerankerConfig(input: unknown, where = 'reranker'): RerankerConfig {
  return parseOrThrow(rerankerConfigSchema, input, where);
}

export interface FactoryOptions {
  /** Sentence embedder for dense retrieval, multi-query and the embedding reranker (default:
   * MiniLM from the model manifest, created on first need). */
  embedder?: Embedder;
  /** Index cache folder (default `<cacheDir>/retrieval`). */
  cacheDir?: string;
  /** Persist indexes (default true). */
  cache?: boolean;
  /** Progress while a dense index embeds the corpus. */
  onProgress?: (done: number, total: number) => void;
  /** The persistent retrieval cache's file (default `<cacheDir>/retrieval-cache.sqlite`). */
  retrievalCachePath?: string;
  /** Overrides every engine's `cache` setting (e.g. `off` in tests, `refresh` to re-ask a server). */
  retrievalCache?: RetrievalCacheMode;
}

/**
 * Whether the retriever a config describes reads the corpus into the process: ambiqa's in-memory
 * BM25 and dense indexes do; a server (ColBERTv2, Lucene) holds its own passages. A composite
 * needs it when any of its parts does. The composer loads no corpus for a config that needs none.
 */
export function needsCorpus(config: RetrieverConfigInput | RetrieverConfig): boolean {
  const c = parseRetrieverConfig(config);
  switch (c.type) {
    case 'bm25':
      return c.engine !== 'lucene';
    case 'dense':
      return true;
    case 'colbertv2':
      return false;
    case 'hybrid':
      return c.retrievers.some(needsCorpus);
    case 'multi-query':
      return needsCorpus(c.base);
  }
}

/** Whether the retriever a config describes embeds text (dense, multi-query), i.e. needs MiniLM. */
export function needsEmbedder(config: RetrieverConfigInput | RetrieverConfig): boolean {
  const c = parseRetrieverConfig(config);
  switch (c.type) {
    case 'bm25':
    case 'colbertv2':
      return false;
    case 'dense':
    case 'multi-query':
      return true;
    case 'hybrid':
      return c.retrievers.some(needsEmbedder);
  }
}

/**
 * Build (or load from cache) the retriever a config describes, over `corpus` (which may be
 * absent when `needsCorpus(config)` is false), or a function that loads it on first need.
 */
export async function createRetriever(
  config: RetrieverConfigInput | RetrieverConfig,
  corpusOrLoader: Corpus | (() => Corpus) | undefined,
  options: FactoryOptions = {},
): Promise<Retriever> {
  const parsed = parseRetrieverConfig(config);
  // Loaded on first need only: an engine with its own index (Lucene) never reads the corpus file.
  let loaded: Corpus | undefined;
  const corpusOf = (): Corpus | undefined => (loaded ??= typeof corpusOrLoader === 'function' ? corpusOrLoader() : corpusOrLoader);
  let embedder = options.embedder;
  const needEmbedder = () => (embedder ??= new MiniLmEmbedder());
  const needCorpus = (kind: string): Corpus => {
    const corpus = corpusOf();
    if (!corpus) throw new AmbiqaError(`retriever: ${kind} needs a corpus and none was given`, 'set retriever.corpus, or pass a corpus to createRetriever');
    return corpus;
  };
  let retrievalCache: RetrievalCache | undefined;
  const build = async (c: RetrieverConfig): Promise<Retriever> => {
    const cache = { cacheDir: options.cacheDir, cache: options.cache };
    switch (c.type) {
      case 'bm25':
        if (c.engine === 'lucene') return createLuceneRetriever(c);
        checkEngineFields(c);
        return Bm25Retriever.create(needCorpus('bm25'), { k1: c.k1, b: c.b, stopWords: c.stopWords, stemmer: c.stemmer }, cache);
      case 'dense':
        if (c.engine === 'usearch') return openUsearch(c, needCorpus('dense (usearch)'), needEmbedder(), options);
        return DenseRetriever.create(needCorpus('dense'), needEmbedder(), {
          ...cache,
          index: c.index,
          approximateAbove: c.approximateAbove,
          ivf: { nlist: c.nlist, nprobe: c.nprobe },
          onProgress: options.onProgress,
        });
      case 'colbertv2': {
        const server = new ColbertV2Retriever({ url: c.url, post: c.post, maxK: c.maxK, timeoutMs: c.timeout * 1000 });
        if (c.cache === 'off' || options.retrievalCache === 'off') return server;
        retrievalCache ??= options.retrievalCachePath === undefined ? sharedRetrievalCache() : new RetrievalCache({ path: options.retrievalCachePath });
        return new CachedRetriever(server, retrievalCache, options.retrievalCache ?? c.cache);
      }
      case 'hybrid':
        return new HybridRetriever(await Promise.all(c.retrievers.map(build)), { weights: c.weights, rrfK: c.rrfK, depth: c.depth });
      case 'multi-query': {
        const base = await build(c.base);
        const vectorOf = base instanceof DenseRetriever ? (p: Passage) => base.vectorOf(p) : undefined;
        return new MultiQueryRetriever(base, needEmbedder(), { perQueryK: c.perQueryK, vectorOf });
      }
    }
  };
  return build(parsed);
}

/**
 * A USearch index for `c`: opened where `path` holds a finished one; else imported from
 * `vectors` + `ids`, or built from the corpus with the embedder (resuming an interrupted build),
 * into `path` or the index cache. Passages come from the corpus by id.
 */
async function openUsearch(c: DenseConfig, corpus: Corpus, embedder: Embedder, options: FactoryOptions): Promise<Retriever> {
  if ((c.vectors === undefined) !== (c.ids === undefined)) {
    throw new AmbiqaError(`retriever.${c.vectors === undefined ? 'vectors' : 'ids'}: needed with retriever.${c.vectors === undefined ? 'ids' : 'vectors'}`, 'give the vectors file and its id list together');
  }
  const source = c.vectors ? { vectors: resolve(c.vectors), ids: resolve(c.ids!) } : { embedder: embedder.name };
  const quantization = c.quantization ?? 'f16';
  const dir = c.path ? resolve(c.path) : indexDir('usearch', corpus.hash, { ...source, quantization, format: 1 }, options.cacheDir);
  if (!isUsearchIndex(dir)) {
    const build = { quantization, ...(options.onProgress ? { onProgress: (done: number, total: number) => options.onProgress!(done, total) } : {}) };
    if (c.vectors) await importUsearchIndex(dir, { vectors: resolve(c.vectors), ids: resolve(c.ids!), ...(c.dimension ? { dimension: c.dimension } : {}) }, build);
    else await buildUsearchIndex(dir, corpus.passages, embedder, { ...build, corpusHash: corpus.hash });
  }
  return UsearchRetriever.open(dir, { embedder, passage: (id) => corpus.byId(id), ...(c.expansion ? { expansion: c.expansion } : {}) });
}

let shared: RetrievalCache | undefined;
/** One connection to the default retrieval cache per process (and per AMBIQA_CACHE_DIR). */
function sharedRetrievalCache(): RetrievalCache {
  const path = defaultRetrievalCachePath();
  if (!shared || shared.path !== resolve(path)) shared = new RetrievalCache({ path });
  return shared;
}

/** Keeps the incoming order: the `none` reranker. */
class IdentityReranker implements Reranker {
  readonly name = 'none';
  async rerank(_query: string, candidates: ScoredPassage[], k: number): Promise<ScoredPassage[]> {
    validateK(k);
    return candidates.slice(0, k).map((c, rank) => ({ ...c, rank }));
  }
}

/** A reranker from config; without one, the embedding reranker (the default). */
export function createReranker(config: RerankerConfigInput | RerankerConfig = 'embedding', options: Pick<FactoryOptions, 'embedder'> & { vectorOf?: (p: Passage) => Float32Array | undefined } = {}): Reranker {
  const parsed = parseRerankerConfig(config);
  switch (parsed.type) {
    case 'none':
      return new IdentityReranker();
    case 'embedding':
      return new EmbeddingReranker(options.embedder ?? new MiniLmEmbedder(), { vectorOf: options.vectorOf });
    case 'cross-encoder':
      return new CrossEncoderReranker({
        dir: parsed.dir,
        batchSize: parsed.batchSize,
        maxLength: parsed.maxLength,
        positiveLabel: parsed.positiveLabel,
      });
  }
}
