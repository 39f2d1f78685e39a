import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { LlmClient } from '../llm/client';
import { createClientFor } from '../llm/provider-registry';
import { ScriptedProvider } from '../llm/providers/scripted';
import { embeddedModelFromManifest, unloadEmbeddedModels } from '../llm/providers/llama-cpp';
import { LlmSpanReader, READER_PROMPT_VERSION, type DisambigReader } from '../metrics/disambig-f1';

/**
 * The Disambig-F1 reader of a run or of `ambiqa score`, chosen by one spec string and built in one
 * place. The reader is fixed independently of the system under test, so that two pipelines or two
 * models are always scored by the same reader; it never borrows the run's LLM client:
 *
 *   embedded              (default) the GGUF model of `ambiqa setup`, loaded as its own reader
 *                         client, with the fixed span-reading prompt, greedy
 *   embedded:<file.gguf>  another GGUF file, same prompt
 *   openai:<model>        an OpenAI-compatible endpoint (OPENAI_BASE_URL, key in OPENAI_API_KEY)
 *   qa-onnx:<folder>      an extractive QA model in ONNX (ASQA's kind of reader)
 *   none                  no reader: D-F1 and DR are left out of the default metrics
 *   scripted[:<reply>]    test double for runs on the scripted LLM: the span reader over a model
 *                         that always replies <reply> (default `none`); the default reader of a
 *                         run whose `llm.provider` is `scripted`, which has no real model to load
 *
 * `describe` gives the text recorded as the `metric.reader` param: what reads, which model, which
 * prompt version, which decoding.
 */
export type ReaderSpec =
  | { kind: 'embedded'; model?: string }
  | { kind: 'openai'; model: string }
  | { kind: 'qa-onnx'; dir: string }
  | { kind: 'scripted'; reply: string }
  | { kind: 'none' };

export const READER_SPEC_HELP = 'embedded | embedded:<file.gguf> | openai:<model> | qa-onnx:<folder> | none';

/** The default reader spec for a run on `llmProvider` (the scripted test provider gets a scripted reader). */
export function defaultReaderSpec(llmProvider?: unknown): string {
  return llmProvider === 'scripted' ? 'scripted' : 'embedded';
}

/** Parse a reader spec; the error names `option` (e.g. `reader` or `--reader`). */
export function parseReaderSpec(value: string, option = 'reader'): ReaderSpec {
  const [head, ...rest] = value.split(':');
  const arg = rest.join(':');
  switch (head) {
    case 'embedded':
      return arg ? { kind: 'embedded', model: resolve(arg) } : { kind: 'embedded' };
    case 'openai':
      if (!arg) throw new AmbiqaError(`${option}: openai: needs a model name`, 'e.g. openai:Qwen2.5-7B-Instruct (the endpoint comes from OPENAI_BASE_URL)');
      return { kind: 'openai', model: arg };
    case 'qa-onnx':
      if (!arg) throw new AmbiqaError(`${option}: qa-onnx: needs a folder`, 'e.g. qa-onnx:models/roberta-base-squad2');
      return { kind: 'qa-onnx', dir: resolve(arg) };
    case 'none':
      if (arg) break;
      return { kind: 'none' };
    case 'scripted':
      return { kind: 'scripted', reply: arg || 'none' };
    case 'llm':
      throw new AmbiqaError(
        `${option}: ${JSON.stringify(value)} is no longer a reader: the D-F1 reader is fixed independently of the model under test`,
        `use one of: ${READER_SPEC_HELP} (embedded is the model of \`ambiqa setup\` with a fixed prompt)`,
      );
  }
  throw new AmbiqaError(`${option}: ${JSON.stringify(value)} is not a reader`, `use one of: ${READER_SPEC_HELP}`);
}

/**
 * Check a spec before any model loads: its syntax and, with `checkFiles`, that its model files
 * exist. Returns the problem as one line naming `option`, or undefined.
 */
export function checkReaderSpec(value: string, checkFiles: boolean, option = 'reader'): string | undefined {
  let spec: ReaderSpec;
  try {
    spec = parseReaderSpec(value, option);
  } catch (error) {
    return error instanceof AmbiqaError ? `${error.message}${error.hint ? ` (${error.hint})` : ''}` : String(error);
  }
  if (!checkFiles) return undefined;
  if (spec.kind === 'embedded') {
    let file = spec.model;
    if (!file) {
      try {
        file = embeddedModelFromManifest().path;
      } catch {
        return `${option}: embedded: the embedded model is not set up (run \`npx ambiqa setup\`, or choose another reader: ${READER_SPEC_HELP})`;
      }
    }
    if (!existsSync(file)) return `${option}: ${value}: model file not found: ${file} (run \`npx ambiqa setup\`, or give an existing .gguf)`;
  }
  if (spec.kind === 'qa-onnx' && !existsSync(spec.dir)) return `${option}: ${value}: folder not found: ${spec.dir}`;
  return undefined;
}

/** The `metric.reader` param: reader kind and prompt version, model, decoding. Reads no model. */
export function describeReader(spec: ReaderSpec): string {
  switch (spec.kind) {
    case 'embedded': {
      let model = spec.model ? basename(spec.model) : '(setup manifest missing)';
      if (!spec.model) {
        try {
          model = embeddedModelFromManifest().name;
        } catch {
          /* described as missing; creating the reader says how to fix it */
        }
      }
      return `llm-span-reader/${READER_PROMPT_VERSION} embedded:${model} greedy`;
    }
    case 'openai':
      return `llm-span-reader/${READER_PROMPT_VERSION} openai:${spec.model} greedy`;
    case 'qa-onnx':
      return `qa-onnx:${basename(spec.dir)}`;
    case 'scripted':
      return `llm-span-reader/${READER_PROMPT_VERSION} scripted:${spec.reply}`;
    case 'none':
      return 'none';
  }
}

export interface ReaderHandle {
  reader: DisambigReader;
  /** Release what the reader loaded. */
  close(): Promise<void>;
}

/**
 * Build the reader. Files are checked here (a missing GGUF or ONNX folder throws an AmbiqaError
 * naming `option`), but no model is loaded and nothing is called until the first read.
 */
export async function createReader(spec: ReaderSpec, option = 'reader'): Promise<ReaderHandle> {
  const named = (error: unknown): never => {
    if (error instanceof AmbiqaError) throw new AmbiqaError(`${option}: ${error.message}`, error.hint);
    throw error;
  };
  const description = describeReader(spec);
  switch (spec.kind) {
    case 'none':
      throw new AmbiqaError(`${option}: none: d_f1 and dr need a reader`, `drop d_f1 and dr from the metrics, or use one of: ${READER_SPEC_HELP}`);
    case 'qa-onnx': {
      const { OnnxQaReader } = await import('../metrics/qa-onnx-reader');
      const reader = await Promise.resolve()
        .then(() => new OnnxQaReader(spec.dir))
        .catch(named);
      return { reader, close: () => reader.dispose() };
    }
    case 'scripted': {
      const model = new LlmClient(new ScriptedProvider(() => spec.reply, 'scripted-reader'), { cache: null });
      return { reader: new LlmSpanReader(model, { name: description }), close: async () => model.close() };
    }
    case 'embedded': {
      // Its own client: greedy, no sampling options of the run; the model file is shared
      // process-wide with a run on the same GGUF, the context is not.
      const model = await createClientFor({ provider: 'embedded', ...(spec.model ? { model: spec.model } : {}) }).catch(named);
      return {
        reader: new LlmSpanReader(model, { name: description }),
        close: async () => {
          model.close();
          await unloadEmbeddedModels();
        },
      };
    }
    case 'openai': {
      const model = await createClientFor({ provider: 'openai-compatible', model: spec.model }).catch(named);
      return { reader: new LlmSpanReader(model, { name: description }), close: async () => model.close() };
    }
  }
}
