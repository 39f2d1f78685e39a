import type { FinishReason, GenerateRequest } from '../../llm/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';

export interface LlmCallResult {
  /** One text per sample. */
  texts: string[];
  finishReasons: FinishReason[];
  /** Index of the call in the trace's `llmCalls`. */
  callIndex: number;
}

/**
 * One model call through the recorder (so it lands in the trace) with the context's abort
 * signal. `purpose` is required: traces, caches and plots group calls by it.
 */
export async function callLlm(
  rec: TraceRecorder,
  ctx: PipelineContext,
  request: GenerateRequest & { purpose: string },
): Promise<LlmCallResult> {
  const result = await rec.llm.generate({ ...request, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  return {
    texts: result.completions.map((c) => c.text),
    finishReasons: result.completions.map((c) => c.finishReason),
    callIndex: rec.lastCallIndex,
  };
}

/** Stop strings that end a reply where the model would start inventing the next demo. */
export const DEMO_STOPS = ['\nQuestion:', '\n\nQuestion:', '\nClaim:'];
