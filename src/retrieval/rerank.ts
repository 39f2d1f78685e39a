/**
 * Rerankers re-score a candidate pool against the query (ToC: retrieve a large pool, rerank,
 * keep 5).
 *
 * - `EmbeddingReranker` (default): cosine similarity of sentence embeddings.
 * - `CrossEncoderReranker`: a user-supplied ONNX cross-encoder (e.g. an MS MARCO MiniLM
 *   cross-encoder exported with optimum), read from a local folder through transformers.js;
 *   each (query, passage) pair is one forward pass of the sequence classifier.
 */
import { checkModelDir, loadTokenizer, modelOptions, transformers, type LocalModelFiles } from './onnx-model';
import { formatPassage, type Embedder, type Passage, type Reranker, type ScoredPassage } from './types';
import { dot } from './vector-index';
import { validateK } from './validate';

function rankBy(candidates: readonly ScoredPassage[], scores: readonly number[], k: number): ScoredPassage[] {
  return candidates
    .map((c, i) => ({ passage: c.passage, score: scores[i], i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, k)
    .map((c, rank) => ({ passage: c.passage, score: c.score, rank }));
}

export interface EmbeddingRerankerOptions {
  /** Stored passage vectors (e.g. DenseRetriever.vectorOf) to skip re-embedding. */
  vectorOf?: (passage: Passage) => Float32Array | undefined;
}

export class EmbeddingReranker implements Reranker {
  readonly name: string;

  constructor(
    readonly embedder: Embedder,
    private readonly options: EmbeddingRerankerOptions = {},
  ) {
    this.name = `embedding:${embedder.name}`;
  }

  async rerank(query: string, candidates: ScoredPassage[], k: number): Promise<ScoredPassage[]> {
    validateK(k);
    if (candidates.length === 0) return [];
    const stored = candidates.map((c) => this.options.vectorOf?.(c.passage));
    const missing = candidates.filter((_, i) => !stored[i]).map((c) => formatPassage(c.passage));
    const [q, ...fresh] = await this.embedder.embed([query, ...missing]);
    let f = 0;
    const scores = stored.map((v) => dot(q, 0, v ?? fresh[f++], 0, this.embedder.dimension));
    return rankBy(candidates, scores, k);
  }
}

export interface CrossEncoderOptions {
  /** Folder with `config.json`, `tokenizer.json` (+ optional `tokenizer_config.json`) and
   * `onnx/model.onnx` or `model.onnx`. */
  dir: string;
  /** Name in traces (default `cross-encoder:<folder name>`). */
  name?: string;
  /** Pairs per forward pass (default 16). */
  batchSize?: number;
  /** Tokens per pair, longer passages truncated (default 512). */
  maxLength?: number;
  /**
   * Which logit means "relevant" for a classifier with several labels (default: the last one).
   * With one label the raw logit is the score; with several, its softmax probability.
   */
  positiveLabel?: number;
}

type Classifier = (inputs: Record<string, unknown>) => Promise<{ logits: { data: Float32Array; dims: number[] } }>;

export class CrossEncoderReranker implements Reranker {
  readonly name: string;
  private readonly files: LocalModelFiles;
  private loading?: Promise<{ tokenizer: Awaited<ReturnType<typeof loadTokenizer>>; model: Classifier }>;

  constructor(private readonly options: CrossEncoderOptions) {
    this.files = checkModelDir(
      options.dir,
      'cross-encoder',
      'point the reranker at a folder with an ONNX cross-encoder (config.json, tokenizer.json, onnx/model.onnx)',
    );
    this.name = options.name ?? `cross-encoder:${options.dir.split(/[\\/]/).filter(Boolean).pop()}`;
  }

  private load() {
    this.loading ??= (async () => {
      const t = await transformers();
      const tokenizer = await loadTokenizer(this.files);
      const model = (await t.AutoModelForSequenceClassification.from_pretrained(
        this.options.dir,
        await modelOptions(this.files),
      )) as unknown as Classifier;
      return { tokenizer, model };
    })();
    return this.loading;
  }

  /** Relevance scores of (query, passage) pairs, in input order. */
  async score(query: string, passages: readonly Passage[]): Promise<number[]> {
    const { tokenizer, model } = await this.load();
    const batchSize = this.options.batchSize ?? 16;
    const scores: number[] = [];
    for (let start = 0; start < passages.length; start += batchSize) {
      const batch = passages.slice(start, start + batchSize).map(formatPassage);
      const enc = tokenizer(
        batch.map(() => query),
        { text_pair: batch, padding: true, truncation: true, max_length: this.options.maxLength ?? 512 },
      );
      const { logits } = await model(enc as unknown as Record<string, unknown>);
      const labels = logits.dims[1] ?? 1;
      const positive = this.options.positiveLabel ?? labels - 1;
      for (let r = 0; r < batch.length; r++) {
        const row = logits.data.subarray(r * labels, r * labels + labels);
        if (labels === 1) {
          scores.push(row[0]);
          continue;
        }
        const max = Math.max(...row);
        let z = 0;
        for (const x of row) z += Math.exp(x - max);
        scores.push(Math.exp(row[positive] - max) / z);
      }
    }
    return scores;
  }

  async rerank(query: string, candidates: ScoredPassage[], k: number): Promise<ScoredPassage[]> {
    validateK(k);
    if (candidates.length === 0) return [];
    const scores = await this.score(
      query,
      candidates.map((c) => c.passage),
    );
    return rankBy(candidates, scores, k);
  }
}
