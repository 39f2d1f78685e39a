import { wrapModel, type ModelMiddleware } from '../llm/middleware';
import type { GenerateResult, JudgeResult, LanguageModel } from '../llm/types';
import type { ScoredPassage } from '../retrieval/types';
import type {
  LlmCallRecord,
  Decisions,
  ParseFailure,
  PipelineName,
  RetrievalRecord,
  Trace,
  TraceWarning,
} from './types';
import { callsUsage, tokenFields } from './usage';

/**
 * Collects one question's trace. Pipelines call the model through `recorder.llm`, so every call
 * is recorded without the pipeline having to remember to do it; retrievals, parse failures and
 * warnings are recorded by the pipeline, and `finish` adds the cost summary (calls, tokens,
 * cache hits, seconds) that experiments copy into their results.
 */
export class TraceRecorder {
  readonly llmCalls: LlmCallRecord[] = [];
  readonly retrievals: RetrievalRecord[] = [];
  readonly parseFailures: ParseFailure[] = [];
  readonly warnings: TraceWarning[] = [];
  demoIds: string[] = [];
  /** The pipeline's resolved options, copied into the trace. */
  options?: Record<string, unknown>;
  readonly llm: LanguageModel;
  private readonly startedAt = performance.now();

  constructor(
    readonly pipeline: PipelineName,
    readonly example: { id: string; question: string },
    model: LanguageModel,
  ) {
    // Every call the pipeline makes through `llm` passes the recording layer on its way back.
    this.llm = wrapModel(model, [this.recording(model.judgeModel)]);
  }

  /**
   * The recorder's layer of the model: each call that returns lands in `llmCalls` (a judgment
   * served by a model of its own — a run's `judge:` section — names it), and provider
   * work-arounds in `warnings`. A call that throws records nothing; the pipeline records why, if
   * it goes on.
   */
  private recording(judgeModel: LanguageModel['judgeModel']): ModelMiddleware {
    const calls = this.llmCalls;
    const warnings = this.warnings;
    const judgedBy = judgeModel ? `${judgeModel.provider}:${judgeModel.model}` : undefined;
    return {
      name: 'trace',
      async generate(request, next) {
        const result = await next(request);
        calls.push(toCallRecord(calls.length, result));
        // Provider work-arounds (e.g. samples drawn one by one instead of batched) stay visible.
        for (const message of result.warnings ?? []) warnings.push({ purpose: result.request.purpose, message });
        return result;
      },
      async judge(request, next) {
        const result = await next(request);
        calls.push({ ...toJudgeRecord(calls.length, result), ...(judgedBy ? { model: judgedBy } : {}) });
        return result;
      },
    };
  }

  /** Index of the most recent LLM call, for linking parse failures and expansions to it. */
  get lastCallIndex(): number {
    return this.llmCalls.length - 1;
  }

  /** LLM calls made so far (for call budgets such as ToC's < 20 per question). */
  get callCount(): number {
    return this.llmCalls.length;
  }

  recordRetrieval(
    purpose: string,
    retriever: string,
    query: string,
    k: number,
    hits: ScoredPassage[],
    reranker?: string,
  ): void {
    this.retrievals.push({
      index: this.retrievals.length,
      purpose,
      retriever,
      query,
      k,
      hits: hits.map((h) => ({ id: h.passage.id, score: h.score })),
      ...(reranker ? { reranker } : {}),
    });
  }

  /** Record a reply that did not parse and the fallback used; never throws. */
  parseFailure(purpose: string, reason: string, raw: string, fallback: string): void {
    this.parseFailures.push({ purpose, llmCallIndex: this.lastCallIndex, reason, raw, fallback });
  }

  /** Record a condition the pipeline worked around (empty retrieval, no demos, budget). */
  warn(purpose: string, message: string, fallback?: string): void {
    this.warnings.push({ purpose, message, ...(fallback !== undefined ? { fallback } : {}) });
  }

  /** Add demo ids in first-use order without repeats. */
  useDemos(ids: string[]): void {
    for (const id of ids) if (!this.demoIds.includes(id)) this.demoIds.push(id);
  }

  finish<D extends Decisions>(decisions: D, output: string, answer?: string): Trace {
    const usage = callsUsage(this.llmCalls);
    return {
      pipeline: this.pipeline,
      questionId: this.example.id,
      question: this.example.question,
      llm: { provider: this.llm.provider, model: this.llm.model },
      ...(this.llm.judgeModel ? { judge: { ...this.llm.judgeModel } } : {}),
      demoIds: this.demoIds,
      llmCalls: this.llmCalls,
      retrievals: this.retrievals,
      parseFailures: this.parseFailures,
      warnings: this.warnings,
      ...(this.options ? { options: this.options } : {}),
      decisions,
      summary: {
        llmCalls: usage.calls,
        ...tokenFields(usage),
        cacheHits: usage.cacheHits,
        seconds: (performance.now() - this.startedAt) / 1000,
        retrievals: this.retrievals.length,
        parseFailures: this.parseFailures.length,
        warnings: this.warnings.length,
        samples: usage.samples,
        ...(usage.costUsd !== undefined ? { costUsd: usage.costUsd } : {}),
      },
      output,
      ...(answer !== undefined ? { answer } : {}),
    };
  }
}

function toCallRecord(index: number, result: GenerateResult): LlmCallRecord {
  const r = result.request;
  return {
    index,
    purpose: r.purpose,
    messages: r.messages,
    params: {
      temperature: r.temperature,
      topP: r.topP,
      maxTokens: r.maxTokens,
      stop: r.stop,
      n: r.n,
      seed: r.seed,
      ...(r.firstSample ? { firstSample: r.firstSample } : {}),
    },
    completions: result.completions.map((c) => ({
      text: c.text,
      finishReason: c.finishReason,
      ...tokenFields(c.usage),
      latencySeconds: c.latencySeconds,
      cacheHit: c.cacheHit,
      ...(c.logprob !== undefined ? { logprob: c.logprob } : {}),
      ...(c.costUsd !== undefined ? { costUsd: c.costUsd } : {}),
    })),
    wallSeconds: result.wallSeconds,
  };
}

function toJudgeRecord(index: number, result: JudgeResult): LlmCallRecord {
  const r = result.request;
  return {
    index,
    purpose: r.purpose,
    messages: r.messages,
    // A judgment reads one next-token distribution: greedy, one token, one sample.
    params: { temperature: 0, topP: 1, maxTokens: 1, stop: [], n: 1, seed: null },
    completions: [
      {
        text: result.text ?? result.label ?? '',
        finishReason: 'stop',
        ...tokenFields(result.usage),
        latencySeconds: result.latencySeconds,
        cacheHit: result.cacheHit,
        ...(result.costUsd !== undefined ? { costUsd: result.costUsd } : {}),
      },
    ],
    wallSeconds: result.wallSeconds,
    judge: {
      labels: r.labels,
      probabilities: result.probabilities,
      p: result.p,
      mode: result.mode,
      labelMass: result.labelMass,
      ...(result.label === null ? { unparsed: true } : {}),
    },
  };
}
