/** The pipeline contract: `answer(example, ctx) → { output, trace }`. */
import type { Example } from '../datasets/types';
import type { Embedder, Reranker, Retriever } from '../retrieval/types';
import type { LanguageModel } from '../llm/types';
import type { PipelineName, Trace } from '../trace/types';

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

/** Picks the demos for a question (kNN over question embeddings, leave-one-out). */
export interface DemoSelector {
  select(question: { id: string; question: string }, k: number): Promise<Demo[]>;
}

export interface PipelineContext {
  llm: LanguageModel;
  retriever?: Retriever;
  reranker?: Reranker;
  embedder?: Embedder;
  demos?: DemoSelector;
  signal?: AbortSignal;
}

export interface PipelineOutput {
  /** The long-form answer (ASQA) or the final answer text. */
  output: string;
  /** The short answer, for EM/F1/accuracy datasets. */
  answer?: string;
  trace: Trace;
}

export interface Pipeline {
  readonly name: PipelineName;
  answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput>;
}
