import { AmbiqaError } from '../../errors';
import type { Embedder, Retriever } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineName } from '../../trace/types';
import type { Demo, DemoQuestion, DemoSelectOptions, PipelineContext } from '../types';

/** The retriever, or a clear error before any model call is made. */
export function requireRetriever(ctx: PipelineContext, pipeline: PipelineName): Retriever {
  if (!ctx.retriever) {
    throw new AmbiqaError(
      `pipeline ${pipeline} needs a retriever, but none was given`,
      'configure a retriever (e.g. bm25 or dense) for this run',
    );
  }
  return ctx.retriever;
}

/** The sentence embedder, or a clear error naming what it is needed for. */
export function requireEmbedder(ctx: PipelineContext, pipeline: PipelineName, why: string): Embedder {
  if (!ctx.embedder) {
    throw new AmbiqaError(
      `pipeline ${pipeline} needs a sentence embedder for ${why}, but none was given`,
      'pass the MiniLM embedder from `ambiqa setup` in the pipeline context',
    );
  }
  return ctx.embedder;
}

/**
 * The few-shot demos for a question. No selector while demos are wanted is a configuration
 * error (raised before any model call); a selector that runs out of demos is a recorded warning
 * and the prompt goes with fewer shots.
 */
export async function selectDemos(
  rec: TraceRecorder,
  ctx: PipelineContext,
  pipeline: PipelineName,
  question: DemoQuestion,
  k: number,
  purpose: string,
  options?: DemoSelectOptions,
): Promise<Demo[]> {
  if (k === 0) return [];
  if (!ctx.demos) {
    throw new AmbiqaError(
      `pipeline ${pipeline} wants ${k} few-shot demos (option nShots), but no demo pool was given`,
      'pass a DemoSelector built from the training/dev examples, or set nShots: 0',
    );
  }
  const demos = await ctx.demos.select(question, k, options);
  if (demos.length < k) {
    rec.warn(
      purpose,
      `only ${demos.length} of ${k} few-shot demos available for this question`,
      demos.length === 0 ? 'zero-shot prompt' : `${demos.length}-shot prompt`,
    );
  }
  rec.useDemos(demos.map((d) => d.id));
  return demos;
}

/** Throw when the caller aborted (between model calls; the LLM layer aborts within calls). */
export function checkAborted(ctx: PipelineContext): void {
  if (ctx.signal?.aborted) {
    throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('aborted');
  }
}
