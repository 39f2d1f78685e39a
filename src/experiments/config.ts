import { registerKeyOfConfig } from '../common/secrets';
import { existsSync } from 'node:fs';
import { basename, extname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import YAML from 'yaml';
import { dataDir, projectRoot } from '../config/paths';
import { asqaQuestionKinds, datasetNames, defaultDatasetFiles } from '../datasets/index';
import type { DatasetName } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { LlmConfig, LlmConfigInput } from '../llm/config';
import type { BuiltinPipelineName, PipelineOptionsInput, RegisteredPipelineOptions } from '../pipelines/registry';
import type { RerankerConfig, RerankerConfigInput, RetrieverConfig, RetrieverConfigInput } from '../retrieval/factory';
import type { PipelineName } from '../trace/types';
import { readYamlMapping } from '../common/yaml';
import { formatIssues } from '../common/zod-issues';
import { applyOverrides, type Override } from './overrides';
import { formatShard, parseShard, type Shard } from './shard';

/**
 * An experiment config: what to run (dataset, pipeline and its options, LLM, retriever), what to
 * measure, where to log, and, for `ambiqa sweep`, a grid over any of those fields. It is checked
 * in two stages, both before any model is loaded or called:
 *   1. the shape of the file (this module's schema), and
 *   2. each part against the schema of the module that owns it (the pipeline's options, the LLM
 *      and retriever configs), given by a `ConfigRegistry`.
 * Every message names the file and the dotted field, and lists allowed values where there is a
 * fixed set.
 */

/** What the modules that own the parts of a config tell the config checker. */
export interface ConfigRegistry {
  pipelineNames: readonly string[];
  /** The zod schema of a pipeline's options (with defaults); undefined when it takes none. */
  pipelineOptionsSchema(name: string): z.ZodType | undefined;
  /** Checks `llm:` and `judge:` for providers other than the test-only `scripted` one. */
  llmConfigSchema?: z.ZodType;
  /**
   * Checks that the model files an `llm:` or `judge:` section names exist (a catalog model that
   * is not fetched, a missing .gguf); returns the problem (naming `<section>.model`), or undefined.
   */
  checkLlmFiles?(config: unknown, section: 'llm' | 'judge'): string | undefined;
  /** Whether a price is known for a section's model (its `pricing`, the embedded model, the built-in table). */
  priceKnown?(config: unknown): boolean;
  /** Checks `retriever:` (less `corpus`, which the runner resolves, and `exclude`, checked here). */
  retrieverConfigSchema?: z.ZodType;
  /** Checks `reranker:`. */
  rerankerConfigSchema?: z.ZodType;
  metricNames: readonly string[];
  /** Metrics that make sense for a dataset (default: all of `metricNames`). */
  metricsFor?(dataset: DatasetName): readonly string[];
  /** Metrics that need `reader:` (D-F1 and DR). */
  readerMetrics?: ReadonlySet<string>;
  /** The reader used when `reader:` is absent, for a run on this LLM provider. */
  defaultReader?(llmProvider: unknown): string;
  /** Checks a reader spec without loading it (files too, with `checkFiles`); returns the problem, or undefined. */
  checkReader?(spec: string, checkFiles: boolean): string | undefined;
  /** Metrics computed when the config names none. */
  defaultMetrics(dataset: DatasetName): string[];
  /** Pipelines that cannot run without `retriever:`. */
  requiresRetriever?(pipeline: string): boolean;
}

const runNamePattern = /^[A-Za-z0-9][A-Za-z0-9._=,+-]*$/;

const datasetSchema = z.strictObject({
  name: z.enum(datasetNames),
  /** Relative paths are resolved against the data dir (AMBIQA_DATA_DIR, default ../shared/data). */
  path: z.string().min(1).optional(),
  split: z.string().min(1).default('dev'),
  /** Evaluate a seeded random sample of this many examples (all when absent). */
  sample: z.int().min(1).optional(),
  seed: z.int().default(0),
  /** Keep only the first N examples (after sampling); `--limit` sets it. */
  limit: z.int().min(1).optional(),
  /** A file of few-shot demos in the same format (default: leave-one-out on the evaluation file). */
  demos: z.string().min(1).optional(),
  /**
   * How few-shot demos are picked from the pool: `knn` (METHODS.md: per question, nearest
   * neighbours by question embedding; the default) or `fixed` (the pool's first nShots demos in
   * file order for every question, as the CoT and Verify-and-Edit papers' hand-written exemplars
   * were; the leave-one-out and answer-overlap filters still apply). With `fixed` the few-shot
   * prefix of a pipeline's prompts is the same for every question, so the embedded model reads it
   * once per process rather than once per question.
   */
  demoSelection: z.enum(['knn', 'fixed']).optional(),
  /** A JSON list of example ids to keep (e.g. the 1,000 FEVER claims of the VE paper), applied before sampling. */
  ids: z.string().min(1).optional(),
  /**
   * ASQA only: `ambiguous` (the published questions, the default), `disambiguated` (each DQ as a
   * question of its own) or `mixed` (each AQ followed by one of its DQs): an unambiguous control.
   */
  questions: z.enum(asqaQuestionKinds).optional(),
  /**
   * Refuse the run, before any model call, when a selected question is longer than this many
   * characters (default 10,000; src/datasets/index.ts). Not part of what a run's results depend on.
   */
  maxQuestionChars: z.int().min(1).optional(),
});

/** Test-only provider: replies from the config, optional latency, and a log of every provider call. */
export const scriptedLlmSchema = z.strictObject({
  provider: z.literal('scripted'),
  /** Reply for any prompt; `{{n}}`-free text. */
  reply: z.string().default('scripted answer'),
  /** Replies by call purpose (e.g. `closed-book.answer`), taking precedence over `reply`. */
  replies: z.record(z.string(), z.string()).default({}),
  /** Replies in turn: sample i of a call gets `cycle[(hash(prompt) + i) % length]`. */
  cycle: z.array(z.string()).min(1).optional(),
  /** Simulated latency per provider call, in milliseconds. */
  latencyMs: z.int().min(0).default(0),
  /** Append one JSON line per provider call (start and end) to this file. */
  callLog: z.string().optional(),
  /** Cache file for this provider (default: the project's LLM cache). */
  cache: z.string().optional(),
  model: z.string().default('scripted-model'),
});

const trackingSchema = z.strictObject({
  /** MLflow experiment name. */
  experiment: z.string().min(1).default('ambiqa'),
  /** false: write the run dir only. */
  enabled: z.boolean().default(true),
  /** false: do not send each question's trace to MLflow Tracing (traces.jsonl is still written and uploaded). */
  traces: z.boolean().default(true),
  /** Extra tags for the run. */
  tags: z.record(z.string(), z.string()).default({}),
});

function typeShorthand(value: unknown): unknown {
  return typeof value === 'string' ? { type: value } : value;
}

export const experimentFileSchema = z.strictObject({
  name: z.string().regex(runNamePattern, 'must be letters, digits, dot, dash or underscore').optional(),
  description: z.string().optional(),
  dataset: datasetSchema,
  pipeline: z.strictObject({
    name: z.string().min(1),
    options: z.record(z.string(), z.unknown()).default({}),
  }),
  llm: z.record(z.string(), z.unknown()).default({}),
  /**
   * The model of every yes/no judgment (`LanguageModel.judge`: ToC's verification, Diva's and
   * COMBO's graded judges, …), with the fields of `llm:`. Absent: the run's LLM judges. A
   * separate judge has its own client, cache keys and usage, and its own params (`judge.*`).
   * `judge: null` (e.g. `--set judge=null` on a config that ships a judge) is the same as absent.
   */
  judge: z.record(z.string(), z.unknown()).nullish(),
  /** A mapping, or a bare type name (`retriever: bm25` means `{type: bm25}`). */
  retriever: z.preprocess(typeShorthand, z.record(z.string(), z.unknown())).optional(),
  reranker: z.preprocess(typeShorthand, z.record(z.string(), z.unknown())).optional(),
  metrics: z.array(z.string().min(1)).min(1).optional(),
  /**
   * The D-F1/DR reader, fixed independently of the run's model (src/experiments/reader.ts):
   * `embedded` (default), `embedded:<file.gguf>`, `openai:<model>`, `qa-onnx:<folder>`, `none`.
   */
  reader: z.string().min(1).optional(),
  tracking: trackingSchema.default({ experiment: 'ambiqa', enabled: true, traces: true, tags: {} }),
  /** Examples answered at once. LLM concurrency is the LLM layer's own limit. */
  concurrency: z.int().min(1).max(256).default(2),
  /**
   * `ambiqa sweep`: dotted field path → values; the grid is their Cartesian product. The key
   * `reference` is not an axis: it names the point every other point is compared with, paired,
   * in the summary, the report and MLflow (a point label such as `pruneThreshold=0.5`, a value of
   * the only axis, or a mapping axis → value; default the first point).
   */
  sweep: z
    .record(z.string(), z.unknown())
    .superRefine((sweep, ctx) => {
      for (const [key, values] of Object.entries(sweep)) {
        if (key === 'reference') continue;
        if (!Array.isArray(values) || values.length === 0) ctx.addIssue({ code: 'custom', path: [key], message: 'must be a non-empty list of values' });
      }
    })
    .optional(),
  /** Set by `--shard i/N`. */
  shard: z.string().optional(),
});

export type ExperimentFile = z.infer<typeof experimentFileSchema>;

type Resolved<T, K extends keyof T, R> = Omit<T, K> & R;

/**
 * A config after overrides, defaults and path resolution: what a run records in `config.yaml`.
 * Derived from the schemas: the file's own schema, with each part replaced by the output of the
 * schema of the module that owns it (LLM, retriever, reranker).
 */
export type ExperimentConfig = Resolved<
  ExperimentFile,
  'name' | 'dataset' | 'pipeline' | 'llm' | 'judge' | 'retriever' | 'reranker' | 'metrics',
  {
    name: string;
    /** `path` is absolute once resolved (as are `demos` and `ids`). */
    dataset: Resolved<ExperimentFile['dataset'], 'path', { path: string }>;
    pipeline: { name: PipelineName; options: Record<string, unknown> };
    llm: LlmConfig | ScriptedLlmConfig;
    /** Absent: judgments go to `llm`. */
    judge?: LlmConfig | ScriptedLlmConfig;
    /** `exclude`: `none`, or `own` (a question's own annotated passages never reach its results). */
    retriever?: RetrieverConfig & { corpus?: string; exclude: 'none' | 'own' };
    reranker?: RerankerConfig;
    metrics: string[];
  }
>;

export type ScriptedLlmConfig = z.output<typeof scriptedLlmSchema>;

/** The `pipeline:` section a user writes: the name picks the options type. */
type PipelineInputs = { [N in BuiltinPipelineName]: PipelineOptionsInput<N> } & RegisteredPipelineOptions;
export type PipelineSectionInput = {
  [N in keyof PipelineInputs]: { name: N; options?: PipelineInputs[N] };
}[keyof PipelineInputs];

/**
 * What a user writes (a YAML file, or an object in a notebook): `z.input` of the schemas, so
 * fields with defaults are optional and a notebook gets completion and type errors per pipeline.
 */
export type ExperimentInput = Resolved<
  z.input<typeof experimentFileSchema>,
  'pipeline' | 'llm' | 'judge' | 'retriever' | 'reranker',
  {
    pipeline: PipelineSectionInput;
    llm?: LlmConfigInput | z.input<typeof scriptedLlmSchema>;
    judge?: LlmConfigInput | z.input<typeof scriptedLlmSchema>;
    retriever?: RetrieverConfigInput | (Exclude<RetrieverConfigInput, string> & { corpus?: string; exclude?: 'none' | 'own' });
    reranker?: RerankerConfigInput;
  }
>;

export interface LoadOptions {
  overrides?: Override[];
  /** `--name`: replaces the config's name. */
  name?: string;
  /** `--limit N`. */
  limit?: number;
  /** `--shard i/N`. */
  shard?: string;
  /** Skip file-existence checks (tests of pure validation). */
  checkFiles?: boolean;
}

/** Read a YAML config, apply CLI overrides, validate every part and resolve paths. */
export function loadExperimentConfig(file: string, registry: ConfigRegistry, options: LoadOptions = {}): ExperimentConfig {
  const raw = readExperimentFile(file);
  const defaultName = basename(file, extname(file));
  return resolveExperimentConfig(raw, registry, { ...options, source: file, defaultName });
}

/** The raw mapping of an experiment (or sweep) YAML file, before validation. */
export function readExperimentFile(file: string): Record<string, unknown> {
  return readYamlMapping(file, {
    what: 'dataset:, pipeline:, llm: …',
    missingHint: 'give the path of a YAML file, e.g. experiments/toc-asqa.yaml',
  });
}

/** Validate an already-parsed config object (the sweep uses this for each grid point). */
export function resolveExperimentConfig(
  raw: Record<string, unknown>,
  registry: ConfigRegistry,
  options: LoadOptions & { source: string; defaultName?: string },
): ExperimentConfig {
  const source = options.source;
  let input: Record<string, unknown> = structuredClone(raw);
  if (options.overrides?.length) input = applyOverrides(input, options.overrides, source);
  if (options.limit !== undefined) input = applyOverrides(input, [{ path: ['dataset', 'limit'], value: options.limit, text: `--limit ${options.limit}` }], source);
  if (options.shard !== undefined) input = { ...input, shard: options.shard };
  if (options.name !== undefined) input = { ...input, name: options.name };

  const parsed = experimentFileSchema.safeParse(input);
  if (!parsed.success) fail(source, formatIssues(parsed.error.issues, { schema: experimentFileSchema, input }));
  const file = parsed.data;

  const problems: string[] = [];

  if (!registry.pipelineNames.includes(file.pipeline.name)) {
    problems.push(`pipeline.name: unknown pipeline ${JSON.stringify(file.pipeline.name)} (allowed: ${registry.pipelineNames.join(', ')})`);
  }
  let pipelineOptions: Record<string, unknown> = file.pipeline.options;
  const optionsSchema = problems.length === 0 ? registry.pipelineOptionsSchema(file.pipeline.name) : undefined;
  if (optionsSchema) {
    const r = optionsSchema.safeParse(file.pipeline.options);
    if (r.success) pipelineOptions = r.data as Record<string, unknown>;
    else problems.push(...formatIssues(r.error.issues, { prefix: ['pipeline', 'options'], schema: optionsSchema, input: file.pipeline.options }));
  }

  const checkLlmSection = (section: 'llm' | 'judge', given: Record<string, unknown>): ExperimentConfig['llm'] => {
    let checked = given as ExperimentConfig['llm'];
    const before = problems.length;
    if (checked.provider === 'scripted') {
      const r = scriptedLlmSchema.safeParse(checked);
      if (r.success) checked = r.data;
      else problems.push(...formatIssues(r.error.issues, { prefix: [section], schema: scriptedLlmSchema, input: checked }));
    } else if (registry.llmConfigSchema) {
      const r = registry.llmConfigSchema.safeParse(checked);
      if (r.success) checked = r.data as LlmConfig;
      else problems.push(...formatIssues(r.error.issues, { prefix: [section], schema: registry.llmConfigSchema, input: checked }));
    }
    // Only a well-formed section's files are looked for (and never in pure validation tests).
    if (problems.length === before && options.checkFiles !== false && checked.provider !== 'scripted') {
      const problem = registry.checkLlmFiles?.(checked, section);
      if (problem) problems.push(problem);
    }
    return checked;
  };
  const llm = checkLlmSection('llm', file.llm);
  const judge = file.judge ? checkLlmSection('judge', file.judge) : undefined;
  // One cap per run, on what llm: and judge: spend together (src/llm/budget.ts): a second cap on
  // the judge alone would stop the run just as the first does, so it is refused, not half-honoured.
  if (file.judge && 'maxCostUsd' in file.judge) {
    problems.push('judge.maxCostUsd: a run has one cost cap, on what llm: and judge: spend together; set llm.maxCostUsd (or --max-cost) instead');
  }
  // A cap counts the judge's calls only when they have a price; one it cannot count is refused.
  if (judge && judge.provider !== 'scripted' && (llm as { maxCostUsd?: number }).maxCostUsd !== undefined && registry.priceKnown?.(judge) === false) {
    const model = (judge as { model?: string }).model ?? process.env.OPENAI_MODEL ?? '(unset)';
    problems.push(
      `judge.pricing: the run has a cost cap (llm.maxCostUsd / --max-cost), but no price is known for the judge's model "${model}", so its calls could not count; add judge.pricing: {prompt: <USD per M tokens>, completion: <USD per M tokens>}`,
    );
  }

  let retriever: ExperimentConfig['retriever'];
  if (file.retriever) {
    const { corpus, exclude = 'none', ...rest } = file.retriever;
    if (corpus !== undefined && typeof corpus !== 'string') problems.push(`retriever.corpus: expected a file path (got ${JSON.stringify(corpus)})`);
    if (exclude !== 'none' && exclude !== 'own') {
      problems.push(`retriever.exclude: must be "none" or "own" (a question's own annotated passages never reach its results); got ${JSON.stringify(exclude)}`);
    }
    let checked = rest as RetrieverConfig;
    if (registry.retrieverConfigSchema) {
      const r = registry.retrieverConfigSchema.safeParse(rest);
      if (r.success) checked = r.data as RetrieverConfig;
      else problems.push(...formatIssues(r.error.issues, { prefix: ['retriever'], schema: registry.retrieverConfigSchema, input: rest }));
    }
    retriever = { ...checked, exclude: exclude === 'own' ? 'own' : 'none', ...(typeof corpus === 'string' ? { corpus: resolveProjectPath(corpus) } : {}) };
  }

  if (!file.retriever && problems.length === 0 && registry.requiresRetriever?.(file.pipeline.name)) {
    problems.push(`retriever: pipeline ${file.pipeline.name} needs a retriever (e.g. \`retriever: bm25\`; types: bm25, dense, hybrid, multi-query)`);
  }

  let reranker = file.reranker as RerankerConfig | undefined;
  if (reranker && registry.rerankerConfigSchema) {
    const r = registry.rerankerConfigSchema.safeParse(reranker);
    if (r.success) reranker = r.data as RerankerConfig;
    else problems.push(...formatIssues(r.error.issues, { prefix: ['reranker'], schema: registry.rerankerConfigSchema, input: reranker }));
  }

  if (file.dataset.questions !== undefined && file.dataset.questions !== 'ambiguous' && file.dataset.name !== 'asqa') {
    problems.push(`dataset.questions: ${file.dataset.questions} applies to dataset asqa only (this config's dataset is ${file.dataset.name})`);
  }

  const readerMetrics = registry.readerMetrics ?? new Set<string>();
  const readerSpec = file.reader ?? registry.defaultReader?.(file.llm.provider);
  // `reader: none` turns the reader metrics off where they are only defaults.
  const metrics = file.metrics ?? registry.defaultMetrics(file.dataset.name).filter((m) => readerSpec !== 'none' || !readerMetrics.has(m));
  const allowedMetrics = registry.metricsFor?.(file.dataset.name) ?? registry.metricNames;
  file.metrics?.forEach((m, i) => {
    if (!allowedMetrics.includes(m)) {
      const known = registry.metricNames.includes(m);
      problems.push(
        `metrics.${i}: ${known ? `metric ${JSON.stringify(m)} does not apply to dataset ${file.dataset.name}` : `unknown metric ${JSON.stringify(m)}`} (allowed: ${allowedMetrics.join(', ')})`,
      );
    }
  });
  const needReader = metrics.filter((m) => readerMetrics.has(m));
  if (needReader.length > 0 && (readerSpec === undefined || readerSpec === 'none')) {
    problems.push(`reader: metrics ${needReader.join(', ')} need a reader${readerSpec === 'none' ? ', but reader is none' : ''} (e.g. \`reader: embedded\` or \`reader: qa-onnx:<folder>\`)`);
  } else if (readerSpec !== undefined && (file.reader !== undefined || needReader.length > 0)) {
    const problem = registry.checkReader?.(readerSpec, options.checkFiles !== false);
    if (problem) problems.push(problem);
  }
  const reader = needReader.length > 0 ? readerSpec : file.reader;

  let shard: Shard | undefined;
  if (file.shard !== undefined) {
    try {
      shard = parseShard(file.shard);
    } catch (error) {
      problems.push(`shard: ${(error as Error).message}`);
    }
  }

  if (file.sweep) {
    for (const key of Object.keys(file.sweep)) {
      if (key === 'reference') continue;
      if (key.startsWith('sweep.') || key === 'sweep' || key === 'shard' || key === 'name') {
        problems.push(`sweep.${key}: cannot sweep over '${key.split('.')[0]}'`);
      }
    }
  }

  const datasetPath = resolveDataPath(file.dataset.path ?? defaultDatasetFiles[file.dataset.name]);
  const demosPath = file.dataset.demos !== undefined ? resolveDataPath(file.dataset.demos) : undefined;
  const idsPath = file.dataset.ids !== undefined ? resolveDataPath(file.dataset.ids) : undefined;
  if (options.checkFiles !== false) {
    if (!existsSync(datasetPath)) {
      problems.push(
        `dataset.path: file not found: ${datasetPath}` +
          // The user named no file, so say where the default came from and the three ways out.
          (file.dataset.path === undefined
            ? ` (the default for dataset '${file.dataset.name}' in the data folder ${dataDir()}: put the official file there, ` +
              'point AMBIQA_DATA_DIR at a folder that has it, or set dataset.path)'
            : ''),
      );
    }
    if (demosPath && !existsSync(demosPath)) problems.push(`dataset.demos: file not found: ${demosPath}`);
    if (idsPath && !existsSync(idsPath)) problems.push(`dataset.ids: file not found: ${idsPath}`);
    if (retriever?.corpus && !existsSync(retriever.corpus)) problems.push(`retriever.corpus: file not found: ${retriever.corpus}`);
  }

  if (problems.length > 0) fail(source, problems);

  const name = file.name ?? options.defaultName ?? file.pipeline.name;
  if (!runNamePattern.test(name)) fail(source, [`name: ${JSON.stringify(name)} must be letters, digits, dot, dash or underscore`]);

  return {
    name: shard ? `${name}.shard-${shard.index}of${shard.count}` : name,
    ...(file.description !== undefined ? { description: file.description } : {}),
    dataset: {
      name: file.dataset.name,
      path: datasetPath,
      split: file.dataset.split,
      ...(file.dataset.sample !== undefined ? { sample: file.dataset.sample } : {}),
      seed: file.dataset.seed,
      ...(file.dataset.limit !== undefined ? { limit: file.dataset.limit } : {}),
      ...(demosPath !== undefined ? { demos: demosPath } : {}),
      ...(idsPath !== undefined ? { ids: idsPath } : {}),
      ...(file.dataset.questions !== undefined ? { questions: file.dataset.questions } : {}),
      ...(file.dataset.demoSelection !== undefined ? { demoSelection: file.dataset.demoSelection } : {}),
      ...(file.dataset.maxQuestionChars !== undefined ? { maxQuestionChars: file.dataset.maxQuestionChars } : {}),
    },
    pipeline: { name: file.pipeline.name as PipelineName, options: pipelineOptions },
    llm,
    ...(judge ? { judge } : {}),
    ...(retriever ? { retriever } : {}),
    ...(reranker ? { reranker } : {}),
    metrics,
    ...(reader !== undefined ? { reader } : {}),
    tracking: file.tracking,
    concurrency: file.concurrency,
    ...(file.sweep ? { sweep: file.sweep } : {}),
    ...(shard ? { shard: formatShard(shard) } : {}),
  };
}

function fail(source: string, problems: string[]): never {
  const lines = problems.map((p) => `${source}: ${p}`);
  throw new AmbiqaError(
    lines.length === 1 ? lines[0] : `invalid experiment config:\n  ${lines.join('\n  ')}`,
    `fix the field${problems.length === 1 ? '' : 's'} above in the config or in the --set overrides`,
  );
}

/** Evaluation files: absolute, `./`-relative to the working directory, or relative to the data dir. */
export function resolveDataPath(path: string): string {
  if (isAbsolute(path)) return path;
  if (path.startsWith('./') || path.startsWith('../')) return resolve(path);
  return join(dataDir(), path);
}

/** Project files (corpora): absolute, or relative to the working directory, else the project root. */
export function resolveProjectPath(path: string): string {
  if (isAbsolute(path)) return path;
  const fromCwd = resolve(path);
  return existsSync(fromCwd) ? fromCwd : join(projectRoot, path);
}

/** The config as YAML, with a header, for `config.yaml` in a run dir. */
export function configToYaml(config: ExperimentConfig, header?: string): string {
  const body = YAML.stringify(config, { lineWidth: 0 });
  return header ? `# ${header}\n${body}` : body;
}

/** Parse a run dir's `config.yaml` back (already resolved; not re-validated against registries). */
export function readResolvedConfig(path: string): ExperimentConfig {
  if (!existsSync(path)) throw new AmbiqaError(`not a run directory: ${path} is missing`, 'pass a folder written by `ambiqa run`');
  const config = readYamlMapping(path) as unknown as ExperimentConfig;
  registerKeyOfConfig(config);
  return config;
}

/**
 * The part of a config that decides the results: two runs (or two shards) with equal
 * fingerprints answer the same questions the same way. Names, concurrency, tracking, shard and
 * where files sit on a particular machine do not count.
 */
export function configFingerprint(config: ExperimentConfig): Record<string, unknown> {
  const { name: _n, description: _d, concurrency: _c, tracking: _t, shard: _s, sweep: _w, ...rest } = config;
  const clone = structuredClone(rest) as Record<string, unknown> & ExperimentConfig;
  // A size limit refuses a run or lets it go; it never changes an answer.
  const { maxQuestionChars: _q, ...dataset } = clone.dataset;
  clone.dataset = {
    ...dataset,
    path: basename(clone.dataset.path),
    ...(clone.dataset.demos ? { demos: basename(clone.dataset.demos) } : {}),
    ...(clone.dataset.ids ? { ids: basename(clone.dataset.ids) } : {}),
  };
  if (clone.retriever?.corpus) clone.retriever = { ...clone.retriever, corpus: basename(clone.retriever.corpus) };
  // Where the cache and call log sit does not change answers; which judge answers does. A price
  // and a spending cap change what a run costs, never its answers: a run stopped by its cap
  // resumes with a higher one. A prompt size limit refuses calls, never changes one.
  for (const section of ['llm', 'judge'] as const) {
    const value = (clone as Record<string, unknown>)[section];
    if (value && typeof value === 'object') {
      const { callLog: _l, cache: _k, pricing: _p, maxCostUsd: _m, maxPromptChars: _x, ...rest } = value as Record<string, unknown>;
      (clone as Record<string, unknown>)[section] = rest;
    }
  }
  return clone;
}

/** Dotted paths whose values differ between two fingerprints. */
export function diffConfigs(a: unknown, b: unknown, prefix = ''): string[] {
  if (a === b) return [];
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].sort().flatMap((k) =>
      diffConfigs((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], prefix ? `${prefix}.${k}` : k),
    );
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [prefix || '(config)'];
}
