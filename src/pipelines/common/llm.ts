import type { ChatMessage, FinishReason, GenerateRequest, JudgeMode } from '../../llm/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';

export interface LlmCallResult {
  /** One text per sample. */
  texts: string[];
  finishReasons: FinishReason[];
  /** Per sample: the sum of its token log-probabilities, when asked for (`logprobs: true`) and known. */
  logprobs: Array<number | undefined>;
  /** Per sample: its completion tokens (what a mean token log-probability divides by). */
  completionTokens: Array<number | undefined>;
  /** Index of the call in the trace's `llmCalls`. */
  callIndex: number;
}

/**
 * One model call through the recorder (so it lands in the trace). `purpose` is required: traces,
 * caches and plots group calls by it. The run's abort signal is a layer of the run's model
 * (`runModel`, src/llm/run-model.ts), so calls need not carry it.
 */
export async function callLlm(
  rec: TraceRecorder,
  // Unread since the run's signal became a layer of its model; kept so every pipeline's calls
  // keep one shape (a pipeline-local signal would go here).
  _ctx: PipelineContext,
  request: GenerateRequest & { purpose: string },
): Promise<LlmCallResult> {
  const result = await rec.llm.generate(request);
  return {
    texts: result.completions.map((c) => c.text),
    finishReasons: result.completions.map((c) => c.finishReason),
    logprobs: result.completions.map((c) => c.logprob),
    completionTokens: result.completions.map((c) => c.usage.completionTokens),
    callIndex: rec.lastCallIndex,
  };
}

/** Stop strings that end a reply where the model would start inventing the next demo. */
export const DEMO_STOPS = ['\nQuestion:', '\n\nQuestion:', '\nClaim:'];

export interface JudgeCallResult {
  /** P(labels[0]) in [0, 1]: read from next-token probabilities, or 0/1 from a parsed text reply. */
  p: number;
  /** The reply named none of the labels (text mode only); `p` is then 0 and a parse failure is recorded. */
  unparsed: boolean;
  mode: JudgeMode;
  /** Index of the call in the trace's `llmCalls`. */
  callIndex: number;
}

/**
 * One graded yes/no judgment through the recorder (`LanguageModel.judge`). Pipelines threshold
 * `p`; a text-mode reply that names no label is recorded as a parse failure whose fallback is
 * `fallback` (P = 0, the negative label), so nothing is silently read as a verdict.
 */
export async function judgeLlm(
  rec: TraceRecorder,
  _ctx: PipelineContext,
  request: { purpose: string; labels: string[]; messages?: ChatMessage[]; prompt?: string; fallback: string },
): Promise<JudgeCallResult> {
  const { fallback, ...rest } = request;
  const result = await rec.llm.judge(rest);
  const callIndex = rec.lastCallIndex;
  const unparsed = result.mode === 'text' && result.label === null;
  if (unparsed) {
    rec.parseFailure(request.purpose, `no ${request.labels.join('/')} in the judgement`, result.text ?? '', fallback);
  }
  return { p: result.p, unparsed, mode: result.mode, callIndex };
}
