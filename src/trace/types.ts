/**
 * The trace every pipeline writes beside its answer. It is plain JSON (no classes, no Maps) so
 * that it can be written to `traces.jsonl`, read back in a notebook, and turned into plots,
 * metrics and reports without re-running anything.
 */
import type { ChatMessage, JudgeMode } from '../llm/types';

/**
 * A registered pipeline name. The trace sits below the pipelines, so it cannot name them: the
 * list (and the literal union `BuiltinPipelineName`) lives in src/pipelines/registry.ts, where
 * pipelines defined outside this repository can also be registered.
 */
export type PipelineName = string;

/**
 * Where a record sits on the question's timeline (issue 45): when it started, its own span id and
 * the id of the step span it ran inside (`StepRecord.spanId`; absent: directly under the
 * question). Span ids are short strings unique within one trace (`s1`, `s2`, … in the order the
 * spans opened); the MLflow export maps them to OTLP ids. Traces written before issue 45 have
 * none of these fields: their timeline is reconstructed from durations (src/tracking/otel-export.ts).
 */
export interface SpanFields {
  /** Epoch milliseconds at which the call, retrieval or step began. */
  startedAt?: number;
  spanId?: string;
  parentSpanId?: string;
}

/**
 * A step a pipeline opened with `TraceRecorder.span` (ToC: a node, its expansion, its
 * verification, the answer), in the order the steps began. LLM calls and retrievals made inside
 * it name it as their `parentSpanId`.
 */
export interface StepRecord {
  name: string;
  spanId: string;
  parentSpanId?: string;
  /** Epoch milliseconds. */
  startedAt: number;
  /** Epoch milliseconds; equal to `startedAt` while the step has not finished. */
  endedAt: number;
  /** What identifies the step (node id, depth, loop step …): small scalars, shown on the span. */
  attributes: Record<string, string | number | boolean>;
  /** Set when the step threw: the error's message (the question itself may still go on). */
  error?: string;
}

export interface LlmCallRecord extends SpanFields {
  /** Position in the question's call sequence (0-based). */
  index: number;
  /** What the call was for, e.g. `toc.rac`, `toc.verify`, `ve.edit.answer`. */
  purpose: string;
  messages: ChatMessage[];
  params: {
    temperature: number;
    topP: number;
    maxTokens: number;
    stop: string[];
    n: number;
    seed: number | null;
    /** Index of the first sample when not 0 (a later round of adaptive self-consistency). */
    firstSample?: number;
  };
  completions: Array<{
    text: string;
    finishReason: string;
    /**
     * Tokens as the provider reported them; absent when it did not (`TokenUsage`). Traces written
     * before issue 37 hold 0 there instead: a 0 in an older trace may mean "not reported".
     */
    promptTokens?: number;
    completionTokens?: number;
    latencySeconds: number;
    cacheHit: boolean;
    /** Sum of token log-probabilities, when asked for (`logprobs: true`). */
    logprob?: number;
    /** US dollars, priced by the model that served the call (0 for replays); absent when no price is known. */
    costUsd?: number;
  }>;
  wallSeconds: number;
  /**
   * The model that answered, as `provider:model`, when it is not the trace's `llm` (a judgment
   * served by the run's separate `judge:` model). Absent: the trace's `llm` answered.
   */
  model?: string;
  /**
   * Set for judge calls (`LanguageModel.judge`): the labels, their probabilities (request order)
   * and P(labels[0]). `completions[0].text` holds the most probable label (or the parsed reply in
   * text mode).
   */
  judge?: {
    labels: string[];
    probabilities: number[];
    p: number;
    mode: JudgeMode;
    labelMass: number;
    /** Text mode: the reply named none of the labels. */
    unparsed?: boolean;
    /**
     * Set when the pipeline calibrated this judgment (`judgeCalibration: content-free` or `batch`):
     * the label prior (content-free: read from call `priorCallIndex`), the calibrated
     * probabilities and calibrated P(labels[0]) the pipeline thresholded. `applied: false` when
     * the prior could not be divided out (text mode, a zero prior): then `p` is the raw P.
     */
    calibration?: {
      /**
       * `content-free`: the prior from this question's content-free call (`priorCallIndex`);
       * `batch`: the run's stored prior (judge-priors.json: the mean over a calibration sample of
       * demo-pool questions judged before the run), so there is no call index.
       */
      method: 'content-free' | 'batch';
      priorCallIndex?: number;
      prior: number[];
      probabilities: number[];
      p: number;
      applied: boolean;
    };
  };
}

export interface RetrievalRecord extends SpanFields {
  index: number;
  purpose: string;
  retriever: string;
  query: string;
  k: number;
  hits: Array<{ id: string; score: number }>;
  /** Set when a reranker re-ordered the hits. */
  reranker?: string;
  /** How long the search (or rerank) took; absent in traces before issue 45. */
  wallSeconds?: number;
}

/** A model reply that did not parse and what the pipeline did instead. Counted, never fatal. */
export interface ParseFailure {
  purpose: string;
  llmCallIndex: number;
  reason: string;
  raw: string;
  fallback: string;
}

/**
 * Something the pipeline had to work around that is not a parse failure: an empty retrieval, no
 * demos left for a question, a call budget that cut the search short. Counted in the summary.
 */
export interface TraceWarning {
  purpose: string;
  message: string;
  /** What the pipeline did instead. */
  fallback?: string;
}

/**
 * The question's usage (`Usage`, llm/types.ts, in the names of the trace format) and counts of
 * what the trace holds; copied into its result line (`ExampleResult.usage`).
 */
export interface TraceSummary {
  llmCalls: number;
  /**
   * Token sums; absent when a call of the question did not report its tokens (unknown, not 0).
   * Traces and results written before issue 37 always hold numbers, with 0 for calls whose
   * tokens were not reported.
   */
  promptTokens?: number;
  completionTokens?: number;
  cacheHits: number;
  /** Wall seconds for the whole question. */
  seconds: number;
  retrievals: number;
  parseFailures: number;
  /** Number of `Trace.warnings` (absent in traces written before warnings existed). */
  warnings?: number;
  /** LLM samples (a call with n = 5 is one call, five samples). */
  samples?: number;
  /**
   * What the question's live LLM calls cost in US dollars (`llm.pricing`, `judge.pricing`);
   * replays from ambiqa's cache cost 0; 0 for the embedded model. Absent when no price is known.
   */
  costUsd?: number;
}

// ---------------------------------------------------------------- method-specific decisions

/**
 * What a pipeline decided for one question (tree nodes, pruning verdicts, votes, verification
 * labels, matchings). The trace sits below the pipelines, so it knows only the `kind`: each method
 * defines its fields with a zod schema in its own folder (e.g. src/pipelines/toc/decisions.ts),
 * carried by its registry entry with the analysis and figures that read them, and reads them back
 * through a typed view (`tocDecisionsOf(trace)`).
 */
export interface Decisions {
  /** The method's decisions schema (`toc`, `verify-edit`, `diva`, `combo`, `cot-sc`, `baseline`, or a registered pipeline's own). */
  kind: string;
  /** The method's own fields: unknown here, typed by its schema's view. */
  [field: string]: unknown;
}

export interface Trace {
  pipeline: PipelineName;
  questionId: string;
  question: string;
  llm: { provider: string; model: string };
  /** The model that served the yes/no judgments, when the run has a `judge:` section of its own. */
  judge?: { provider: string; model: string };
  /** Demo question ids used as few-shot examples. */
  demoIds: string[];
  llmCalls: LlmCallRecord[];
  retrievals: RetrievalRecord[];
  /** The pipeline's steps as spans (`TraceRecorder.span`); absent in traces before issue 45. */
  steps?: StepRecord[];
  /** Epoch milliseconds at which the question began (the recorder was opened); absent before issue 45. */
  startedAt?: number;
  parseFailures: ParseFailure[];
  /** Worked-around conditions (empty retrieval, no demos, budget); absent in old traces. */
  warnings?: TraceWarning[];
  /** The pipeline's resolved options (every default filled in). */
  options?: Record<string, unknown>;
  decisions: Decisions;
  summary: TraceSummary;
  /** The final long answer, and the short answer where the method has one. */
  output: string;
  answer?: string;
}
