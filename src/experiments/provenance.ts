import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { sha256OfFile } from '../common/file-hash';
import { writeFileAtomic } from '../common/jsonl';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { cacheDir, dataDir, packageRoot, projectRoot } from '../config/paths';
import { type ToolSet, locateTool } from '../config/tools';
import { readModelManifest } from '../config/models';
import { catalogModelFile, describeLlmConfig, resolveLlmConfig } from '../llm/config';
import type { LlmSectionConfig } from '../llm/provider-registry';
import { embeddedCpu, embeddedEngineBuild } from '../llm/providers/llama-cpp';
import type { RecordedFile, RecordedModel, RunProvenance } from '../run-files';
import type { ExperimentConfig } from './config';

/**
 * What a run records about the code and models that produced it, as MLflow tags: the git commit
 * and whether the tree had uncommitted changes, the versions of Node, ambiqa and the packages
 * that shape results, and the checksums of the embedded model files.
 */
export interface Provenance {
  gitCommit: string | null;
  gitDirty: boolean | null;
  nodeVersion: string;
  ambiqaVersion: string;
  packages: Record<string, string>;
  models: { llm?: { name: string; sha256: string }; embedder?: { name: string; sha256: string } };
}

/** Packages whose version can change a number in a results table. */
const trackedPackages = [
  'node-llama-cpp',
  'openai',
  '@huggingface/transformers',
  'onnxruntime-node',
  'better-sqlite3',
  'zod',
  'yaml',
];

/** Tracked packages that a tool set brings (not ambiqa's own dependencies). */
const TOOL_OF: Record<string, ToolSet> = { 'node-llama-cpp': 'engine', '@huggingface/transformers': 'embedder', 'onnxruntime-node': 'embedder' };

/**
 * `root` is the project whose commit is recorded (the clone, or the project that installed
 * ambiqa: the code that composed the run); versions are those of ambiqa's package and of the
 * packages it loads.
 */
export function collectProvenance(root = projectRoot, pkg = packageRoot): Provenance {
  const head = git(root, ['rev-parse', 'HEAD']);
  const status = head === null ? null : git(root, ['status', '--porcelain', '--untracked-files=no']);
  const packages: Record<string, string> = {};
  // The engine and transformers.js load from the tool folder `ambiqa setup` fills when they are
  // there (src/config/tools.ts); their versions are read where they load from.
  for (const name of trackedPackages) {
    const set = TOOL_OF[name];
    const from = set ? (locateTool(set)?.from ?? pkg) : pkg;
    const version = installedVersion(from, name);
    if (version) packages[name] = version;
  }
  let models: Provenance['models'] = {};
  try {
    const manifest = readModelManifest();
    models = {
      llm: { name: manifest.llm.name, sha256: manifest.llm.sha256 },
      embedder: { name: manifest.embedder.name, sha256: manifest.embedder.sha256 },
    };
  } catch {
    /* no embedded models set up (e.g. a run against an OpenAI-compatible service only) */
  }
  return {
    gitCommit: head,
    gitDirty: status === null ? null : status.length > 0,
    nodeVersion: process.version,
    ambiqaVersion: installedVersion(pkg, '.') ?? 'unknown',
    packages,
    models,
  };
}

/** MLflow tags; `mlflow.source.git.commit` is the one MLflow's UI shows. */
export function provenanceTags(p: Provenance, uses: { embeddedLlm: boolean; embedder: boolean }): Record<string, string> {
  const tags: Record<string, string> = {
    'ambiqa.version': p.ambiqaVersion,
    'ambiqa.node': p.nodeVersion,
  };
  if (p.gitCommit) {
    tags['mlflow.source.git.commit'] = p.gitCommit;
    tags['ambiqa.git.commit'] = p.gitCommit;
  }
  if (p.gitDirty !== null) tags['ambiqa.git.dirty'] = String(p.gitDirty);
  for (const [name, version] of Object.entries(p.packages)) tags[`ambiqa.pkg.${name}`] = version;
  if (uses.embeddedLlm && p.models.llm) {
    tags['ambiqa.model.llm'] = p.models.llm.name;
    tags['ambiqa.model.llm.sha256'] = p.models.llm.sha256;
  }
  if (uses.embedder && p.models.embedder) {
    tags['ambiqa.model.embedder'] = p.models.embedder.name;
    tags['ambiqa.model.embedder.sha256'] = p.models.embedder.sha256;
  }
  return tags;
}

function git(cwd: string, args: string[]): string | null {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0 || r.error) return null;
  return r.stdout.trim();
}

/** The version of `name` as Node resolves it from the package at `root` (npm may hoist it up). */
function installedVersion(root: string, name: string): string | null {
  let file = join(root, 'package.json');
  if (name !== '.') {
    for (let dir = root; ; dir = dirname(dir)) {
      file = join(dir, 'node_modules', name, 'package.json');
      if (existsSync(file) || dirname(dir) === dir) break;
    }
  }
  if (!existsSync(file)) return null;
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- what `ambiqa reproduce` checks

/**
 * sha256 of a file, streamed in 4 MiB pieces; of a folder (a dataset given as a directory), of
 * its regular files' relative paths and checksums in sorted order. Not remembered: a reproduction
 * must see the bytes that are there now.
 */
export function sha256Path(path: string): string {
  if (statSync(path).isDirectory()) {
    const hash = createHash('sha256');
    for (const file of filesUnder(path)) hash.update(`${file}\0${sha256Path(join(path, file))}\n`);
    return hash.digest('hex');
  }
  return sha256OfFile(path);
}

function filesUnder(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...filesUnder(dir, rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

function bytesOf(path: string): number {
  const st = statSync(path);
  return st.isDirectory() ? filesUnder(path).reduce((sum, f) => sum + statSync(join(path, f)).size, 0) : st.size;
}

/** Checksums of the run's files, kept per (path, size, mtime) for the process: a sweep's points share one dataset. */
const recordedMemo = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

/**
 * Files this large keep their checksum across processes too (`<cache dir>/file-sha256.json`, by
 * path, size and mtime): a 13 GB passage file must not be read again at the start of every run.
 * A reproduction never reads this store; it hashes the bytes that are there.
 */
const PERSISTED_FROM_BYTES = 64 << 20;

function hashStorePath(): string {
  return join(cacheDir(), 'file-sha256.json');
}

type HashStore = Record<string, { size: number; mtimeMs: number; sha256: string }>;

function readHashStore(): HashStore {
  try {
    const value = JSON.parse(readFileSync(hashStorePath(), 'utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as HashStore) : {};
  } catch {
    return {}; // none yet, or unreadable: hashed again
  }
}

/** A file's checksum for the run's record (`persistFrom`: the size from which the store keeps it). */
export function rememberedSha256(path: string, persistFrom = PERSISTED_FROM_BYTES): string {
  const st = statSync(path);
  const memo = recordedMemo.get(path);
  if (memo && memo.size === st.size && memo.mtimeMs === st.mtimeMs) return memo.sha256;
  const persisted = st.isFile() && st.size >= persistFrom;
  const stored = persisted ? readHashStore()[path] : undefined;
  const sha256 = stored && stored.size === st.size && stored.mtimeMs === st.mtimeMs && /^[0-9a-f]{64}$/.test(stored.sha256) ? stored.sha256 : sha256Path(path);
  recordedMemo.set(path, { size: st.size, mtimeMs: st.mtimeMs, sha256 });
  if (persisted && stored?.sha256 !== sha256) {
    try {
      mkdirSync(cacheDir(), { recursive: true });
      writeFileAtomic(hashStorePath(), JSON.stringify({ ...readHashStore(), [path]: { size: st.size, mtimeMs: st.mtimeMs, sha256 } }) + '\n');
    } catch {
      /* a read-only cache dir: the file is hashed again next time */
    }
  }
  return sha256;
}

/** The path relative to the project root or the data dir, when it lies under one. */
export function portablePath(path: string): string | undefined {
  for (const [label, root] of [['project', projectRoot], ['data', dataDir()]] as const) {
    const rel = relative(root, path);
    if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) return `${label}:${rel.split('\\').join('/')}`;
  }
  return undefined;
}

/** Where a recorded file is on this machine: its path, else its project- or data-relative form here. */
export function locateRecordedFile(file: RecordedFile): string {
  if (existsSync(file.path) || !file.relative) return file.path;
  const [label, rel] = [file.relative.slice(0, file.relative.indexOf(':')), file.relative.slice(file.relative.indexOf(':') + 1)];
  const here = join(label === 'data' ? dataDir() : projectRoot, rel);
  return existsSync(here) ? here : file.path;
}

function recordFile(path: string): RecordedFile | undefined {
  const absolute = resolve(path);
  if (!existsSync(absolute)) return undefined;
  const rel = portablePath(absolute);
  return { path: absolute, ...(rel ? { relative: rel } : {}), sha256: rememberedSha256(absolute), bytes: bytesOf(absolute) };
}

/** The data files a config reads, by field: what a reproduction checks byte for byte. */
export function dataFilesOf(config: ExperimentConfig): Record<string, string> {
  const d = config.dataset;
  // FEVER's `sampled` split reads the claim ids beside the data file (src/datasets/fever.ts).
  const feverIds = d.name === 'fever' && d.split !== 'all' && d.path ? join(dirname(resolve(d.path)), 'sampled_ids.json') : undefined;
  return {
    ...(d.path ? { dataset: d.path } : {}),
    ...(feverIds && existsSync(feverIds) ? { sampledIds: feverIds } : {}),
    ...(d.demos ? { demos: d.demos } : {}),
    ...(d.ids ? { ids: d.ids } : {}),
    ...(d.alternatives ? { alternatives: d.alternatives } : {}),
    ...(config.retriever?.corpus ? { corpus: config.retriever.corpus } : {}),
  };
}

/**
 * The model a config section runs, as a reproduction finds it: an in-process file (its name,
 * the file, and the checksum a run records — the catalog's or manifest's pinned one, else the
 * file hashed), an endpoint (model and API root without credentials), or the test double.
 */
export function modelOfSection(section: LlmSectionConfig, role: 'llm' | 'judge', hash: (path: string) => string = rememberedSha256): RecordedModel {
  if (section.provider === 'scripted') return { role, provider: 'scripted', name: section.model };
  if (section.provider === 'openai-compatible') {
    const described = describeLlmConfig(section, process.env, role);
    return { role, provider: section.provider, name: String(described.model), baseUrl: String(described.baseUrl) };
  }
  // As the client resolves it (the machine's load is sampled once per process, so they agree).
  const threads = resolveLlmConfig(section, role).threads;
  const model = section.model;
  if (model === undefined) {
    try {
      const manifest = readModelManifest();
      return { role, provider: 'embedded', name: manifest.llm.name, sha256: manifest.llm.sha256, file: manifest.llm.file, threads };
    } catch {
      return { role, provider: 'embedded', name: '(setup manifest missing)' };
    }
  }
  const fromCatalog = catalogModelFile(model);
  if (fromCatalog) return { role, provider: 'embedded', name: fromCatalog.name, sha256: fromCatalog.sha256, file: fromCatalog.path, threads };
  const file = resolve(model);
  return { role, provider: 'embedded', name: basename(file), file, ...(existsSync(file) ? { sha256: hash(file) } : {}), threads };
}

/** The MiniLM embedder of the setup manifest: its ONNX file and pinned checksum. */
export function embedderModel(): RecordedModel | undefined {
  try {
    const { embedder } = readModelManifest();
    const file = [join(embedder.dir, 'onnx', 'model.onnx'), join(embedder.dir, 'model.onnx')].find((f) => existsSync(f)) ?? join(embedder.dir, 'onnx', 'model.onnx');
    return { role: 'embedder', provider: 'embedded', name: embedder.name, sha256: embedder.sha256, file };
  } catch {
    return undefined;
  }
}

/**
 * What a run records in `provenance.json` when it starts (and as MLflow tags): `base` (commit,
 * versions) beside the checksums of the data files it reads, its models and, when a model runs
 * in-process, the engine build. `retriever` is the retriever's own description, when it has one.
 */
export function collectRunProvenance(
  config: ExperimentConfig,
  base: Provenance,
  parts: { embedder: boolean; retriever?: Record<string, string> },
): RunProvenance {
  const data: Record<string, RecordedFile> = {};
  for (const [field, path] of Object.entries(dataFilesOf(config))) {
    const recorded = recordFile(path);
    if (recorded) data[field] = recorded;
  }
  const models: RecordedModel[] = [modelOfSection(config.llm, 'llm')];
  if (config.judge) models.push(modelOfSection(config.judge, 'judge'));
  const embedder = parts.embedder ? embedderModel() : undefined;
  if (embedder) models.push(embedder);
  const inProcess = models.some((m) => m.role !== 'embedder' && m.provider === 'embedded');
  return {
    recordedAt: new Date().toISOString(),
    code: { commit: base.gitCommit, dirty: base.gitDirty, ambiqaVersion: base.ambiqaVersion, node: base.nodeVersion },
    packages: base.packages,
    data,
    models,
    ...(inProcess ? { engine: { ...embeddedEngineBuild(), cpu: embeddedCpu() } } : {}),
    ...(parts.retriever && Object.keys(parts.retriever).length > 0 ? { retriever: parts.retriever } : {}),
  };
}

/** MLflow tags of what a run recorded for reproduction (beside `provenanceTags`'). */
export function runProvenanceTags(p: RunProvenance): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const [field, file] of Object.entries(p.data)) tags[`ambiqa.data.${field}.sha256`] = file.sha256;
  for (const m of p.models) {
    if (m.role === 'embedder') continue; // provenanceTags names the embedder
    if (m.provider === 'openai-compatible') {
      tags[`ambiqa.endpoint.${m.role}.model`] = m.name;
      if (m.baseUrl) tags[`ambiqa.endpoint.${m.role}.base_url`] = m.baseUrl;
    } else if (m.provider === 'embedded' && m.sha256) {
      tags[`ambiqa.model.${m.role}.file.sha256`] = m.sha256;
    }
  }
  if (p.engine) {
    tags['ambiqa.engine.node_llama_cpp'] = p.engine.nodeLlamaCpp;
    if (p.engine.llamaCpp) tags['ambiqa.engine.llama_cpp'] = p.engine.llamaCpp;
  }
  return tags;
}

/**
 * A merged run's record: its shards' when they agree on everything a reproduction checks (the
 * commit, the data and model checksums, the engine build), the first one's paths kept; undefined
 * when a shard has none or they disagree (then the merge writes none and `reproduce` says so).
 */
export function mergedProvenance(shards: ReadonlyArray<RunProvenance | null>): RunProvenance | undefined {
  if (shards.length === 0 || shards.some((p) => p === null)) return undefined;
  const checked = (p: RunProvenance) =>
    JSON.stringify([
      p.code.commit,
      p.code.dirty,
      Object.entries(p.data).map(([field, f]) => [field, f.sha256]).sort(),
      p.models.map((m) => [m.role, m.provider, m.name, m.sha256 ?? null, m.baseUrl ?? null]),
      p.engine ? [p.engine.nodeLlamaCpp, p.engine.llamaCpp ?? null] : null,
    ]);
  const first = checked(shards[0]!);
  return shards.every((p) => checked(p!) === first) ? shards[0]! : undefined;
}
