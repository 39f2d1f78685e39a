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
import { checkEngineFields, createLuceneRetriever, luceneFields } from './lucene/config';

const shorthand = (value: unknown) => (typeof value === 'string' ? { type: value } : value);

const bm25Schema = z.object({
  type: z.literal('bm25'),
  k1: z.number().positive().default(DEFAULT_BM25.k1),
  b: z.number().min(0).max(1).default(DEFAULT_BM25.b),
  stopWords: z.boolean().default(DEFAULT_BM25.stopWords),
  stemmer: z.enum(['none', 's', 'porter']).default(DEFAULT_BM25.stemmer),
  ...luceneFields,
});

const denseSchema = z.object({
  type: z.literal('dense'),
  index: z.enum(['auto', 'exact', 'ivf']).default('auto'),
  approximateAbove: z.number().int().positive().default(200_000),
  nlist: z.number().int().positive().optional(),
  nprobe: z.number().int().positive().optional(),
});

export type Bm25Config = z.infer<typeof bm25Schema>;
export type DenseConfig = z.infer<typeof denseSchema>;
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
export type RetrieverConfig = Bm25Config | DenseConfig | HybridConfig | MultiQueryConfig;
/** What a user may write: a kind's name, or an object whose omitted fields take defaults. */
export type RetrieverConfigInput = RetrieverConfig['type'] | ({ type: RetrieverConfig['type'] } & Record<string, unknown>);

const hybridSchema: z.ZodType<HybridConfig, unknown> = z.object({
  type: z.literal('hybrid'),
  // Default: BM25 and dense with equal weights.
  retrievers: z
    .array(z.lazy(() => retrieverConfigSchema))
    .min(1)
    .default(() => [bm25Schema.parse({ type: 'bm25' }), denseSchema.parse({ type: 'dense' })]),
  weights: z.array(z.number().min(0)).optional(),
  rrfK: z.number().positive().default(60),
  depth: z.number().int().positive().default(100),
});

const multiQuerySchema: z.ZodType<MultiQueryConfig, unknown> = z.object({
  type: z.literal('multi-query'),
  base: z.lazy(() => retrieverConfigSchema).default(() => denseSchema.parse({ type: 'dense' })),
  perQueryK: z.number().int().positive().default(20),
});

export const retrieverConfigSchema: z.ZodType<RetrieverConfig, unknown> = z.preprocess(
  shorthand,
  z.union([bm25Schema, denseSchema, hybridSchema, multiQuerySchema]),
);

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
}

/** Build (or load from cache) the retriever a config describes, over `corpus`. */
export async function createRetriever(config: RetrieverConfigInput | RetrieverConfig, corpusOrLoader: Corpus | (() => Corpus), options: FactoryOptions = {}): Promise<Retriever> {
  const parsed = parseRetrieverConfig(config);
  // Loaded on first need only: an engine with its own index (Lucene) never reads the corpus file.
  let loaded: Corpus | undefined;
  const corpusOf = () => (loaded ??= typeof corpusOrLoader === 'function' ? corpusOrLoader() : corpusOrLoader);
  let embedder = options.embedder;
  const needEmbedder = () => (embedder ??= new MiniLmEmbedder());
  const build = async (c: RetrieverConfig): Promise<Retriever> => {
    const cache = { cacheDir: options.cacheDir, cache: options.cache };
    switch (c.type) {
      case 'bm25':
        if (c.engine === 'lucene') return createLuceneRetriever(c);
        checkEngineFields(c);
        return Bm25Retriever.create(corpusOf(), { k1: c.k1, b: c.b, stopWords: c.stopWords, stemmer: c.stemmer }, cache);
      case 'dense':
        return DenseRetriever.create(corpusOf(), needEmbedder(), {
          ...cache,
          index: c.index,
          approximateAbove: c.approximateAbove,
          ivf: { nlist: c.nlist, nprobe: c.nprobe },
          onProgress: options.onProgress,
        });
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
