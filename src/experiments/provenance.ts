import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot, projectRoot } from '../config/paths';
import { type ToolSet, locateTool } from '../config/tools';
import { readModelManifest } from '../config/models';

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
