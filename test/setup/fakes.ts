import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ArchivePart, Catalog, LlmCatalogEntry } from '../../src/config/catalog';
import type { Reporter } from '../../src/setup/context';
import type { Fetcher } from '../../src/setup/fetch';

export const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** A zip (wheel or jar) holding `members`, written with Python's zipfile like the real ones. */
export function makeZip(path: string, members: Record<string, Buffer | string>): string {
  const staging = `${path}.members`;
  const names: string[] = [];
  for (const [name, data] of Object.entries(members)) {
    const file = join(staging, String(names.length));
    mkdirSync(staging, { recursive: true });
    writeFileSync(file, data);
    names.push(name);
  }
  execFileSync('python3', [
    '-c',
    'import json, sys, zipfile\nnames = json.loads(sys.argv[3])\nwith zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:\n    for i, n in enumerate(names):\n        z.write(sys.argv[2] + "/" + str(i), n)',
    path,
    staging,
    JSON.stringify(names),
  ]);
  return path;
}

/**
 * A fetcher serving prepared files from `store` (by archive name), recording each call; a name
 * mapped to an Error throws it instead (an offline registry, a missing package).
 */
export function fakeFetcher(store: Record<string, string | Error>): Fetcher & { calls: string[] } {
  const calls: string[] = [];
  const serve = (spec: string, archive: string | Error | undefined, destDir: string) => {
    calls.push(spec);
    if (archive instanceof Error) throw archive;
    if (!archive) throw new Error(`fake registry has nothing for ${spec}`);
    mkdirSync(destDir, { recursive: true });
    const target = join(destDir, basename(archive));
    copyFileSync(archive, target);
    return target;
  };
  return {
    calls,
    async pypi(name, version, destDir) {
      return serve(`${name}==${version}`, store[`${name}==${version}`], destDir);
    },
    async maven(coordinates, destDir) {
      return serve(coordinates, store[coordinates], destDir);
    },
  };
}

/** A reporter that keeps every line, by kind, for assertions. */
export function memoryReporter(): Reporter & { lines: { kind: string; message: string }[]; text(): string } {
  const lines: { kind: string; message: string }[] = [];
  const add = (kind: string) => (message: string) => void lines.push({ kind, message });
  return {
    lines,
    did: add('did'),
    ok: add('ok'),
    note: add('note'),
    fail: add('fail'),
    text: () => lines.map((l) => `${l.kind}: ${l.message}`).join('\n'),
  };
}

export interface FakeModel {
  catalog: Catalog;
  entry: LlmCatalogEntry;
  /** archive name -> path of the prepared archive */
  archives: Record<string, string>;
  gguf: Buffer;
}

/**
 * A catalog with one fake two-part "GGUF" (split across two wheels, as the real Qwen and Gemma
 * packages do) and a fake embedder jar, all checksums pinned from what was built.
 */
export function fakeCatalog(dir: string): FakeModel {
  mkdirSync(dir, { recursive: true });
  const gguf = Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(3000, 7), Buffer.from('the end')]);
  const halves = [gguf.subarray(0, 1500), gguf.subarray(1500)];
  const parts: ArchivePart[] = halves.map((half, i) => {
    const pkg = `fake-model-part${i + 1}`;
    const archive = `fake_model_part${i + 1}-1.0.0-py3-none-any.whl`;
    const member = `fake_model_part${i + 1}/data/part0${i + 1}.bin`;
    const path = makeZip(join(dir, archive), { [member]: half, [`fake_model_part${i + 1}/__init__.py`]: '' });
    return { package: pkg, version: '1.0.0', archive, archiveSha256: sha256(readBuffer(path)), member };
  });
  const onnx = Buffer.from('not really onnx, but pinned');
  const tokenizer = '{"model": {"type": "WordPiece"}}';
  const jarName = 'fake-embedder-1.0.jar';
  const jar = makeZip(join(dir, jarName), { 'fake.onnx': onnx, 'fake-tokenizer.json': tokenizer });
  const entry: LlmCatalogEntry = {
    name: 'fake-llm',
    title: 'a fake model',
    license: 'none',
    file: 'fake.gguf',
    sha256: sha256(gguf),
    sizeBytes: gguf.length,
    parts,
    note: 'test only',
  };
  const catalog: Catalog = {
    llms: [entry],
    defaultLlm: 'fake-llm',
    embedder: {
      name: 'fake-embedder',
      title: 'a fake embedder',
      license: 'none',
      dir: 'fake-embedder',
      maven: { coordinates: 'org.example:fake-embedder:1.0', archive: jarName, archiveSha256: sha256(readBuffer(jar)) },
      files: [
        { path: 'onnx/model.onnx', member: 'fake.onnx', sha256: sha256(onnx) },
        { path: 'tokenizer.json', member: 'fake-tokenizer.json', sha256: sha256(tokenizer) },
        { path: 'config.json', content: '{"model_type": "bert"}\n' },
      ],
      primary: 'onnx/model.onnx',
      dimensions: 4,
    },
  };
  const archives: Record<string, string> = { 'org.example:fake-embedder:1.0': jar };
  for (const part of parts) archives[`${part.package}==${part.version}`] = join(dir, part.archive);
  return { catalog, entry, archives, gguf };
}

const readBuffer = (path: string): Buffer => readFileSync(path);
