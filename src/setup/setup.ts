import { join } from 'node:path';
import { cacheDir, venvDir } from '../config/paths';
import { AmbiqaError, describeError } from '../errors';
import { type Catalog, defaultCatalog, findLlm } from '../config/catalog';
import { type Reporter, type SetupContext, consoleReporter } from './context';
import { type EmbedderManifestEntry, ensureEmbedder } from './embedder';
import { type Fetcher, registryFetcher } from './fetch';
import { type LlmManifestEntry, ensureCatalogLlm, ensureLlm } from './llm';
import { type ModelManifest, readRawModelManifest, writeModelManifest } from '../config/models';
import { ensureSystemPackages } from './system';
import { ensureVenv } from './venv';
import { ensureLlamaServer } from './llama-server';
import { type EnsureToolOptions, ensureToolSet } from './tools';
import type { GpuBuild } from '../config/tools';
import { ensureLucene } from './lucene';

/**
 * `runtime` is the engine and the embedder's runtime (node-llama-cpp's CPU build, transformers.js)
 * and `notebook` the tslab kernel, each installed into the tool folder (src/setup/tools.ts).
 */
export const SETUP_PARTS = ['system', 'runtime', 'embedder', 'llm', 'judge', 'venv', 'notebook', 'lucene'] as const;
export type SetupPart = (typeof SETUP_PARTS)[number];
/**
 * What a plain `ambiqa setup` does: everything but `lucene` (Anserini's jar and a Java runtime,
 * ~150 MB that only `engine: lucene` needs), which is asked for with `--lucene` or `--only lucene`.
 */
export const DEFAULT_SETUP_PARTS: readonly SetupPart[] = SETUP_PARTS.filter((p) => p !== 'lucene');

export interface SetupOptions {
  /** Parts to do (default: all). */
  parts?: SetupPart[];
  /** Catalog name of the LLM (`default` = the catalog's default). */
  llm?: string;
  /** Use this GGUF file instead of a catalog model. */
  llmFile?: string;
  /**
   * Catalog LLMs to fetch besides the embedded LLM, which stays as it is (the manifest does not
   * change): models that a config names by catalog name, e.g. as its `judge:` model.
   */
  fetchLlms?: string[];
  cacheDir?: string;
  venvDir?: string;
  keepDownloads?: boolean;
  quiet?: boolean;
  /** Injected in tests. */
  catalog?: Catalog;
  fetcher?: Fetcher;
  report?: Reporter;
  /** Injected in tests (the real one runs scripts/system-deps.sh). */
  systemStep?: (report: Reporter) => Promise<void>;
  /** Injected in tests (the real one builds the MLflow venv). */
  venvStep?: (report: Reporter) => Promise<void>;
  /** Also install the llama.cpp server (`llama-cpp-python[server]`) into the venv (`--server`). */
  server?: boolean;
  /** Injected in tests (the real one builds llama.cpp). */
  serverStep?: (report: Reporter) => Promise<void>;
  /** GPU builds of llama.cpp to add to the engine (`--gpu`; opt-in, the CPU build is always there). */
  gpu?: GpuBuild[];
  /** The tool folder (default `<cache>/tools`, `AMBIQA_TOOLS_DIR`). */
  toolsDir?: string;
  /** Injected in tests (the real one runs npm). */
  npm?: EnsureToolOptions['npm'];
}

export interface SetupResult {
  /** Steps that changed something. */
  changed: string[];
  /** Steps that failed, with their message. */
  failed: { step: string; error: AmbiqaError }[];
  manifest?: ModelManifest;
  manifestPath: string;
  seconds: number;
}

/** Count the `did` messages so that a run that changed nothing can say so. */
function countingReporter(inner: Reporter, changed: string[]): Reporter {
  return { ...inner, did: (m) => (changed.push(m), inner.did(m)) };
}

function sameModels(a: ModelManifest | undefined, b: ModelManifest): boolean {
  if (!a) return false;
  const strip = (m: ModelManifest) => JSON.stringify({ llm: m.llm, embedder: m.embedder });
  return strip(a) === strip(b);
}

/**
 * `ambiqa setup`: each step checks before it acts, so a second run only reads stamps and says
 * that nothing was to do. A failing step does not stop the others; every failure is reported
 * with its fix, and the manifest is written once both models are in place.
 */
export async function runSetup(options: SetupOptions = {}): Promise<SetupResult> {
  const started = Date.now();
  const parts = new Set(options.parts ?? DEFAULT_SETUP_PARTS);
  const changed: string[] = [];
  const failed: SetupResult['failed'] = [];
  const report = countingReporter(options.report ?? consoleReporter(options.quiet ?? false), changed);
  const ctx: SetupContext = {
    cacheDir: options.cacheDir ?? cacheDir(),
    catalog: options.catalog ?? defaultCatalog,
    fetcher: options.fetcher ?? registryFetcher,
    report,
    keepDownloads: options.keepDownloads ?? false,
  };
  const manifestFile = join(ctx.cacheDir, 'models', 'manifest.json');
  const previous = readRawModelManifest(manifestFile);

  const step = async <T>(name: string, run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (error) {
      const wrapped = error instanceof AmbiqaError ? error : new AmbiqaError(`${name}: ${describeError(error)}`, undefined, { cause: error });
      failed.push({ step: name, error: wrapped });
      report.fail(`${name}: ${describeError(wrapped)}`);
      return undefined;
    }
  };

  if (parts.has('system')) await step('system packages', () => (options.systemStep ?? ((r) => ensureSystemPackages(r)))(report));
  const tools: EnsureToolOptions = { report, dir: options.toolsDir, npm: options.npm, gpu: options.gpu };
  if (parts.has('runtime') || (options.gpu ?? []).length > 0) {
    await step('embedded engine', () => ensureToolSet('engine', tools));
    if (parts.has('runtime')) await step('embedder runtime', () => ensureToolSet('embedder', tools));
  }
  let embedder: EmbedderManifestEntry | undefined = previous?.embedder;
  if (parts.has('embedder')) embedder = await step('embedder', () => ensureEmbedder(ctx));
  let llm: LlmManifestEntry | undefined = previous?.llm;
  if (parts.has('llm') || options.llm || options.llmFile) {
    llm = await step('LLM', () => ensureLlm(ctx, { name: options.llm, file: options.llmFile }, previous?.llm));
  }
  // The shipped configs' judge model (catalog.defaultJudge): fetched beside the embedded LLM, which
  // it never replaces; the manifest does not change.
  const judgeName = ctx.catalog.defaultJudge;
  if (parts.has('judge') && judgeName && !(options.fetchLlms ?? []).includes(judgeName)) {
    await step(`judge LLM ${judgeName}`, async () => {
      const entry = findLlm(ctx.catalog, judgeName);
      if (!entry) throw new AmbiqaError(`catalog: the default judge '${judgeName}' is not one of its LLMs`);
      return ensureCatalogLlm(ctx, entry);
    });
  }
  for (const name of options.fetchLlms ?? []) {
    await step(`LLM ${name}`, async () => {
      const entry = findLlm(ctx.catalog, name);
      if (!entry) {
        throw new AmbiqaError(
          `--fetch-llm: unknown model '${name}'`,
          `choose one of ${ctx.catalog.llms.map((e) => e.name).join(', ')} (see \`npx ambiqa setup --list\`)`,
        );
      }
      return ensureCatalogLlm(ctx, entry);
    });
  }
  if (parts.has('venv')) {
    const dir = options.venvDir ?? venvDir();
    await step('Python venv', () => (options.venvStep ?? ((r) => ensureVenv({ venvDir: dir, report: r })))(report));
  }
  if (parts.has('notebook')) await step('notebook kernel', () => ensureToolSet('notebook', tools));
  if (parts.has('lucene')) await step('Lucene engine', () => ensureLucene(ctx));
  if (options.server) {
    const dir = options.venvDir ?? venvDir();
    await step('llama.cpp server', () => (options.serverStep ?? ((r) => ensureLlamaServer({ venvDir: dir, report: r })))(report));
  }

  let manifest: ModelManifest | undefined;
  if (llm && embedder) {
    manifest = { llm, embedder, writtenAt: previous?.writtenAt };
    if (sameModels(previous, manifest)) {
      report.ok(`manifest: unchanged (${manifestFile})`);
    } else {
      manifest.writtenAt = new Date().toISOString();
      writeModelManifest(manifest, manifestFile);
      report.did(`manifest: written (${manifestFile}), LLM ${llm.name}, embedder ${embedder.name}`);
    }
  } else if (failed.length === 0) {
    report.note(`manifest: not written yet, the ${llm ? 'embedder' : 'LLM'} is not set up (run \`npx ambiqa setup\` without --only)`);
  }

  const seconds = (Date.now() - started) / 1000;
  if (failed.length > 0) {
    report.fail(`setup: ${failed.length} step(s) failed: ${failed.map((f) => f.step).join(', ')}`);
  } else if (changed.length === 0) {
    report.ok(`setup: nothing to do, everything is already in place (${seconds.toFixed(2)} s)`);
  } else {
    report.did(`setup: done in ${seconds.toFixed(1)} s`);
  }
  return { changed, failed, manifest, manifestPath: manifestFile, seconds };
}
