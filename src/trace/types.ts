/**
 * The trace every pipeline writes beside its answer, as types. The shape is defined once, by the
 * zod schema in schema.ts (with each field's meaning); these types are inferred from it, so the
 * code that writes traces and the reader of traces.jsonl cannot disagree.
 */
import type { z } from 'zod';
import type {
  decisionsSchema,
  llmCallRecordSchema,
  parseFailureSchema,
  retrievalRecordSchema,
  spanFieldsSchema,
  stepRecordSchema,
  traceSchema,
  traceSummarySchema,
  traceWarningSchema,
} from './schema';

/**
 * A registered pipeline name. The trace sits below the pipelines, so it cannot name them: the
 * list (and the literal union `BuiltinPipelineName`) lives in src/pipelines/registry.ts, where
 * pipelines defined outside this repository can also be registered.
 */
export type PipelineName = string;

/** A record's place on the question's timeline (schema.ts `spanFieldsSchema`; absent before issue 45). */
export type SpanFields = z.output<typeof spanFieldsSchema>;
/** A step a pipeline opened with `TraceRecorder.span` (schema.ts). */
export type StepRecord = z.output<typeof stepRecordSchema>;
export type LlmCallRecord = z.output<typeof llmCallRecordSchema>;
export type RetrievalRecord = z.output<typeof retrievalRecordSchema>;
/** A model reply that did not parse and what the pipeline did instead. Counted, never fatal. */
export type ParseFailure = z.output<typeof parseFailureSchema>;
/** Something the pipeline worked around that is not a parse failure (schema.ts). */
export type TraceWarning = z.output<typeof traceWarningSchema>;
/** The question's usage and counts of what the trace holds; copied into its result line. */
export type TraceSummary = z.output<typeof traceSummarySchema>;
/** What a pipeline decided for one question: its `kind`, and the method's own fields (typed by its schema's view). */
export type Decisions = z.output<typeof decisionsSchema>;
export type Trace = z.output<typeof traceSchema>;
