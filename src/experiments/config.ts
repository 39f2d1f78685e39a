import { registerKeyOfConfig } from '../common/secrets';
import { existsSync } from 'node:fs';
import { basename, extname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import YAML from 'yaml';
import { dataDir, projectRoot } from '../config/paths';
import { asqaQuestionKinds, datasetNames, defaultAlternativesPath, defaultDatasetFiles } from '../datasets/index';
import type { DatasetName } from '../datasets/types';
import { AmbiqaError } from '../errors';
import { decideMetrics } from '../metrics/plan';
import { listedLlmProviders, llmProviderOf, llmProviderSchemas, type LlmSectionConfig, type LlmSectionInput } from '../llm/provider-registry';
import type { BuiltinPipelineName, PipelineOptionsInput, RegisteredPipelineOptions } from '../pipelines/registry';
import { rerankerConfigSchema, retrieverSectionSchema as retrieverSectionSchemaOf, type RerankerConfigInput, type RetrieverConfigInput } from '../retrieval/factory';
import type { PipelineName } from '../trace/types';
import { readYamlMapping } from '../common/yaml';
import { formatIssues } from '../common/zod-issues';
import { applyOverrides, type Override } from './overrides';
import { formatShard, parseShard } from './shard';
import { RUN_FORMAT } from '../run-files';

/**
 * An experiment config: what to run (dataset, pipeline and its options, LLM, retriever), what to
 * measure, where to log, and, for `ambiqa sweep`, a grid over any of those fields. It is one zod
 * schema, built when a config is checked from the registries that own its parts: `pipeline:` is
 * a union keyed on the pipeline's name (each registered pipeline's options schema, read from the
 * live registry, so a pipeline registered from a notebook is checked like a built-in one),
 * `llm:` and `judge:` unions keyed on `provider` (src/llm/provider-registry.ts), `retriever:` and
 * `reranker:` the retrieval module's schemas; rules between fields are refinements of it. All of
 * it runs before any model is loaded or called. Every message names the file and the dotted
 * field, and lists allowed values where there is a fixed set.
 */

/** What the modules that own the parts of a config tell the config checker, beside their schemas. */
export interface ConfigRegistry {
  /** Every pipeline a config may name (a live list: registration appends to it). */
  pipelineNames: readonly string[];
  /** The zod schema of a pipeline's options (with defaults); undefined when it takes none. */
  pipelineOptionsSchema(name: string): z.ZodType | undefined;
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
const RUN_NAME_RULE = 'must be letters, digits, dot, dash or underscore';

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
  /**
   * Adversarial HotpotQA: the JSONL of alternative answers (`qas_id`, `answer`) that the metrics
   * `em_alt` and `f1_alt` count as correct (Verify-and-Edit's code does). Default, when one of
   * those metrics is asked for: `alt_answers.jsonl` beside the dataset file.
   */
  alternatives: z.string().min(1).optional(),
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

/** ` (got 3)`: what a field held, for messages the schemas write themselves. */
function got(value: unknown): string {
  return value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
}

/** The `pipeline:` and `llm:` unions refuse an unknown key with the allowed values, as an enum would. */
function keyOf(input: unknown, key: string): unknown {
  return input !== null && typeof input === 'object' ? (input as Record<string, unknown>)[key] : undefined;
}

/**
 * `pipeline:`: one branch per registered pipeline, `{name: <its name>, options: <its options>}`,
 * built from the registry when a config is checked.
 */
function pipelineSectionSchema(registry: ConfigRegistry): z.ZodType<{ name: PipelineName; options: Record<string, unknown> }> {
  const names = [...registry.pipelineNames];
  const branches = names.map((name) =>
    z.strictObject({
      name: z.literal(name),
      options: (registry.pipelineOptionsSchema(name) ?? z.record(z.string(), z.unknown())).prefault({}),
    }),
  );
  const unknownName = (input: unknown): string => {
    const name = keyOf(input, 'name');
    if (name === undefined) return 'is required (expected string)';
    if (typeof name !== 'string') return `expected string${got(name)}`;
    if (name === '') return 'must not be empty';
    return `unknown pipeline ${JSON.stringify(name)} (allowed: ${names.join(', ')})`;
  };
  if (branches.length === 0) return z.never({ error: (issue) => unknownName(issue.input) });
  // An options schema outputs a mapping; its own type is the pipeline's (PipelineOptions<N>).
  return z.discriminatedUnion('name', branches as [(typeof branches)[number], ...typeof branches], {
    error: (issue) => (issue.code === 'invalid_union' ? unknownName(issue.input) : undefined),
  }) as unknown as z.ZodType<{ name: PipelineName; options: Record<string, unknown> }>;
}

const llmUnion = z.discriminatedUnion('provider', llmProviderSchemas, {
  error: (issue) =>
    issue.code === 'invalid_union' ? `must be one of ${listedLlmProviders.map((n) => JSON.stringify(n)).join(', ')}${got(keyOf(issue.input, 'provider'))}` : undefined,
});

/**
 * `llm:` or `judge:`: one provider's fields (the embedded model's when `provider` is left out);
 * with `checkFiles`, the model files it names must be there.
 */
function llmSectionSchema(checkFiles: boolean): z.ZodType<LlmSectionConfig, unknown> {
  if (!checkFiles) return llmUnion;
  return llmUnion.superRefine(
    (config, ctx) => {
      const problem = llmProviderOf(config).checkFiles?.(config);
      if (problem) ctx.addIssue({ code: 'custom', path: [problem.field], message: problem.message });
    },
    // Only a well-formed section's files are looked for.
    { when: (payload) => payload.issues.length === 0 },
  );
}

/**
 * `retriever:` — a retriever of src/retrieval/factory.ts, plus where its corpus is and what it
 * hides from each question. A mapping, or a bare type name (`retriever: bm25` means `{type: bm25}`).
 */
const retrieverSectionFields = {
  /** A corpus file (relative: to the working directory, else the project); absent: the data's own passages. */
  corpus: z.string({ error: (issue) => `expected a file path${got(issue.input)}` }).optional(),
  /** `own`: a question's own annotated passages never reach its results. */
  exclude: z
    .enum(['none', 'own'], {
      error: (issue) => `must be "none" or "own" (a question's own annotated passages never reach its results); got ${JSON.stringify(issue.input)}`,
    })
    .default('none'),
};
// Strict like every other section: `retriever.exlcude` is refused with the allowed fields named.
const retrieverSectionSchema = retrieverSectionSchemaOf(retrieverSectionFields);
const savedRetrieverSectionSchema = retrieverSectionSchemaOf(retrieverSectionFields, { lenient: true });

/**
 * `ambiqa sweep`: dotted field path → values; the grid is their Cartesian product. The key
 * `reference` is not an axis: it names the point every other point is compared with, paired, in
 * the summary, the report and MLflow (a point label such as `pruneThreshold=0.5`, a value of the
 * only axis, or a mapping axis → value; default the first point).
 */
const sweepSchema = z.record(z.string(), z.unknown()).superRefine((sweep, ctx) => {
  for (const [key, values] of Object.entries(sweep)) {
    if (key === 'reference') continue;
    if (!Array.isArray(values) || values.length === 0) ctx.addIssue({ code: 'custom', path: [key], message: 'must be a non-empty list of values' });
    if (key.startsWith('sweep.') || key === 'sweep' || key === 'shard' || key === 'name') {
      ctx.addIssue({ code: 'custom', path: [key], message: `cannot sweep over '${key.split('.')[0]}'` });
    }
  }
});

/** The fields whose schemas need no registry: what every config file and every resolved config share. */
const commonFields = {
  description: z.string().optional(),
  /** The D-F1/DR reader, fixed independently of the run's model (src/experiments/reader.ts): `embedded` (default), `embedded:<file.gguf>`, `openai:<model>`, `qa-onnx:<folder>`, `none`. */
  reader: z.string().min(1).optional(),
  tracking: trackingSchema.prefault({}),
  /** Examples answered at once. LLM concurrency is the LLM layer's own limit. */
  concurrency: z.int().min(1).max(256).default(2),
  sweep: sweepSchema.optional(),
  /**
   * Answers per question (`--trials k`), each with its own sample indexes so a sampled method's
   * spread across trials is measured (issue 46); 1: each question answered once.
   */
  trials: z.int().min(1).max(100).default(1),
  /**
   * Fields to report metrics by (e.g. `[kind]` under `questions: mixed`, or a dataset field):
   * per-group metrics with CIs, per-group paired deltas in `compare` (issue 46).
   */
  groupBy: z.array(z.string().min(1)).min(1).optional(),
};

/** A strict object, or (`lenient`) one that drops the fields it does not know. */
function objectOf<S extends z.core.$ZodLooseShape>(shape: S, lenient: boolean) {
  return lenient ? z.object(shape) : z.strictObject(shape);
}

/**
 * A config after overrides, defaults and path resolution: what a run records in `config.yaml`
 * (with the format it was written in). `ExperimentConfig` is its output.
 */
function resolvedConfigObject<L extends z.ZodType<LlmSectionConfig, unknown>>(llm: L, lenient: boolean) {
  return objectOf(
    {
      name: z.string().regex(runNamePattern, RUN_NAME_RULE),
      description: commonFields.description,
      /** `path` is absolute once resolved (as are `demos` and `ids`). */
      dataset: objectOf({ ...datasetSchema.shape, path: z.string().min(1) }, lenient),
      pipeline: objectOf({ name: z.string().min(1), options: z.record(z.string(), z.unknown()) }, lenient),
      llm,
      /** Absent: judgments go to `llm`. */
      judge: llm.optional(),
      /** `corpus` is absolute once resolved. */
      retriever: (lenient ? savedRetrieverSectionSchema : retrieverSectionSchema).optional(),
      reranker: rerankerConfigSchema.optional(),
      metrics: z.array(z.string().min(1)),
      reader: commonFields.reader,
      tracking: objectOf(trackingSchema.shape, lenient).prefault({}),
      concurrency: commonFields.concurrency,
      sweep: commonFields.sweep,
      /** Absent: 1 (a config that does not ask for trials records none, as before they existed). */
      trials: z.int().min(2).max(100).optional(),
      groupBy: commonFields.groupBy,
      /** `i/N` of a shard; the run's name ends in `.shard-<i>of<N>`. */
      shard: z.string().optional(),
    },
    lenient,
  );
}

const resolvedConfigSchema = resolvedConfigObject(llmUnion, false);

/**
 * Reading a config a run saved: every field checked as when it was written, but a field no
 * schema here has (a config built by hand and given to the runner, one a later version added)
 * dropped rather than refused, since the run it records has happened.
 */
const savedConfigSchema = resolvedConfigObject(
  z.discriminatedUnion('provider', llmProviderSchemas.map((schema) => schema.strip()) as unknown as typeof llmProviderSchemas),
  true,
);

export type ExperimentConfig = z.output<typeof resolvedConfigSchema>;
export type ScriptedLlmConfig = Extract<LlmSectionConfig, { provider: 'scripted' }>;

/** The `pipeline:` section a user writes: the name picks the options type. */
type PipelineInputs = { [N in BuiltinPipelineName]: PipelineOptionsInput<N> } & RegisteredPipelineOptions;
export type PipelineSectionInput = {
  [N in keyof PipelineInputs]: { name: N; options?: PipelineInputs[N] };
}[keyof PipelineInputs];

/**
 * What a user writes (a YAML file, or an object in a notebook): `z.input` of the schemas, so
 * fields with defaults are optional and a notebook gets completion and type errors per pipeline
 * and per LLM provider.
 */
export type ExperimentInput = z.input<z.ZodObject<typeof commonFields>> & {
  name?: string;
  dataset: z.input<typeof datasetSchema>;
  pipeline: PipelineSectionInput;
  llm?: LlmSectionInput;
  judge?: LlmSectionInput | null;
  retriever?: RetrieverConfigInput | (Exclude<RetrieverConfigInput, string> & { corpus?: string; exclude?: 'none' | 'own' });
  reranker?: RerankerConfigInput;
  metrics?: string[];
  shard?: string;
};

interface SchemaOptions {
  /** The name when the config gives none (the file's name). */
  defaultName?: string;
  /** Look for the files the config names (false: pure validation). */
  checkFiles: boolean;
}

/** Issues at these top-level fields (a refinement reading them waits for them to be valid). */
function fieldsValid(...fields: string[]): (payload: z.core.ParsePayload) => boolean {
  return (payload) => !payload.issues.some((issue) => fields.includes(String(issue.path?.[0])));
}

/**
 * The alternative-answers file a run reads: only where a metric counts alternatives (em_alt,
 * f1_alt), so a config without those metrics never needs the file; the one named, else
 * `alt_answers.jsonl` beside the dataset file.
 */
function alternativesPathOf(dataset: { name: DatasetName; path?: string | undefined; alternatives?: string | undefined }, metrics: readonly string[]): string | undefined {
  if (!metrics.some((m) => m === 'em_alt' || m === 'f1_alt')) return undefined;
  if (dataset.alternatives !== undefined) return resolveDataPath(dataset.alternatives);
  return defaultAlternativesPath(resolveDataPath(dataset.path ?? defaultDatasetFiles[dataset.name]));
}

/**
 * The schema of a config file (or notebook object), built from the registries as they are now:
 * its output is the resolved `ExperimentConfig`.
 */
export function experimentConfigSchema(registry: ConfigRegistry, options: SchemaOptions): z.ZodType<ExperimentConfig, unknown> {
  const { checkFiles } = options;
  const readerSpecOf = (reader: string | undefined, llm: LlmSectionConfig) => reader ?? registry.defaultReader?.(llm.provider);
  // Which metrics run and which need a reader: decided in metrics/plan.ts, from this registry's
  // lists (`reader: none` turns the reader metrics off where they are only defaults).
  const metricPlan = (file: { dataset: { name: DatasetName }; metrics?: string[] | undefined; reader?: string | undefined; llm: LlmSectionConfig }) =>
    decideMetrics(file.dataset.name, { metrics: file.metrics, readerOff: readerSpecOf(file.reader, file.llm) === 'none' }, registry);
  const fileSchema = z.strictObject({
    name: z.string().regex(runNamePattern, RUN_NAME_RULE).optional(),
    description: commonFields.description,
    dataset: datasetSchema,
    pipeline: pipelineSectionSchema(registry),
    llm: llmSectionSchema(checkFiles).prefault({}),
    /**
     * The model of every yes/no judgment (`LanguageModel.judge`: ToC's verification, Diva's and
     * COMBO's graded judges, …), with the fields of `llm:`. Absent: the run's LLM judges. A
     * separate judge has its own client, cache keys and usage, and its own params (`judge.*`).
     * `judge: null` (e.g. `--set judge=null` on a config that ships a judge) is the same as absent.
     */
    judge: llmSectionSchema(checkFiles).nullish(),
    retriever: retrieverSectionSchema.optional(),
    reranker: rerankerConfigSchema.optional(),
    metrics: z.array(z.string().min(1)).min(1).optional(),
    reader: commonFields.reader,
    tracking: commonFields.tracking,
    concurrency: commonFields.concurrency,
    sweep: commonFields.sweep,
    trials: commonFields.trials,
    groupBy: commonFields.groupBy,
    /** Set by `--shard i/N`. */
    shard: z
      .string()
      .superRefine((spec, ctx) => {
        try {
          parseShard(spec);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
        }
      })
      .optional(),
  });

  return fileSchema
    .superRefine(
      (file, ctx) => {
        // One cap per run, on what llm: and judge: spend together (src/llm/budget.ts): a second cap on
        // the judge alone would stop the run just as the first does, so it is refused, not half-honoured.
        if (file.judge && 'maxCostUsd' in file.judge && file.judge.maxCostUsd !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['judge', 'maxCostUsd'], message: 'a run has one cost cap, on what llm: and judge: spend together; set llm.maxCostUsd (or --max-cost) instead' });
        }
        // A cap counts the judge's calls only when they have a price; one it cannot count is refused.
        const cap = 'maxCostUsd' in file.llm ? file.llm.maxCostUsd : undefined;
        const judgeProvider = file.judge ? llmProviderOf(file.judge) : undefined;
        if (file.judge && judgeProvider?.price && cap !== undefined && judgeProvider.price(file.judge, 'judge') === undefined) {
          const model = ('model' in file.judge ? file.judge.model : undefined) ?? process.env.OPENAI_MODEL ?? '(unset)';
          ctx.addIssue({
            code: 'custom',
            path: ['judge', 'pricing'],
            message: `the run has a cost cap (llm.maxCostUsd / --max-cost), but no price is known for the judge's model "${model}", so its calls could not count; add judge.pricing: {prompt: <USD per M tokens>, completion: <USD per M tokens>}`,
          });
        }
      },
      { when: fieldsValid('llm', 'judge') },
    )
    .superRefine(
      (file, ctx) => {
        if (!file.retriever && registry.requiresRetriever?.(file.pipeline.name)) {
          ctx.addIssue({ code: 'custom', path: ['retriever'], message: `pipeline ${file.pipeline.name} needs a retriever (e.g. \`retriever: bm25\`; types: bm25, dense, hybrid, multi-query, colbertv2)` });
        }
      },
      // Said only of an otherwise sound config: with a wrong pipeline name it would mislead.
      { when: (payload) => payload.issues.length === 0 },
    )
    .superRefine(
      (file, ctx) => {
        const questions = file.dataset.questions;
        if (questions !== undefined && questions !== 'ambiguous' && file.dataset.name !== 'asqa') {
          ctx.addIssue({ code: 'custom', path: ['dataset', 'questions'], message: `${questions} applies to dataset asqa only (this config's dataset is ${file.dataset.name})` });
        }
        if (file.dataset.alternatives !== undefined && file.dataset.name !== 'hotpotqa-adversarial') {
          ctx.addIssue({ code: 'custom', path: ['dataset', 'alternatives'], message: `applies to dataset hotpotqa-adversarial only (this config's dataset is ${file.dataset.name})` });
        }
      },
      { when: fieldsValid('dataset') },
    )
    .superRefine(
      (file, ctx) => {
        const allowed = registry.metricsFor?.(file.dataset.name) ?? registry.metricNames;
        file.metrics?.forEach((m, i) => {
          if (allowed.includes(m)) return;
          const known = registry.metricNames.includes(m);
          ctx.addIssue({
            code: 'custom',
            path: ['metrics', String(i)],
            message: `${known ? `metric ${JSON.stringify(m)} does not apply to dataset ${file.dataset.name}` : `unknown metric ${JSON.stringify(m)}`} (allowed: ${allowed.join(', ')})`,
          });
        });
      },
      { when: fieldsValid('dataset', 'metrics') },
    )
    .superRefine(
      (file, ctx) => {
        const readerSpec = readerSpecOf(file.reader, file.llm);
        const needReader = metricPlan(file).needReader;
        if (needReader.length > 0 && (readerSpec === undefined || readerSpec === 'none')) {
          ctx.addIssue({
            code: 'custom',
            path: ['reader'],
            message: `metrics ${needReader.join(', ')} need a reader${readerSpec === 'none' ? ', but reader is none' : ''} (e.g. \`reader: embedded\` or \`reader: qa-onnx:<folder>\`)`,
          });
        } else if (readerSpec !== undefined && (file.reader !== undefined || needReader.length > 0)) {
          // The reader module's line names its field itself.
          const problem = registry.checkReader?.(readerSpec, checkFiles);
          if (problem) ctx.addIssue({ code: 'custom', path: ['reader'], message: problem.replace(/^reader: /, '') });
        }
      },
      { when: fieldsValid('dataset', 'metrics', 'reader', 'llm') },
    )
    .superRefine(
      (file, ctx) => {
        if (!checkFiles) return;
        const datasetPath = resolveDataPath(file.dataset.path ?? defaultDatasetFiles[file.dataset.name]);
        if (!existsSync(datasetPath)) {
          ctx.addIssue({
            code: 'custom',
            path: ['dataset', 'path'],
            message:
              `file not found: ${datasetPath}` +
              // The user named no file, so say where the default came from and the three ways out.
              (file.dataset.path === undefined
                ? ` (the default for dataset '${file.dataset.name}' in the data folder ${dataDir()}: put the official file there, ` +
                  'point AMBIQA_DATA_DIR at a folder that has it, or set dataset.path)'
                : ''),
          });
        }
        const alternatives = alternativesPathOf(file.dataset, file.metrics ?? []);
        if (alternatives !== undefined && !existsSync(alternatives)) {
          ctx.addIssue({
            code: 'custom',
            path: ['dataset', 'alternatives'],
            message: `alternative-answers file not found: ${alternatives} (the metrics em_alt/f1_alt count its answers; set dataset.alternatives or leave those metrics out)`,
          });
        }
        for (const field of ['demos', 'ids'] as const) {
          const given = file.dataset[field];
          if (given !== undefined && !existsSync(resolveDataPath(given))) {
            ctx.addIssue({ code: 'custom', path: ['dataset', field], message: `file not found: ${resolveDataPath(given)}` });
          }
        }
        const corpus = file.retriever?.corpus;
        if (corpus !== undefined && !existsSync(resolveProjectPath(corpus))) {
          ctx.addIssue({ code: 'custom', path: ['retriever', 'corpus'], message: `file not found: ${resolveProjectPath(corpus)}` });
        }
      },
      { when: fieldsValid('dataset', 'retriever') },
    )
    .transform((file, ctx): ExperimentConfig => {
      const name = file.name ?? options.defaultName ?? file.pipeline.name;
      if (!runNamePattern.test(name)) {
        ctx.addIssue({ code: 'custom', path: ['name'], message: `${JSON.stringify(name)} ${RUN_NAME_RULE}` });
        return z.NEVER;
      }
      const shard = file.shard !== undefined ? parseShard(file.shard) : undefined;
      const readerSpec = readerSpecOf(file.reader, file.llm);
      const plan = metricPlan(file);
      const metrics = plan.metrics;
      // The default reader is recorded only where a metric reads with it.
      const reader = plan.needReader.length > 0 ? readerSpec : file.reader;
      const { name: datasetName, path, demos, ids, alternatives: _alternatives, ...dataset } = file.dataset;
      const alternatives = alternativesPathOf(file.dataset, metrics);
      const retriever = file.retriever;
      return {
        name: shard ? `${name}.shard-${shard.index}of${shard.count}` : name,
        ...(file.description !== undefined ? { description: file.description } : {}),
        dataset: {
          name: datasetName,
          path: resolveDataPath(path ?? defaultDatasetFiles[datasetName]),
          ...dataset,
          ...(demos !== undefined ? { demos: resolveDataPath(demos) } : {}),
          ...(ids !== undefined ? { ids: resolveDataPath(ids) } : {}),
          ...(alternatives !== undefined ? { alternatives } : {}),
        },
        pipeline: file.pipeline,
        llm: file.llm,
        ...(file.judge ? { judge: file.judge } : {}),
        ...(retriever ? { retriever: { ...retriever, ...(retriever.corpus !== undefined ? { corpus: resolveProjectPath(retriever.corpus) } : {}) } } : {}),
        ...(file.reranker ? { reranker: file.reranker } : {}),
        metrics,
        ...(reader !== undefined ? { reader } : {}),
        tracking: file.tracking,
        concurrency: file.concurrency,
        ...(file.trials > 1 ? { trials: file.trials } : {}),
        ...(file.groupBy ? { groupBy: file.groupBy } : {}),
        ...(file.sweep ? { sweep: file.sweep } : {}),
        ...(shard ? { shard: formatShard(shard) } : {}),
      };
    });
}

export interface LoadOptions {
  overrides?: Override[];
  /** `--name`: replaces the config's name. */
  name?: string;
  /** `--limit N`. */
  limit?: number;
  /** `--trials k`: answers per question (replaces the config's `trials`). */
  trials?: number;
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
  if (options.trials !== undefined) input = applyOverrides(input, [{ path: ['trials'], value: options.trials, text: `--trials ${options.trials}` }], source);
  if (options.shard !== undefined) input = { ...input, shard: options.shard };
  if (options.name !== undefined) input = { ...input, name: options.name };

  const schema = experimentConfigSchema(registry, {
    checkFiles: options.checkFiles !== false,
    ...(options.defaultName !== undefined ? { defaultName: options.defaultName } : {}),
  });
  const parsed = schema.safeParse(input);
  if (!parsed.success) fail(source, formatIssues(parsed.error.issues, { schema, input }));
  return parsed.data;
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

/** The config as YAML, with a header and the format stamp, for `config.yaml` in a run dir. */
export function configToYaml(config: ExperimentConfig, header?: string): string {
  const body = YAML.stringify({ format: RUN_FORMAT, ...config }, { lineWidth: 0 });
  return header ? `# ${header}\n${body}` : body;
}

/**
 * Parse a saved config (a run dir's `config.yaml`) back with the resolved config's schema, not
 * against the registries (a pipeline registered by the notebook that ran it need not be
 * registered now). Format 1 reads as format 2: the fields its LLM sections held for other
 * providers (`apiKeyEnv` beside an embedded model, `contextSize` beside a server) were defaults
 * no provider of that kind read, and the saved-config schema leaves them out.
 */
export function readResolvedConfig(path: string): ExperimentConfig {
  if (!existsSync(path)) throw new AmbiqaError(`not a run directory: ${path} is missing`, 'pass a folder written by `ambiqa run`');
  const { format = 1, ...saved } = readYamlMapping(path);
  if (typeof format !== 'number' || !Number.isInteger(format) || format < 1 || format > RUN_FORMAT) {
    throw new AmbiqaError(
      `${path}: format ${JSON.stringify(format)} is not one this version of ambiqa reads (formats 1 to ${RUN_FORMAT})`,
      'read the run with the version of ambiqa that wrote it, or a newer one',
    );
  }
  const config = normaliseConfig(saved, path);
  registerKeyOfConfig(config);
  return config;
}

/**
 * A resolved config as it reads back from `config.yaml` (every default filled, fields no schema
 * has left out): what a resumed run's config is compared with, so that a config given to the
 * runner directly compares like one that went through the schema.
 */
export function normaliseConfig(config: unknown, where: string): ExperimentConfig {
  const parsed = savedConfigSchema.safeParse(config);
  if (parsed.success) return parsed.data;
  const lines = formatIssues(parsed.error.issues, { schema: savedConfigSchema, input: config });
  throw new AmbiqaError(`${where}: not a config ambiqa wrote:\n  ${lines.join('\n  ')}`, 'the file may have been edited by hand; restore it, or start the run again under another --name');
}

/**
 * The part of a config that decides the results: two runs (or two shards) with equal
 * fingerprints answer the same questions the same way. Names, concurrency, tracking, shard and
 * where files sit on a particular machine do not count.
 */
export function configFingerprint(config: ExperimentConfig): Record<string, unknown> {
  const { name: _n, description: _d, concurrency: _c, tracking: _t, shard: _s, sweep: _w, dataset, retriever, llm, judge, ...rest } = structuredClone(config);
  // A size limit refuses a run or lets it go; it never changes an answer.
  const { maxQuestionChars: _q, ...data } = dataset;
  return {
    ...rest,
    dataset: {
      ...data,
      path: basename(data.path),
      ...(data.demos ? { demos: basename(data.demos) } : {}),
      ...(data.ids ? { ids: basename(data.ids) } : {}),
    },
    ...(retriever ? { retriever: retriever.corpus ? { ...retriever, corpus: basename(retriever.corpus) } : retriever } : {}),
    llm: answeringFields(llm),
    ...(judge ? { judge: answeringFields(judge) } : {}),
      ...(data.alternatives ? { alternatives: basename(data.alternatives) } : {}),
  };
}

/**
 * Where the cache and call log sit does not change answers; which judge answers does. A price
 * and a spending cap change what a run costs, never its answers: a run stopped by its cap
 * resumes with a higher one. A prompt size limit refuses calls, never changes one.
 */
const NOT_ANSWERING = new Set(['callLog', 'cache', 'pricing', 'maxCostUsd', 'maxPromptChars']);

function answeringFields(section: LlmSectionConfig): Record<string, unknown> {
  return Object.fromEntries(Object.entries(section).filter(([key]) => !NOT_ANSWERING.has(key)));
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
