/**
 * Writes a TINY BERT-shaped model folder that transformers.js loads like a real export:
 * `onnx/model.onnx` (or `model.onnx`), `config.json` (`model_type: "bert"`), a WordPiece
 * `tokenizer.json` and `tokenizer_config.json`. No real cross-encoder or SQuAD weights exist
 * offline, so tests of those loading paths use this.
 *
 * The graph takes BERT's inputs (`input_ids`, `attention_mask`, `token_type_ids`, int64 [B,S]):
 *
 *   x = word_emb[input_ids] + type_emb[token_type_ids], masked by attention_mask   [B,S,H]
 *   head 'classification':        logits = Σ_s x · W + bias                      [B,L]
 *   head 'question-answering':    start_logits, end_logits = x · W + bias          [B,S] each
 *
 * so every output is a sum of per-token contributions that a test can compute by hand (see
 * `reference`). The ONNX protobuf is encoded here directly (field numbers from onnx.proto), with
 * no dependency.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// ---------------------------------------------------------------- protobuf encoding

class Pb {
  private readonly parts: Uint8Array[] = [];

  private push(bytes: number[] | Uint8Array): void {
    this.parts.push(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes));
  }

  private static varint(n: number): number[] {
    // Non-negative values only (all that this file writes).
    const out: number[] = [];
    let v = BigInt(n);
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      out.push(byte);
    } while (v > 0n);
    return out;
  }

  private key(field: number, wire: number): void {
    this.push(Pb.varint((field << 3) | wire));
  }

  int(field: number, value: number): this {
    this.key(field, 0);
    this.push(Pb.varint(value));
    return this;
  }

  ints(field: number, values: readonly number[]): this {
    for (const v of values) this.int(field, v);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.key(field, 2);
    this.push(Pb.varint(value.length));
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, value: Pb): this {
    return this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    const size = this.parts.reduce((s, p) => s + p.length, 0);
    const out = new Uint8Array(size);
    let off = 0;
    for (const p of this.parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }
}

const FLOAT = 1;
const INT64 = 7;

/** TensorProto: dims=1, data_type=2, name=8, raw_data=9 (little-endian). */
function tensor(name: string, dims: number[], type: typeof FLOAT | typeof INT64, values: readonly number[]): Pb {
  const raw =
    type === FLOAT
      ? new Uint8Array(Float32Array.from(values).buffer)
      : new Uint8Array(BigInt64Array.from(values.map((v) => BigInt(v))).buffer);
  return new Pb().ints(1, dims).int(2, type).string(8, name).bytes(9, raw);
}

/** ValueInfoProto{name=1, type=2: TypeProto{tensor_type=1: {elem_type=1, shape=2: {dim=1: {dim_value=1|dim_param=2}}}}}. */
function valueInfo(name: string, type: number, dims: (number | string)[]): Pb {
  const shape = new Pb();
  for (const d of dims) shape.message(1, typeof d === 'number' ? new Pb().int(1, d) : new Pb().string(2, d));
  const tensorType = new Pb().int(1, type).message(2, shape);
  return new Pb().string(1, name).message(2, new Pb().message(1, tensorType));
}

/** AttributeProto: name=1, i=3, type=20 (INT=2). */
function intAttr(name: string, value: number): Pb {
  return new Pb().string(1, name).int(3, value).int(20, 2);
}

/** NodeProto: input=1, output=2, name=3, op_type=4, attribute=5. */
function node(op: string, inputs: string[], outputs: string[], attrs: Pb[] = []): Pb {
  const n = new Pb();
  for (const i of inputs) n.string(1, i);
  for (const o of outputs) n.string(2, o);
  n.string(3, `${op}_${outputs[0]}`).string(4, op);
  for (const a of attrs) n.message(5, a);
  return n;
}

// ---------------------------------------------------------------- the model

export type TinyHead = 'classification' | 'question-answering';

export interface TinyBertOptions {
  /** Folder to write into (created). */
  dir: string;
  head: TinyHead;
  /** Word pieces besides the special tokens; lower-case (the tokenizer lower-cases). */
  words: string[];
  /** Hidden size (default 4). */
  hidden?: number;
  /** Labels of the classification head (default 1). */
  numLabels?: number;
  /** Embedding rows to set by token (others are seeded pseudo-random in [-1, 1]). */
  embeddings?: Record<string, number[]>;
  /** Token-type embeddings, 2 × hidden (default zeros). */
  typeEmbeddings?: number[][];
  /** Head weight, hidden × outputs (outputs = numLabels, or 2 for QA: start, end). */
  weight?: number[][];
  bias?: number[];
  /** `onnx` (default): onnx/model.onnx; `root`: model.onnx beside config.json. */
  layout?: 'onnx' | 'root';
  /** Write tokenizer_config.json (default true). */
  tokenizerConfig?: boolean;
  seed?: number;
}

export interface TinyBert {
  dir: string;
  /** token → id, special tokens included. */
  vocab: Map<string, number>;
  hidden: number;
  outputs: number;
  wordEmbeddings: number[][];
  typeEmbeddings: number[][];
  weight: number[][];
  bias: number[];
  /** ids of `[CLS] a [SEP] (b [SEP])` for whitespace-separated known words (a test convenience). */
  encode(a: string, b?: string): { ids: number[]; types: number[] };
  /** The graph's outputs for one unpadded sequence, in plain JS: [L] logits, or [S][2] start/end. */
  reference(ids: number[], types: number[]): number[] | number[][];
}

export const SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  };
}

export function writeTinyBert(options: TinyBertOptions): TinyBert {
  const h = options.hidden ?? 4;
  const outputs = options.head === 'classification' ? (options.numLabels ?? 1) : 2;
  const random = seeded(options.seed ?? 7);
  const tokens = [...SPECIAL_TOKENS, ...new Set(options.words.map((w) => w.toLowerCase()))];
  const vocab = new Map(tokens.map((t, i) => [t, i]));
  const wordEmbeddings = tokens.map((t) =>
    options.embeddings?.[t] ? [...options.embeddings[t]] : t === '[PAD]' ? new Array(h).fill(0) : Array.from({ length: h }, random),
  );
  const typeEmbeddings = options.typeEmbeddings ?? [new Array(h).fill(0), new Array(h).fill(0)];
  const weight = options.weight ?? Array.from({ length: h }, () => Array.from({ length: outputs }, random));
  const bias = options.bias ?? new Array(outputs).fill(0);
  for (const [name, rows, cols] of [
    ['typeEmbeddings', typeEmbeddings, h],
    ['weight', weight, outputs],
  ] as const) {
    if (rows.some((r) => r.length !== cols)) throw new Error(`tiny-onnx: every row of ${name} needs ${cols} values`);
  }
  if (wordEmbeddings.some((r) => r.length !== h)) throw new Error(`tiny-onnx: embeddings need ${h} values`);

  const v = tokens.length;
  const graph = new Pb().string(2, `tiny-bert-${options.head}`);
  const nodes: Pb[] = [
    node('Gather', ['word_embeddings', 'input_ids'], ['word_states'], [intAttr('axis', 0)]),
    node('Gather', ['token_type_embeddings', 'token_type_ids'], ['type_states'], [intAttr('axis', 0)]),
    node('Add', ['word_states', 'type_states'], ['states']),
    node('Cast', ['attention_mask'], ['mask_float'], [intAttr('to', FLOAT)]),
    node('Unsqueeze', ['mask_float', 'axis_2'], ['mask_3d']),
    node('Mul', ['states', 'mask_3d'], ['masked']),
  ];
  const initializers: Pb[] = [
    tensor('word_embeddings', [v, h], FLOAT, wordEmbeddings.flat()),
    tensor('token_type_embeddings', [2, h], FLOAT, typeEmbeddings.flat()),
    tensor('head_weight', [h, outputs], FLOAT, weight.flat()),
    tensor('head_bias', [outputs], FLOAT, bias),
    tensor('axis_2', [1], INT64, [2]),
  ];
  const outputInfos: Pb[] = [];
  if (options.head === 'classification') {
    initializers.push(tensor('axis_1', [1], INT64, [1]));
    nodes.push(
      node('ReduceSum', ['masked', 'axis_1'], ['pooled'], [intAttr('keepdims', 0)]),
      node('MatMul', ['pooled', 'head_weight'], ['logits_raw']),
      node('Add', ['logits_raw', 'head_bias'], ['logits']),
    );
    outputInfos.push(valueInfo('logits', FLOAT, ['batch', outputs]));
  } else {
    nodes.push(
      node('MatMul', ['masked', 'head_weight'], ['span_raw']),
      node('Add', ['span_raw', 'head_bias'], ['span']),
      node('Split', ['span'], ['start_3d', 'end_3d'], [intAttr('axis', 2)]),
      node('Squeeze', ['start_3d', 'axis_2'], ['start_logits']),
      node('Squeeze', ['end_3d', 'axis_2'], ['end_logits']),
    );
    outputInfos.push(valueInfo('start_logits', FLOAT, ['batch', 'sequence']), valueInfo('end_logits', FLOAT, ['batch', 'sequence']));
  }
  for (const n of nodes) graph.message(1, n);
  for (const t of initializers) graph.message(5, t);
  for (const name of ['input_ids', 'attention_mask', 'token_type_ids']) graph.message(11, valueInfo(name, INT64, ['batch', 'sequence']));
  for (const o of outputInfos) graph.message(12, o);
  // ModelProto: ir_version=1, producer_name=2, graph=7, opset_import=8 {domain=1, version=2}.
  const model = new Pb().int(1, 8).string(2, 'ambiqa-tiny-onnx').message(7, graph).message(8, new Pb().string(1, '').int(2, 13));

  const onnxDir = options.layout === 'root' ? options.dir : join(options.dir, 'onnx');
  mkdirSync(onnxDir, { recursive: true });
  writeFileSync(join(onnxDir, 'model.onnx'), model.finish());

  const special = (content: string, id: number) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((t, i) => special(t, i)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab.get('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab.get('[SEP]')], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab),
    },
  };
  writeFileSync(join(options.dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  if (options.tokenizerConfig !== false) {
    writeFileSync(
      join(options.dir, 'tokenizer_config.json'),
      JSON.stringify({
        tokenizer_class: 'BertTokenizer',
        do_lower_case: true,
        model_max_length: 512,
        cls_token: '[CLS]',
        sep_token: '[SEP]',
        pad_token: '[PAD]',
        unk_token: '[UNK]',
        mask_token: '[MASK]',
      }),
    );
  }
  const labels = Object.fromEntries(Array.from({ length: outputs }, (_, i) => [String(i), `LABEL_${i}`]));
  writeFileSync(
    join(options.dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      architectures: [options.head === 'classification' ? 'BertForSequenceClassification' : 'BertForQuestionAnswering'],
      hidden_size: h,
      vocab_size: v,
      type_vocab_size: 2,
      num_hidden_layers: 1,
      num_attention_heads: 1,
      max_position_embeddings: 512,
      ...(options.head === 'classification'
        ? { id2label: labels, label2id: Object.fromEntries(Object.entries(labels).map(([k, l]) => [l, Number(k)])) }
        : {}),
    }),
  );

  const idOf = (w: string) => vocab.get(w) ?? vocab.get(w.toLowerCase()) ?? vocab.get('[UNK]')!;
  return {
    dir: options.dir,
    vocab,
    hidden: h,
    outputs,
    wordEmbeddings,
    typeEmbeddings,
    weight,
    bias,
    encode(a: string, b?: string) {
      const wa = a.split(/\s+/).filter(Boolean).map(idOf);
      const ids = [idOf('[CLS]'), ...wa, idOf('[SEP]')];
      const types = ids.map(() => 0);
      if (b !== undefined) {
        const wb = b.split(/\s+/).filter(Boolean).map(idOf);
        ids.push(...wb, idOf('[SEP]'));
        types.push(...wb.map(() => 1), 1);
      }
      return { ids, types };
    },
    reference(ids: number[], types: number[]) {
      const states = ids.map((id, s) => wordEmbeddings[id].map((x, j) => x + typeEmbeddings[types[s]][j]));
      const project = (x: number[]) => bias.map((b0, o) => b0 + x.reduce((acc, xi, j) => acc + xi * weight[j][o], 0));
      if (options.head === 'classification') {
        const pooled = new Array(h).fill(0);
        for (const st of states) st.forEach((x, j) => (pooled[j] += x));
        return project(pooled);
      }
      return states.map(project);
    },
  };
}
