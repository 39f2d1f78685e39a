/**
 * The schema of the trace every pipeline writes beside its answer, the one definition of its
 * shape: the types in types.ts are inferred from it and `readTraces` (src/run-files) parses
 * traces.jsonl with it. Plain JSON (no classes, no Maps), so that a trace can be written, read
 * back in a notebook, and turned into plots, metrics and reports without re-running anything.
 *
 * Every object is loose: a field a later version adds (span ids and start times, say) is kept
 * when an older one reads and rewrites the file, not dropped. To add a field, add it here, optional
 * when traces written before it must still read.
 */
import { z } from 'zod';

/** A prompt message (`ChatMessage`, llm/types.ts): a role and its text, nothing else. */
const chatMessageSchema = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() });

const completionSchema = z.looseObject({
  text: z.string(),
  finishReason: z.string(),
  /**
   * Tokens as the provider reported them; absent when it did not (`TokenUsage`). Traces written
   * before issue 37 hold 0 there instead: a 0 in an older trace may mean "not reported".
   */
  promptTokens: z.number().optional(),
  completionTokens: z.number().optional(),
  latencySeconds: z.number(),
  cacheHit: z.boolean(),
  /**
   * A replay: the run that computed it (`<run folder>@<its first start>`), when its cache entry
   * recorded one (absent for entries stored before writers were recorded, and in older traces).
   */
  cachedFrom: z.string().optional(),
  /** Sum of token log-probabilities, when asked for (`logprobs: true`). */
  logprob: z.number().optional(),
  /** US dollars, priced by the model that served the call (0 for replays); absent when no price is known. */
  costUsd: z.number().optional(),
});

const judgeCalibrationSchema = z.looseObject({
  /**
   * `content-free`: the prior from this question's content-free call (`priorCallIndex`);
   * `batch`: the run's stored prior (judge-priors.json: the mean over a calibration sample of
   * demo-pool questions judged before the run), so there is no call index.
   */
  method: z.enum(['content-free', 'batch']),
  priorCallIndex: z.number().optional(),
  prior: z.array(z.number()),
  probabilities: z.array(z.number()),
  p: z.number(),
  applied: z.boolean(),
});

/**
 * Set for judge calls (`LanguageModel.judge`): the labels, their probabilities (request order)
 * and P(labels[0]). `completions[0].text` holds the most probable label (or the parsed reply in
 * text mode).
 */
const judgeRecordSchema = z.looseObject({
  labels: z.array(z.string()),
  probabilities: z.array(z.number()),
  p: z.number(),
  mode: z.enum(['probability', 'text']),
  labelMass: z.number(),
  /** Text mode: the reply named none of the labels. */
  unparsed: z.boolean().optional(),
  /**
   * Set when the pipeline calibrated this judgment (`judgeCalibration: content-free` or `batch`):
   * the label prior, the calibrated probabilities and calibrated P(labels[0]) the pipeline
   * thresholded. `applied: false` when the prior could not be divided out (text mode, a zero
   * prior): then `p` is the raw P.
   */
  calibration: judgeCalibrationSchema.optional(),
});

/**
 * Where a record sits on the question's timeline (issue 45): when it started, its own span id and
 * the id of the step span it ran inside (`stepRecordSchema.spanId`; absent: directly under the
 * question). Span ids are short strings unique within one trace (`s1`, `s2`, … in the order the
 * recorder handed them out); the MLflow export maps them to OTLP ids. Traces written before issue
 * 45 have none of these fields: their timeline is reconstructed from durations
 * (src/tracking/otel-export.ts).
 */
export const spanFieldsSchema = z.object({
  /** Epoch milliseconds (µs resolution) at which the call, retrieval or step began. */
  startedAt: z.number().optional(),
  spanId: z.string().optional(),
  parentSpanId: z.string().optional(),
});

/**
 * A step a pipeline opened with `TraceRecorder.span` (ToC: a node, its expansion, its
 * verification, the answer), in the order the steps began. LLM calls and retrievals made inside
 * it name it as their `parentSpanId`.
 */
export const stepRecordSchema = z.looseObject({
  name: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  /** Epoch milliseconds. */
  startedAt: z.number(),
  /** Epoch milliseconds; equal to `startedAt` while the step has not finished. */
  endedAt: z.number(),
  /** What identifies the step (node id, depth, loop step …): small scalars, shown on the span. */
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  /** Set when the step threw: the error's message (the question itself may still go on). */
  error: z.string().optional(),
});

export const llmCallRecordSchema = z.looseObject({
  /** Position in the question's call sequence (0-based). */
  index: z.number(),
  /** What the call was for, e.g. `toc.rac`, `toc.verify`, `ve.edit.answer`. */
  purpose: z.string(),
  messages: z.array(chatMessageSchema),
  params: z.looseObject({
    temperature: z.number(),
    topP: z.number(),
    maxTokens: z.number(),
    stop: z.array(z.string()),
    n: z.number(),
    seed: z.number().nullable(),
    /** Index of the first sample when not 0 (a later round of adaptive self-consistency). */
    firstSample: z.number().optional(),
  }),
  completions: z.array(completionSchema),
  wallSeconds: z.number(),
  /**
   * The model that answered, as `provider:model`, when it is not the trace's `llm` (a judgment
   * served by the run's separate `judge:` model). Absent: the trace's `llm` answered.
   */
  model: z.string().optional(),
  judge: judgeRecordSchema.optional(),
  ...spanFieldsSchema.shape,
});

export const retrievalRecordSchema = z.looseObject({
  index: z.number(),
  purpose: z.string(),
  retriever: z.string(),
  query: z.string(),
  k: z.number(),
  hits: z.array(z.looseObject({ id: z.string(), score: z.number() })),
  /** Set when a reranker re-ordered the hits. */
  reranker: z.string().optional(),
  /** How long the search (or rerank) took; absent in traces before issue 45. */
  wallSeconds: z.number().optional(),
  ...spanFieldsSchema.shape,
});

/** A model reply that did not parse and what the pipeline did instead. Counted, never fatal. */
export const parseFailureSchema = z.looseObject({
  purpose: z.string(),
  llmCallIndex: z.number(),
  reason: z.string(),
  raw: z.string(),
  fallback: z.string(),
});

/**
 * Something the pipeline had to work around that is not a parse failure: an empty retrieval, no
 * demos left for a question, a call budget that cut the search short. Counted in the summary.
 */
export const traceWarningSchema = z.looseObject({
  purpose: z.string(),
  message: z.string(),
  /** What the pipeline did instead. */
  fallback: z.string().optional(),
});

/**
 * The question's usage (`Usage`, llm/types.ts, in the names of the trace format) and counts of
 * what the trace holds; copied into its result line (`ExampleResult.usage`).
 */
export const traceSummarySchema = z.looseObject({
  llmCalls: z.number(),
  /**
   * Token sums; absent when a call of the question did not report its tokens (unknown, not 0).
   * Traces and results written before issue 37 always hold numbers, with 0 for calls whose
   * tokens were not reported.
   */
  promptTokens: z.number().optional(),
  completionTokens: z.number().optional(),
  cacheHits: z.number(),
  /** Wall seconds for the whole question. */
  seconds: z.number(),
  retrievals: z.number(),
  parseFailures: z.number(),
  /** Number of `Trace.warnings` (absent in traces written before warnings existed). */
  warnings: z.number().optional(),
  /** LLM samples (a call with n = 5 is one call, five samples). */
  samples: z.number().optional(),
  /**
   * What the question's live LLM calls cost in US dollars (`llm.pricing`, `judge.pricing`);
   * replays from ambiqa's cache cost 0; 0 for the embedded model. Absent when no price is known.
   */
  costUsd: z.number().optional(),
});

/**
 * What a pipeline decided for one question (tree nodes, pruning verdicts, votes, verification
 * labels, matchings). The trace sits below the pipelines, so it knows only the `kind`: each method
 * defines its fields with a zod schema in its own folder (e.g. src/pipelines/toc/decisions.ts),
 * carried by its registry entry with the analysis and figures that read them, and reads them back
 * through a typed view (`tocDecisionsOf(trace)`).
 */
export const decisionsSchema = z.looseObject({
  /** The method's decisions schema (`toc`, `verify-edit`, `diva`, `combo`, `cot-sc`, `baseline`, or a registered pipeline's own). */
  kind: z.string(),
});

const modelNameSchema = z.looseObject({ provider: z.string(), model: z.string() });

export const traceSchema = z.looseObject({
  /** A registered pipeline name (src/pipelines/registry.ts; the trace sits below the pipelines). */
  pipeline: z.string(),
  questionId: z.string(),
  /** `trials: k`: which answer of the question this trace records (absent = 0). */
  trial: z.int().min(0).optional(),
  question: z.string(),
  llm: modelNameSchema,
  /** The model that served the yes/no judgments, when the run has a `judge:` section of its own. */
  judge: modelNameSchema.optional(),
  /** Demo question ids used as few-shot examples. */
  demoIds: z.array(z.string()),
  llmCalls: z.array(llmCallRecordSchema),
  retrievals: z.array(retrievalRecordSchema),
  /** The pipeline's steps as spans (`TraceRecorder.span`); absent in traces before issue 45. */
  steps: z.array(stepRecordSchema).optional(),
  /** Epoch milliseconds at which the question began (the recorder was opened); absent before issue 45. */
  startedAt: z.number().optional(),
  parseFailures: z.array(parseFailureSchema),
  /** Worked-around conditions (empty retrieval, no demos, budget); absent in old traces. */
  warnings: z.array(traceWarningSchema).optional(),
  /** The pipeline's resolved options (every default filled in). */
  options: z.record(z.string(), z.unknown()).optional(),
  decisions: decisionsSchema,
  summary: traceSummarySchema,
  /** The final long answer, and the short answer where the method has one. */
  output: z.string(),
  answer: z.string().optional(),
});
