import { readFileSync } from 'node:fs';
import { loadDataset } from '../datasets/index';
import { checkGroupBy } from '../datasets/groups';
import type { Example } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { LlmClient } from '../llm/client';
import { describeLlmConfig, type LlmSection } from '../llm/config';
import type { PriceSource } from '../llm/pricing';
import { createSectionClient, sectionPrice } from '../llm/provider-registry';
import { buildDemoPool, FixedDemoSelector, KnnDemoSelector } from '../pipelines/demos';
import type { DemoSelector, PipelineContext } from '../pipelines/types';
import { labelJudgments } from '../metrics/judge-labels';
import { loadCorpus, corpusFromPassages, type Corpus } from '../retrieval/corpus';
import { buildCorpus, defaultSources } from '../retrieval/corpus-builder';
import { MiniLmEmbedder } from '../retrieval/embedder';
import { createReranker, createRetriever, needsCorpus, needsEmbedder as retrieverEmbeds, type RetrieverConfig } from '../retrieval/factory';
import { retrievalCacheStats, type RetrievalCacheStats } from '../retrieval/remote/cache';
import { retrieverParams } from '../retrieval/remote/inspect';
import { withExclusion } from '../retrieval/exclude';
import { hasLocalLuceneIndex, onDiskAnnotations } from '../retrieval/lucene/config';
import { LuceneRetriever } from '../retrieval/lucene/retriever';
import type { Embedder, Retriever } from '../retrieval/types';
import { openTracking, stopLocalServer } from '../tracking/index';
import {
  aggregateResults,
  allowedMetrics,
  createPipeline,
  createScorer,
  methodCatalog,
  defaultMetrics,
  metricNames,
  metricsNeedingReader,
  pipelineNames,
  pipelineOptionsSchema,
  readerMetrics,
  requiresEmbedder,
  requiresRetriever,
} from './bindings';
import type { ConfigRegistry, ExperimentConfig } from './config';
import { collectProvenance, collectRunProvenance, provenanceTags, runProvenanceTags, type Provenance } from './provenance';
import type { ExampleResult, MetricAggregate, RunProvenance } from '../run-files';
import type { RunComponents, TrackingFactory } from './runner';
import { checkReaderSpec, createReader, defaultReaderSpec, parseReaderSpec, type ReaderHandle } from './reader';
import { judgeLabels, runPreflight, type PreflightReport } from './preflight';

/**
 * Turns a validated config into the parts of a run: examples, LLM, retriever, reranker, demo
 * pool, pipeline, scorer, and MLflow tracking. One composer serves a whole sweep, so models,
 * corpora and indexes are built once and shared by every run that asks for the same thing
 * (same LLM config → same client, hence one loaded GGUF and one cache connection).
 */
export interface Composer {
  registry: ConfigRegistry;
  components(config: ExperimentConfig): Promise<RunComponents>;
  /** null when MLflow is off for this process (`AMBIQA_TRACKING=off`). */
  tracking(): TrackingFactory | null;
  /** Provenance tags for a run of `config` (git, packages, model checksums). */
  tags(config: ExperimentConfig): Record<string, string>;
  /**
   * Check every endpoint `config` uses before its first model call (preflight.ts), once per
   * distinct set of endpoints in this composer (a sweep's points mostly share one).
   */
  preflight(config: ExperimentConfig): Promise<PreflightReport>;
  aggregate(results: ExampleResult[]): Record<string, MetricAggregate>;
  close(): Promise<void>;
}

export const registry: ConfigRegistry = {
  pipelineNames,
  pipelineOptionsSchema,
  metricNames,
  metricsFor: allowedMetrics,
  readerMetrics,
  defaultReader: defaultReaderSpec,
  checkReader: (spec, checkFiles) => checkReaderSpec(spec, checkFiles),
  defaultMetrics,
  requiresRetriever,
};

export function createComposer(options: { notify?: (message: string) => void } = {}): Composer {
  const notify = options.notify ?? ((m: string) => process.stderr.write(m + '\n'));
  const datasets = new Map<string, Example[]>();
  const llms = new Map<string, Promise<LlmClient>>();
  const corpora = new Map<string, Corpus>();
  const retrievers = new Map<string, Promise<Retriever>>();
  const demoSelectors = new Map<string, DemoSelector>();
  const readers = new Map<string, Promise<ReaderHandle>>();
  let embedder: Embedder | undefined;
  let provenance: Provenance | undefined;
  // What reproduction checks, per config (the data files' checksums are read once per file).
  const runProvenance = (config: ExperimentConfig, retriever?: Record<string, string>): RunProvenance => {
    provenance ??= collectProvenance();
    return collectRunProvenance(config, provenance, { embedder: needsEmbedder(config), ...(retriever ? { retriever } : {}) });
  };
  const preflights = new Map<string, Promise<PreflightReport>>();

  const dataset = (name: ExperimentConfig['dataset']['name'], path: string, opts: Parameters<typeof loadDataset>[2]) => {
    const key = JSON.stringify([name, path, opts]);
    let examples = datasets.get(key);
    if (!examples) {
      examples = loadDataset(name, path, opts);
      datasets.set(key, examples);
    }
    return examples;
  };

  /** The run's questions (loaded once per distinct selection). */
  const examplesOf = (config: ExperimentConfig): Example[] => {
    const ids = config.dataset.ids ? readIds(config.dataset.ids) : undefined;
    return dataset(config.dataset.name, config.dataset.path, {
      split: config.dataset.split,
      ...(config.dataset.questions !== undefined ? { questions: config.dataset.questions } : {}),
      ...(config.dataset.alternatives !== undefined ? { alternatives: config.dataset.alternatives } : {}),
      ...(config.dataset.sample !== undefined ? { sample: config.dataset.sample, seed: config.dataset.seed } : {}),
      ...(config.dataset.limit !== undefined ? { limit: config.dataset.limit } : {}),
      ...(ids ? { ids } : {}),
      ...(config.dataset.maxQuestionChars !== undefined ? { maxQuestionChars: config.dataset.maxQuestionChars } : {}),
    });
  };

  const getEmbedder = () => (embedder ??= new MiniLmEmbedder());

  // One retriever per distinct section (corpus and settings), shared by a sweep's runs and by
  // the preflight, which checks a server-backed one before any model call.
  const getRetriever = (section: NonNullable<ExperimentConfig['retriever']>, withEmbedder?: Embedder): Promise<Retriever> => {
    const { corpus: corpusPath, exclude: _exclude, ...retrieverConfig } = section;
    const key = JSON.stringify([corpusPath ?? null, retrieverConfig]);
    let retriever = retrievers.get(key);
    if (!retriever) {
      const corpus = needsCorpus(retrieverConfig) ? getCorpus(corpusPath) : undefined;
      retriever = createRetriever(retrieverConfig, corpus, withEmbedder ? { embedder: withEmbedder } : {});
      retrievers.set(key, retriever);
      retriever.catch(() => retrievers.delete(key));
    }
    return retriever;
  };

  // One client per distinct section, whichever role it plays: a `judge:` equal to another run's
  // `llm:` shares its client (one loaded GGUF, one cache connection, one slot pool).
  const getLlm = (section: ExperimentConfig['llm'], role: LlmSection): Promise<LlmClient> => {
    const key = JSON.stringify(section);
    let llm = llms.get(key);
    if (!llm) {
      llm = createSectionClient(section, role);
      llms.set(key, llm);
      llm.catch(() => llms.delete(key));
    }
    return llm;
  };

  const getCorpus = (path: string | undefined): Corpus => {
    const key = path ?? '(shared data)';
    let corpus = corpora.get(key);
    if (!corpus) {
      if (path) corpus = loadCorpus(path);
      else {
        // No corpus file given: pool the passages the evaluation data carries (ASQA contexts and
        // knowledge, qa-feedback, HotpotQA paragraphs, FEVER evidence), as shared/data's README
        // recommends, so that every question has thousands of distractors.
        const sources = defaultSources();
        if (sources.length === 0) {
          throw new AmbiqaError('retriever: no corpus given and no passage sources found in the data dir', 'set retriever.corpus to a corpus file (`npx ambiqa corpus build`)');
        }
        corpus = corpusFromPassages(buildCorpus(sources).passages);
      }
      corpora.set(key, corpus);
    }
    return corpus;
  };

  return {
    registry,

    async components(config) {
      const name = config.dataset.name;
      const examples = examplesOf(config);

      const options = config.pipeline.options;
      const nShots = typeof options.nShots === 'number' ? options.nShots : 0;
      const llm = await getLlm(config.llm, 'llm');
      // The judge's client travels beside the run's; the runner routes judgments to it when it
      // wraps the run's model (runModel, src/llm/run-model.ts), the one place a run is wrapped.
      const judge = config.judge ? await getLlm(config.judge, 'judge') : undefined;
      const context: PipelineContext = { llm };
      if (needsEmbedder(config)) context.embedder = getEmbedder();

      // Judge diagnostics label passage-based judgments by the passages' texts: the run's corpus,
      // or, for an engine with its own index (Lucene), the passages the retriever returned.
      let passageText: (id: string) => string | undefined = () => undefined;
      let retrieverSettings: Record<string, string> = {};
      let retrievalCache: (() => RetrievalCacheStats | undefined) | undefined;
      if (config.retriever) {
        const { corpus: corpusPath, exclude = 'none' } = config.retriever;
        const engine = engineConfig(config.retriever);
        const inMemory = needsCorpus(engine);
        const retriever = await getRetriever(config.retriever, context.embedder);
        if (inMemory) {
          const corpus = getCorpus(corpusPath);
          passageText = (id) => corpus.byId(id)?.text;
        } else {
          passageText = (id) => returnedPassage(retriever, id)?.text;
        }
        // Leak control: the same index, seen by each question without its own annotated passages.
        // A local Lucene index reads them from its sidecar (never the corpus); a server's hits are
        // matched against the corpus's annotations, whose ids must then be the server's pids.
        if (exclude === 'own' && !inMemory && hasLocalLuceneIndex(engine)) {
          const own = onDiskAnnotations(engine);
          context.retriever = withExclusion(retriever, own.annotations, exclude, own.where);
        } else {
          context.retriever = withExclusion(retriever, () => getCorpus(corpusPath), exclude);
        }
        retrieverSettings = retrieverParams(retriever);
        // This run's hits and misses: the retriever (and its counts) is shared by a sweep's runs.
        const before = retrievalCacheStats(retriever);
        if (before) {
          const start = { ...before };
          retrievalCache = () => {
            const now = retrievalCacheStats(retriever)!;
            return { hits: now.hits - start.hits, misses: now.misses - start.misses };
          };
        }
      }
      if (config.reranker) context.reranker = createReranker(config.reranker, context.embedder ? { embedder: context.embedder } : {});

      if (nShots > 0) {
        // Demos: a separate pool file when given, else the whole evaluation file, leave-one-out
        // (the selector never returns the question itself).
        const poolPath = config.dataset.demos ?? config.dataset.path;
        const selection = config.dataset.demoSelection ?? 'knn';
        const key = JSON.stringify([name, poolPath, config.dataset.split, selection]);
        let selector = demoSelectors.get(key);
        if (!selector) {
          // A separate FEVER pool sits beside sampled_ids.json, which must not filter it: split `all`.
          const pool = config.dataset.demos
            ? dataset(name, poolPath, name === 'fever' ? { split: 'all' } : {})
            : dataset(name, poolPath, { split: config.dataset.split });
          const demoPool = buildDemoPool(pool);
          selector = selection === 'fixed' ? new FixedDemoSelector(demoPool) : new KnnDemoSelector(demoPool, getEmbedder());
          demoSelectors.set(key, selector);
        }
        context.demos = selector;
      }

      // The D-F1 reader: one per spec for the whole composer (a sweep scores every point with the
      // same reader), never the run's own LLM client.
      const wantsReader = metricsNeedingReader(name, config.metrics).length > 0;
      let reader: ReaderHandle | undefined;
      if (wantsReader && config.reader) {
        let handle = readers.get(config.reader);
        if (!handle) {
          handle = createReader(parseReaderSpec(config.reader));
          readers.set(config.reader, handle);
        }
        reader = await handle;
      }
      const scorer = createScorer(name, config.metrics, reader ? { reader: reader.reader } : {});
      const methods = methodCatalog();
      const price = runPrice(config);
      return {
        examples,
        pipeline: createPipeline(config.pipeline.name, options),
        context,
        ...(judge ? { judge } : {}),
        score: (example, out) => scorer.score(example, out),
        labelJudgments: (example, trace) => labelJudgments(trace, example, methods, passageText),
        aggregate: aggregateResults,
        settings: { ...llmSettings(config.llm), ...(config.judge ? llmSettings(config.judge, 'judge') : {}), ...retrieverSettings, ...scorer.settings },
        ...(retrievalCache ? { retrievalCache } : {}),
        ...(price ? { price } : {}),
        provenance: runProvenance(config, retrieverSettings),
      };
    },

    tracking() {
      if (process.env.AMBIQA_TRACKING === 'off') return null;
      return (dir: string) => openTracking({ bufferDir: dir, notify });
    },

    tags(config) {
      provenance ??= collectProvenance();
      return {
        ...provenanceTags(provenance, {
          embeddedLlm: config.llm.provider === undefined || config.llm.provider === 'embedded',
          embedder: needsEmbedder(config),
        }),
        ...runProvenanceTags(runProvenance(config)),
      };
    },

    aggregate: aggregateResults,

    preflight(config) {
      // groupBy names fields of the questions: one the data lacks is refused before any endpoint is probed.
      if (config.groupBy) checkGroupBy(config.groupBy, examplesOf(config));
      const embeds = needsEmbedder(config);
      // A retriever outside the process (a server) is checked too; an in-memory one is not built here.
      const section = config.retriever;
      const remote = section !== undefined && !needsCorpus(engineConfig(section));
      const key = JSON.stringify([config.llm, config.judge ?? null, config.reader ?? null, config.metrics, judgeLabels(config.pipeline.name), embeds, remote ? section : null]);
      let report = preflights.get(key);
      if (!report) {
        report = runPreflight(config, {
          client: (s) => getLlm(config[s]!, s),
          embeds,
          // A server-backed retriever embeds nothing (no dense part): the embedder is checked below.
          ...(remote ? { retriever: () => getRetriever(section) } : {}),
        });
        preflights.set(key, report);
      }
      return report;
    },

    async close() {
      for (const llm of llms.values()) {
        try {
          const client = await llm;
          client.close();
          await client.backend.dispose?.();
        } catch {
          /* a client that failed to start has nothing to close */
        }
      }
      llms.clear();
      for (const retriever of retrievers.values()) {
        try {
          await (await retriever).close?.();
        } catch {
          /* a retriever that failed to build has nothing to close */
        }
      }
      retrievers.clear();
      for (const reader of readers.values()) {
        try {
          await (await reader).close();
        } catch {
          /* a reader that failed to build has nothing to close */
        }
      }
      readers.clear();
      await stopLocalServer();
    },
  };
}

/** Runs that need the MiniLM embedder: kNN demos, dense retrieval, embedding rerankers, and pipelines whose registry entry says so. */
function needsEmbedder(config: ExperimentConfig): boolean {
  // A pipeline without an nShots option takes no demos (as components() reads it), so no kNN;
  // fixed demos need no embedding either.
  const nShots = config.pipeline.options.nShots;
  if (typeof nShots === 'number' && nShots > 0 && config.dataset.demoSelection !== 'fixed') return true;
  if (config.retriever && retrieverEmbeds(engineConfig(config.retriever))) return true;
  if (config.reranker && config.reranker.type !== 'none') return true;
  return requiresEmbedder(config.pipeline.name);
}

/** A retriever section without the run's fields (`corpus`, `exclude`): the engine's own config. */
function engineConfig(section: NonNullable<ExperimentConfig['retriever']>): RetrieverConfig {
  const { corpus: _corpus, exclude: _exclude, ...config } = section;
  return config as RetrieverConfig;
}

function readIds(path: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`dataset.ids: ${path} is not valid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' && typeof v !== 'number')) {
    throw new AmbiqaError(`dataset.ids: ${path} must be a JSON list of ids`);
  }
  return value.map(String);
}

/**
 * The run's price for the progress line: the LLM's, and "free" only when every model of the run
 * (a separate `judge:` too) is. Each client prices its own calls whatever this says.
 */
function runPrice(config: ExperimentConfig): PriceSource | undefined {
  const price = sectionPrice(config.llm);
  if (!price || !config.judge) return price;
  const judge = sectionPrice(config.judge, 'judge');
  return price.free && !judge?.free ? { ...price, free: false } : price;
}

/** Resolved LLM settings the config left to defaults and that change results or speed. */
const RESOLVED_LLM_PARAMS = ['model', 'modelSha256', 'baseUrl', 'threads', 'sequences', 'prefixReuse', 'batchSamples', 'flashAttention', 'engine', 'cpu'] as const;

/**
 * The LLM settings a config leaves to defaults, as resolved for this run (`llm.threads` depends
 * on the machine's load at start, the model on the setup manifest), so that the run's params say
 * what actually ran. Secret-free by construction (describeLlmConfig never reads a key's value).
 */
export function llmSettings(llm: ExperimentConfig['llm'], section: LlmSection = 'llm'): Record<string, string> {
  if (llm.provider === 'scripted') return {};
  const described = describeLlmConfig(llm, process.env, section);
  const given: Record<string, unknown> = llm;
  const out: Record<string, string> = {};
  for (const key of RESOLVED_LLM_PARAMS) {
    // A catalog name given as `model` is logged as given; its checksum is still added.
    if (described[key] !== undefined && given[key] === undefined) out[`${section}.${key}`] = String(described[key]);
  }
  // Always stated: what a dollar figure of this run was computed from (or that there is none).
  out[`${section}.pricing`] = String(described.pricing);
  return out;
}

/** A passage the run's on-disk retriever returned (judge labels need its text). */
function returnedPassage(retriever: Retriever, id: string) {
  return retriever instanceof LuceneRetriever ? retriever.returned(id) : undefined;
}
