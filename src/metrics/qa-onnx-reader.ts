/**
 * An extractive question-answering reader for D-F1 that runs a user-provided ONNX model (e.g. a
 * RoBERTa or BERT fine-tuned on SQuAD 2.0, exported with Optimum) through transformers.js, offline.
 * The folder holds `config.json`, `tokenizer.json` (+ optional `tokenizer_config.json`) and
 * `onnx/model.onnx` (or `model.onnx`); the model returns `start_logits` and `end_logits`.
 *
 * Decoding, as the Hugging Face QA pipeline with `handle_impossible_answer=True` does it for one
 * window: among spans inside the context (start ≤ end, at most `maxAnswerTokens` tokens) take the
 * one with the highest start+end logit; answer "no answer" ('') when the null score (both logits
 * at the first token, [CLS]/<s>) is higher. Comparing logit sums is the same as comparing the
 * pipeline's start×end probabilities, whose normalisers cancel.
 * Differences from the pipeline, documented: one window of `maxLength` tokens (long answers
 * rarely exceed it; the context is cut, never the question), and the span text is the decoded
 * word pieces rather than the original characters (SQuAD normalisation makes these agree for F1
 * in nearly all cases).
 */
import { basename, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { checkModelDir, loadTokenizer, modelOptions, transformers, type LocalModelFiles } from '../retrieval/onnx-model';
import type { DisambigReader } from './disambig-f1';

export interface OnnxQaReaderOptions {
  /** Longest answer in tokens (default 15, the pipeline's `max_answer_len`). */
  maxAnswerTokens?: number;
  /** Window length in tokens (default 384, as SQuAD fine-tuning uses). */
  maxLength?: number;
}

interface TensorLike {
  data: ArrayLike<number | bigint>;
  dims: number[];
}

type Tokenizer = Awaited<ReturnType<typeof loadTokenizer>>;
type QaModel = ((inputs: Record<string, unknown>) => Promise<{ start_logits: TensorLike; end_logits: TensorLike }>) & {
  dispose?: () => Promise<unknown>;
};

const HINT = 'give --reader qa-onnx:<folder> a folder with config.json, tokenizer.json and onnx/model.onnx (an extractive QA model exported to ONNX)';

export class OnnxQaReader implements DisambigReader {
  readonly name: string;
  private readonly files: LocalModelFiles;
  private loading?: Promise<{ tokenizer: Tokenizer; model: QaModel }>;
  private readonly maxAnswerTokens: number;
  private readonly maxLength: number;

  constructor(
    readonly dir: string,
    options: OnnxQaReaderOptions = {},
  ) {
    this.dir = resolve(dir);
    this.files = checkModelDir(this.dir, 'QA reader', HINT);
    this.name = `qa-onnx:${basename(this.dir)}`;
    this.maxAnswerTokens = options.maxAnswerTokens ?? 15;
    this.maxLength = options.maxLength ?? 384;
  }

  private load(): Promise<{ tokenizer: Tokenizer; model: QaModel }> {
    this.loading ??= (async () => {
      const t = await transformers();
      const tokenizer = await loadTokenizer(this.files);
      try {
        const model = (await t.AutoModelForQuestionAnswering.from_pretrained(this.dir, await modelOptions(this.files))) as unknown as QaModel;
        return { tokenizer, model };
      } catch (error) {
        throw new AmbiqaError(`QA reader ${this.dir} could not be loaded: ${(error as Error).message}`, HINT, { cause: error });
      }
    })();
    return this.loading;
  }

  async read(question: string, context: string): Promise<string> {
    if (!context.trim()) return '';
    const { tokenizer, model } = await this.load();
    const tok = tokenizer as unknown as {
      (text: string, options: Record<string, unknown>): Record<string, TensorLike>;
      sep_token_id?: number;
      decode(ids: number[], options: { skip_special_tokens: boolean }): string;
    };
    // Truncate the context, never the question: encode the question alone to know its length.
    const questionIds = Array.from(tok(question, { add_special_tokens: false }).input_ids.data, Number);
    const inputs = tok(question, { text_pair: context, truncation: 'only_second', max_length: this.maxLength });
    let ids = Array.from(inputs.input_ids.data, Number);
    if (ids.length > this.maxLength) {
      // Tokenizers that ignore 'only_second': cut the context ourselves, keeping the final separator.
      const keep = this.maxLength - 1;
      ids = [...ids.slice(0, keep), ids[ids.length - 1]];
    }
    const feeds = this.feeds(inputs, ids);
    const out = await model(feeds);
    const start = Array.from(out.start_logits.data, Number);
    const end = Array.from(out.end_logits.data, Number);

    // The context is what follows the question's separator(s) and precedes the final separator.
    const sep = tok.sep_token_id ?? ids[ids.length - 1];
    let i = 1 + questionIds.length;
    while (i < ids.length && ids[i] === sep) i++;
    const contextStart = i;
    const contextEnd = ids.length - 1; // exclusive: the final separator
    let best = -Infinity;
    let bestSpan: [number, number] | null = null;
    for (let s = contextStart; s < contextEnd; s++) {
      for (let e = s; e < Math.min(contextEnd, s + this.maxAnswerTokens); e++) {
        const score = start[s] + end[e];
        if (score > best) {
          best = score;
          bestSpan = [s, e];
        }
      }
    }
    const nullScore = start[0] + end[0];
    if (!bestSpan || nullScore > best) return '';
    return tok.decode(ids.slice(bestSpan[0], bestSpan[1] + 1), { skip_special_tokens: true }).trim();
  }

  /** Model inputs for `ids` (re-built when we truncated them ourselves). */
  private feeds(inputs: Record<string, TensorLike>, ids: number[]): Record<string, unknown> {
    const original = Array.from(inputs.input_ids.data, Number);
    if (original.length === ids.length) return inputs;
    const Tensor = (inputs.input_ids as unknown as { constructor: new (type: string, data: BigInt64Array, dims: number[]) => unknown }).constructor;
    const make = (values: number[]) => new Tensor('int64', BigInt64Array.from(values.map(BigInt)), [1, values.length]);
    const feeds: Record<string, unknown> = { input_ids: make(ids), attention_mask: make(ids.map(() => 1)) };
    if (inputs.token_type_ids) {
      const types = Array.from(inputs.token_type_ids.data, Number);
      feeds.token_type_ids = make([...types.slice(0, ids.length - 1), types[types.length - 1]]);
    }
    return feeds;
  }

  async dispose(): Promise<void> {
    if (!this.loading) return;
    const { model } = await this.loading;
    await model.dispose?.();
    this.loading = undefined;
  }
}
