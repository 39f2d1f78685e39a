/** The pipeline contract: `answer(example, ctx) → { output, trace }`. */
import { z } from 'zod';
import type { Example } from '../datasets/types';
import type { Embedder, Reranker, Retriever } from '../retrieval/types';
import type { LanguageModel } from '../llm/types';
import type { LlmCallRecord, PipelineName, Trace } from '../trace/types';

/** A few-shot demo: a question with what the method's prompt shows for it. */
export interface Demo {
  id: string;
  question: string;
  /** ASQA-style: DQ/DA pairs and a gold long answer. */
  qaPairs?: Array<{ question: string; answer: string }>;
  longAnswer?: string;
  /** Short-answer datasets. */
  answer?: string;
  /** CoT datasets: a worked rationale. */
  rationale?: string;
}

/** Optional filters for `DemoSelector.select`. */
export interface DemoSelectOptions {
  /**
   * Candidate answers found so far for the current question (e.g. ToC's tree). A demo any of
   * whose answers overlaps one of these (token F1 > `overlapF1`) is dropped, so a demo never
   * hands the model an answer it is about to produce.
   */
  excludeAnswers?: string[];
  /** Overlap threshold for `excludeAnswers`. Default 0.8. */
  overlapF1?: number;
}

/**
 * The question demos are picked for: its id, its text, and the example it was derived from (an
 * ASQA DQ's AQ), which leave-one-out excludes too.
 */
export type DemoQuestion = Pick<Example, 'id' | 'question' | 'sourceId'>;

/** Picks the demos for a question (kNN over question embeddings, leave-one-out). */
export interface DemoSelector {
  /** The whole pool, when the selector has one in memory (batch calibration samples from it). */
  readonly pool?: readonly Demo[];
  /** Best match first; never the question itself; may return fewer than `k` when the pool runs out. */
  select(question: DemoQuestion, k: number, options?: DemoSelectOptions): Promise<Demo[]>;
}

/** The prior of one purpose: mean label probabilities over the calibration judgments. */
export const purposePriorSchema = z.object({
  labels: z.array(z.string()).min(2),
  prior: z.array(z.number().min(0).max(1)).min(2),
  /** Calibration judgments averaged (those read as probabilities). */
  judgments: z.int().min(1),
});

/**
 * `judge-priors.json`: what a run with `judgeCalibration: batch` divides by, and how it was made
 * (common/batch-prior.ts estimates it; the runner stores it before the first question).
 */
export const judgePriorsSchema = z.object({
  method: z.literal('batch'),
  pipeline: z.string(),
  seed: z.int(),
  /** The demo-pool questions of the calibration sample, in sample order. */
  sampleIds: z.array(z.string()),
  purposes: z.record(z.string(), purposePriorSchema),
  /** Every calibration call, as in a trace (purpose `<purpose>.calibration`). */
  calls: z.array(z.custom<LlmCallRecord>((v) => typeof v === 'object' && v !== null)),
  /** The calibration calls' usage; token counts absent when some call's were not reported (unknown). */
  usage: z.object({ llmCalls: z.int(), promptTokens: z.int().optional(), completionTokens: z.int().optional(), cacheHits: z.int() }),
});

export type JudgePriors = z.infer<typeof judgePriorsSchema>;

export interface PipelineContext {
  llm: LanguageModel;
  retriever?: Retriever;
  reranker?: Reranker;
  embedder?: Embedder;
  demos?: DemoSelector;
  signal?: AbortSignal;
  /** The run's stored judge priors (`judgeCalibration: batch`), set by the runner before the first question. */
  judgePriors?: JudgePriors;
}

export interface PipelineOutput {
  /** The long-form answer (ASQA) or the final answer text. */
  output: string;
  /** The short answer, for EM/F1/accuracy datasets. */
  answer?: string;
  /**
   * How confident the method is in this answer, in [0, 1], where it has such a signal:
   * Verify-and-Edit's consistency and CoT-SC's vote share (long answers: the medoid's mean token
   * F1 to the other samples). The accuracy–coverage AUC (`auc`)
   * ranks predictions by it, the consistency KDE draws it, and the results row keeps it. Absent
   * for methods without one (ToC, Diva, COMBO grade nodes and passages, not their answer).
   */
  confidence?: number;
  /** The final answer's log-probability (Verify-and-Edit with `answerLogprob: true`), what `auc_logprob` ranks by. */
  answerLogprob?: number;
  trace: Trace;
}

export interface Pipeline {
  readonly name: PipelineName;
  answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput>;
  /**
   * Batch calibration (`judgeCalibration: batch`): judge a seeded sample of `pool` (demo-pool
   * questions, the evaluated ones already removed) and return the label priors the run's
   * questions will divide by; null when the options do not ask for it. The runner calls it once
   * per run directory and stores the result (common/batch-prior.ts).
   */
  calibrate?(pool: readonly Demo[], ctx: PipelineContext): Promise<JudgePriors | null>;
}
