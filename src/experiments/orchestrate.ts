import type { Example } from '../datasets/types';
import type { LanguageModel, UsageTotals } from '../llm/types';
import type { UsageMeter } from '../llm/usage';
import { CostLimitError } from '../llm/budget';
import type { PriceSource } from '../llm/pricing';
import type { Pipeline, PipelineContext, PipelineOutput } from '../pipelines/types';
import { questionKey } from '../retrieval/types';
import type { Trace } from '../trace/types';
import { JsonlAppender, writeJsonlAtomic } from '../common/jsonl';
import type { ProgressSink, ProgressState } from './progress';
import { type ExampleResult, type LabelledJudgment, type MetricAggregate, type QuestionScores, readResults, readTraces } from '../run-files';
import { questionRecord } from './record';
import type { IndexedExample } from './run-state';

/** What a run is made of; built from a config by `compose.ts`, or by hand in tests. */
export interface RunComponents {
  /** The run's whole selection (sampling and limit applied, not the shard), in evaluation order. */
  examples: Example[];
  pipeline: Pipeline;
  /**
   * Shared by all examples. `llm` is the `llm:` section's client; the runner wraps it once per
   * session in the run's layers (signal, cost cap, meter, judge routing: `runModel`).
   */
  context: PipelineContext;
  /** The client of the config's `judge:` section, when it has one: the runner routes judgments to it. */
  judge?: LanguageModel;
  /** The question's scores with their reasons and metadata (kept whole in its row; `scoreValues` gives the numbers). */
  score(example: Example, output: { output: string; answer?: string; trace?: Trace }): Promise<QuestionScores> | QuestionScores;
  aggregate(results: ExampleResult[]): Record<string, MetricAggregate>;
  /**
   * How the numbers were measured, resolved when the parts were built (e.g. `metric.reader`,
   * `metric.sentence_splitter`): logged as MLflow params beside the config and kept in
   * `metrics.json` as `settings`, so a report states them.
   */
  settings?: Record<string, string>;
  /**
   * The question's graded judgments with silver labels from the gold data (and the corpus for
   * passage-based labels), stored in its result (`ExampleResult.judgments`); absent: none stored.
   */
  labelJudgments?(example: Example, trace: Trace): LabelledJudgment[];
  /** The run model's price and where it came from (absent: unknown, no `cost_usd`). */
  price?: PriceSource;
  /**
   * This run's hits and misses of the persistent retrieval cache (src/retrieval/remote/cache.ts),
   * reported as `retrieval_cache_hits` / `retrieval_cache_misses`; absent: no cached retriever.
   */
  retrievalCache?(): { hits: number; misses: number } | undefined;
}

export interface AnswerRequest {
  components: RunComponents;
  todo: IndexedExample[];
  /** Examples of this shard (for the progress total). */
  total: number;
  /** Finished in earlier sessions. */
  resumedCount: number;
  concurrency: number;
  /** Stop after this many errors in a row with no success in this session. */
  maxConsecutiveErrors: number;
  resultsPath: string;
  tracesPath: string;
  progress: ProgressSink;
  signal?: AbortSignal;
  /** The run model's meter (runModel): this session's usage so far, batch-calibration judgments included. */
  meter: UsageMeter;
  /** Called after each example's result line is written, with the example's trace and this session's usage so far. */
  onAnswered(result: ExampleResult, done: number, trace: Trace, usage: UsageTotals): void;
}

export interface AnswerOutcome {
  /** The run's own signal fired (Ctrl-C, a kernel interrupt, or too many errors). */
  interrupted: boolean;
  /** Set when the session gave up after a run of errors. */
  fatal?: string;
  /** Set when the cost cap stopped the session (resumable, like an interrupt). */
  stoppedBy?: string;
  answeredNow: number;
  progress: ProgressState;
  usage: UsageTotals;
}

/**
 * Answers `todo` with a pool of `concurrency` workers. Each finished example's trace and then its
 * result are appended (fsynced) to the run files, so a result line marks an example done. An
 * interrupt abandons examples in flight: they are not written and are answered on resume.
 */
export async function answerExamples(request: AnswerRequest): Promise<AnswerOutcome> {
  const { components, todo, progress } = request;
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort(request.signal?.reason);
  if (request.signal?.aborted) abort.abort(request.signal.reason);
  request.signal?.addEventListener('abort', onOuterAbort, { once: true });
  // `components.context.llm` is the run's model (runner.ts: signal, cost cap, meter). When the cap
  // stops a call it aborts the session's signal with its error, which stops this pool like
  // Ctrl-C: questions in flight are abandoned and answered on resume, where the cache replays
  // their finished calls.
  const context: PipelineContext = { ...components.context, signal: abort.signal };

  const resultsOut = new JsonlAppender(request.resultsPath);
  const tracesOut = new JsonlAppender(request.tracesPath);
  const state: ProgressState = {
    done: request.resumedCount,
    total: request.total,
    resumed: request.resumedCount,
    errors: 0,
    usage: sessionUsage(),
    ...(components.price?.free ? { costFree: true } : {}),
  };
  function sessionUsage(): UsageTotals {
    return request.meter.snapshot();
  }
  const syncProgress = () => {
    state.usage = sessionUsage();
  };
  const ticker = setInterval(() => {
    syncProgress();
    progress.update(state);
  }, 1000);
  ticker.unref();
  progress.update(state);

  let consecutiveErrors = 0;
  let successesNow = 0;
  let answeredNow = 0;
  let fatal: string | undefined;
  let next = 0;

  const answerOne = async ({ example, index }: IndexedExample): Promise<void> => {
    let out: PipelineOutput;
    try {
      // A retriever with a per-question view (`retriever.exclude: own`) is scoped to this question.
      const retriever = context.retriever?.forQuestion?.(questionKey(example.dataset, example.sourceId ?? example.id));
      out = await components.pipeline.answer(example, retriever ? { ...context, retriever } : context);
    } catch (error) {
      if (abort.signal.aborted) return; // abandoned by Ctrl-C: not done, answered again on resume
      const message = error instanceof Error ? error.message : String(error);
      const scores = await components.score(example, { output: '' });
      resultsOut.append(questionRecord(example, index, { error: message }, scores));
      state.errors += 1;
      consecutiveErrors += 1;
      if (successesNow === 0 && consecutiveErrors >= request.maxConsecutiveErrors) {
        fatal = `${consecutiveErrors} examples failed in a row and none succeeded; last error: ${message}`;
        abort.abort(new Error(fatal));
      }
      return;
    }
    const scores = await components.score(example, out);
    const judgments = components.labelJudgments?.(example, out.trace) ?? [];
    const result = questionRecord(example, index, { answered: out }, scores, judgments);
    // The trace goes first: a result line is the mark that an example is done.
    tracesOut.append(out.trace);
    resultsOut.append(result);
    consecutiveErrors = 0;
    successesNow += 1;
    answeredNow += 1;
    state.done += 1;
    request.onAnswered(result, state.done, out.trace, sessionUsage());
    syncProgress();
    progress.update(state);
  };

  const worker = async () => {
    while (!abort.signal.aborted && next < todo.length) {
      const item = todo[next++];
      await answerOne(item);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(request.concurrency, Math.max(1, todo.length)) }, worker));
  } finally {
    clearInterval(ticker);
    request.signal?.removeEventListener('abort', onOuterAbort);
    resultsOut.close();
    tracesOut.close();
  }
  syncProgress();
  const reason: unknown = abort.signal.reason;
  return {
    interrupted: abort.signal.aborted,
    ...(fatal ? { fatal } : {}),
    ...(reason instanceof CostLimitError ? { stoppedBy: reason.message } : {}),
    answeredNow,
    progress: state,
    usage: state.usage,
  };
}

/**
 * The latest result of each selected example, in evaluation order. With `rewrite`, both files are
 * rewritten in that order, one line per example, so that an interrupted and resumed run leaves
 * the same files as an uninterrupted one.
 */
export function collectResults(selection: IndexedExample[], resultsPath: string, tracesPath: string, rewrite: boolean): ExampleResult[] {
  const latest = new Map<string, ExampleResult>();
  for (const r of readResults(resultsPath)) latest.set(r.id, r);
  const ordered = selection.map((x) => latest.get(x.example.id)).filter((r): r is ExampleResult => r !== undefined);
  if (rewrite) {
    writeJsonlAtomic(resultsPath, ordered);
    const traces = new Map<string, Trace>();
    for (const t of readTraces(tracesPath)) traces.set(t.questionId, t);
    writeJsonlAtomic(
      tracesPath,
      ordered.map((r) => traces.get(r.id)).filter((t): t is Trace => t !== undefined),
    );
  }
  return ordered;
}
