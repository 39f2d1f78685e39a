/**
 * The MiniLM sentence embedder (all-MiniLM-L6-v2, quantised ONNX from `ambiqa setup`) run by
 * transformers.js on the CPU: token states → mean over real (unmasked) tokens → L2 normalise,
 * as sentence-transformers does for this model.
 *
 * Batch size defaults to 1. The quantised model quantises activations per tensor, so in a padded
 * batch a text's vector depends on its neighbours (cosine to the text embedded alone: median
 * 0.994, worst 0.985 over 128 corpus passages in batches of 32), and on this 2-core machine
 * batches of 32 were not faster (17.5 s vs 12.9 s for those 128). One text per pass makes every
 * vector a function of its text alone, so cached passage vectors and fresh query vectors agree.
 * Larger batches remain available (texts are then sorted by length to limit padding).
 */
import { readModelManifest } from '../config/models';
import { checkModelDir, loadTokenizer, modelOptions, transformers, type LocalModelFiles } from './onnx-model';
import type { Embedder } from './types';

export interface MiniLmOptions {
  /** Model folder; default: the embedder that `ambiqa setup` recorded in the model manifest. */
  dir?: string;
  /** Name recorded in traces (default: the manifest's, else `minilm`). */
  name?: string;
  /** Texts per forward pass (default 1; see above). */
  batchSize?: number;
  /** Tokens per text; longer texts are truncated (default 256, sentence-transformers' limit). */
  maxLength?: number;
}

type Loaded = {
  tokenizer: Awaited<ReturnType<typeof loadTokenizer>>;
  model: { (inputs: Record<string, unknown>): Promise<Record<string, { data: Float32Array; dims: number[] }>> };
};

export class MiniLmEmbedder implements Embedder {
  readonly name: string;
  readonly dimension: number;
  readonly dir: string;
  /** Identifies the weights (the manifest's sha256 when known): part of every dense index key. */
  readonly fingerprint: string;
  private readonly files: LocalModelFiles;
  private readonly batchSize: number;
  private readonly maxLength: number;
  private loading?: Promise<Loaded>;

  constructor(options: MiniLmOptions = {}) {
    let dir = options.dir;
    let name = options.name;
    let fingerprint: string | undefined;
    if (!dir) {
      const manifest = readModelManifest().embedder;
      dir = manifest.dir;
      name ??= manifest.name;
      fingerprint = manifest.sha256;
    }
    this.dir = dir;
    this.files = checkModelDir(dir, 'embedder', 'run `npx ambiqa setup` to fetch the embedder, or pass the folder that holds it');
    this.name = name ?? 'minilm';
    this.dimension = Number(this.files.config.hidden_size ?? 384);
    this.batchSize = options.batchSize ?? 1;
    this.maxLength = options.maxLength ?? 256;
    // Truncation and batching both change the vectors, so both belong to the index key.
    this.fingerprint = `${fingerprint ?? `${this.name}@${dir}`}|max=${this.maxLength}|batch=${this.batchSize}`;
  }

  private load(): Promise<Loaded> {
    this.loading ??= (async () => {
      const t = await transformers();
      const tokenizer = await loadTokenizer(this.files);
      const model = (await t.AutoModel.from_pretrained(this.dir, await modelOptions(this.files))) as unknown as Loaded['model'];
      return { tokenizer, model };
    })();
    return this.loading;
  }

  async embed(texts: string[], onProgress?: (done: number, total: number) => void): Promise<Float32Array[]> {
    const out: Float32Array[] = new Array(texts.length);
    if (texts.length === 0) return out;
    const { tokenizer, model } = await this.load();
    const order = texts.map((t, i) => i).sort((a, b) => texts[a].length - texts[b].length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      const idx = order.slice(start, start + this.batchSize);
      const batch = idx.map((i) => texts[i]);
      const enc = tokenizer(batch, { padding: true, truncation: true, max_length: this.maxLength }) as unknown as Record<
        string,
        { data: BigInt64Array; dims: number[] }
      >;
      const result = await model(enc);
      const states = result.last_hidden_state ?? Object.values(result)[0];
      const [b, s, h] = states.dims;
      const mask = enc.attention_mask.data;
      for (let r = 0; r < b; r++) {
        const v = new Float32Array(h);
        let count = 0;
        for (let j = 0; j < s; j++) {
          if (mask[r * s + j] === 0n) continue;
          count++;
          const base = (r * s + j) * h;
          for (let c = 0; c < h; c++) v[c] += states.data[base + c];
        }
        let norm = 0;
        for (let c = 0; c < h; c++) {
          v[c] /= Math.max(count, 1);
          norm += v[c] * v[c];
        }
        norm = Math.sqrt(norm) || 1;
        for (let c = 0; c < h; c++) v[c] /= norm;
        out[idx[r]] = v;
      }
      onProgress?.(Math.min(start + this.batchSize, texts.length), texts.length);
    }
    return out;
  }
}

/**
 * Remembers embeddings by text (bounded, oldest dropped first). Rerankers and multi-query
 * retrieval embed the same passages again and again within a run.
 */
export class CachedEmbedder implements Embedder {
  readonly name: string;
  readonly dimension: number;
  private readonly memo = new Map<string, Float32Array>();

  constructor(
    readonly inner: Embedder,
    private readonly capacity = 50_000,
  ) {
    this.name = inner.name;
    this.dimension = inner.dimension;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const missing = [...new Set(texts.filter((t) => !this.memo.has(t)))];
    const fresh = new Map<string, Float32Array>();
    if (missing.length) {
      const vectors = await this.inner.embed(missing);
      missing.forEach((t, i) => {
        fresh.set(t, vectors[i]);
        if (this.memo.size >= this.capacity) this.memo.delete(this.memo.keys().next().value as string);
        this.memo.set(t, vectors[i]);
      });
    }
    return texts.map((t) => (fresh.get(t) ?? this.memo.get(t)) as Float32Array);
  }
}
