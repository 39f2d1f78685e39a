import { AsyncLocalStorage } from 'node:async_hooks';
import { wrapModel, type ModelMiddleware } from '../llm/middleware';
import type { GenerateResult, JudgeResult, LanguageModel } from '../llm/types';
import type { ScoredPassage } from '../retrieval/types';
import type {
  LlmCallRecord,
  Decisions,
  ParseFailure,
  PipelineName,
  RetrievalRecord,
  SpanFields,
  StepRecord,
  Trace,
  TraceWarning,
} from './types';
import { callsUsage, tokenFields } from './usage';

/** Epoch milliseconds with sub-millisecond resolution (µs), monotonic within the process. */
function nowMs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000) / 1000;
}

/** A record's place on the timeline as the recorder hands it out: start, own id, enclosing step. */
export type SpanStamp = Required<Pick<SpanFields, 'startedAt' | 'spanId'>> & Pick<SpanFields, 'parentSpanId'>;

/**
 * The span the running async work is inside. Why AsyncLocalStorage rather than a stack on the
 * recorder or a parent passed by hand: a pipeline may run steps concurrently (Promise.all over
 * interpretations or samples), and a plain push/pop stack would then hand one branch's span to
 * the other's calls; passing the parent explicitly would thread a span argument through every
 * step function and `callLlm`. The store follows each branch through its awaits on its own.
 * One store serves every recorder (a frame names its owner): Node keeps each AsyncLocalStorage
 * instance alive and visits it at every async hop once used, so one per question would grow with
 * the run.
 */
interface SpanFrame {
  owner: TraceRecorder;
  spanId: string;
  outer: SpanFrame | undefined;
}
const activeSpan = new AsyncLocalStorage<SpanFrame>();

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
  /** The steps opened with `span`, in the order they began. */
  readonly steps: StepRecord[] = [];
  demoIds: string[] = [];
  /** The pipeline's resolved options, copied into the trace. */
  options?: Record<string, unknown>;
  readonly llm: LanguageModel;
  private readonly startedAt = performance.now();
  /** Epoch ms of the same instant, for the trace's timeline. */
  private readonly startedAtMs = nowMs();
  private spanCount = 0;

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
    // Stamped before the call: its start, and the step it was made in (read here, in the caller's
    // async context).
    const stamp = () => this.stamp();
    return {
      name: 'trace',
      async generate(request, next) {
        const at = stamp();
        const result = await next(request);
        calls.push(toCallRecord(calls.length, result, at));
        // Provider work-arounds (e.g. samples drawn one by one instead of batched) stay visible.
        for (const message of result.warnings ?? []) warnings.push({ purpose: result.request.purpose, message });
        return result;
      },
      async judge(request, next) {
        const at = stamp();
        const result = await next(request);
        calls.push({ ...toJudgeRecord(calls.length, result, at), ...(judgedBy ? { model: judgedBy } : {}) });
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

  /**
   * The span the caller runs inside (`span`), for this recorder; undefined at the question's top
   * level.
   */
  get currentSpanId(): string | undefined {
    for (let frame = activeSpan.getStore(); frame; frame = frame.outer) if (frame.owner === this) return frame.spanId;
    return undefined;
  }

  /** A new span id (`s1`, `s2`, … in the order handed out), starting now inside the current span. */
  stamp(): SpanStamp {
    const parentSpanId = this.currentSpanId;
    this.spanCount += 1;
    return { startedAt: nowMs(), spanId: `s${this.spanCount}`, ...(parentSpanId ? { parentSpanId } : {}) };
  }

  /**
   * Run one step of the method as a span: calls, retrievals and steps inside `fn` (awaited or
   * started from it, concurrently too) name it as their parent. The step is recorded when it
   * begins, so `steps` is in start order; an error is recorded on it and rethrown.
   */
  async span<T>(name: string, attributes: Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T> {
    const at = this.stamp();
    const step: StepRecord = { name, ...at, endedAt: at.startedAt, attributes: { ...attributes } };
    this.steps.push(step);
    try {
      return await activeSpan.run({ owner: this, spanId: at.spanId, outer: activeSpan.getStore() }, fn);
    } catch (error) {
      step.error = error instanceof Error ? error.message : String(error);
      throw error;
    } finally {
      step.endedAt = nowMs();
    }
  }

  /**
   * Record a search (or rerank) and its hits. `startedAt` (`rec.now()` taken before the search)
   * gives the record its start and duration; without it the retrieval is a point at the moment it
   * is recorded.
   */
  recordRetrieval(
    purpose: string,
    retriever: string,
    query: string,
    k: number,
    hits: ScoredPassage[],
    reranker?: string,
    startedAt?: number,
  ): void {
    const at = this.stamp();
    const start = startedAt ?? at.startedAt;
    this.retrievals.push({
      index: this.retrievals.length,
      purpose,
      retriever,
      query,
      k,
      hits: hits.map((h) => ({ id: h.passage.id, score: h.score })),
      ...(reranker ? { reranker } : {}),
      ...at,
      startedAt: start,
      wallSeconds: Math.round(Math.max(0, at.startedAt - start) * 1000) / 1e6,
    });
  }

  /** Epoch ms now, on the recorder's clock: take it before a search and pass it to `recordRetrieval`. */
  now(): number {
    return nowMs();
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
      startedAt: this.startedAtMs,
      llmCalls: this.llmCalls,
      retrievals: this.retrievals,
      steps: this.steps,
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

function toCallRecord(index: number, result: GenerateResult, at: SpanStamp): LlmCallRecord {
  const r = result.request;
  return {
    index,
    ...at,
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
      ...(c.cachedFrom !== undefined ? { cachedFrom: c.cachedFrom } : {}),
      ...(c.logprob !== undefined ? { logprob: c.logprob } : {}),
      ...(c.costUsd !== undefined ? { costUsd: c.costUsd } : {}),
    })),
    wallSeconds: result.wallSeconds,
  };
}

function toJudgeRecord(index: number, result: JudgeResult, at: SpanStamp): LlmCallRecord {
  const r = result.request;
  return {
    index,
    ...at,
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
        ...(result.cachedFrom !== undefined ? { cachedFrom: result.cachedFrom } : {}),
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
