import type { Example } from '../datasets/types';
import type { LanguageModel } from '../llm/types';
import { CostLimitError } from '../llm/budget';
import { inTrial } from '../llm/trial';
import type { PriceSource } from '../llm/pricing';
import type { Pipeline, PipelineContext, PipelineOutput } from '../pipelines/types';
import { questionKey } from '../retrieval/types';
import type { Trace } from '../trace/types';
import type { ExampleResult, LabelledJudgment, MetricAggregate, QuestionScores, RunProvenance } from '../run-files';
import { questionRecord } from './record';
import type { WorkItem } from './run-state';

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
  /**
   * What `ambiqa reproduce` checks (code version, data and model checksums, engine build),
   * written to the run's `provenance.json` when it starts; absent: none written (tests' parts).
   */
  provenance?: RunProvenance;
}

export interface AnswerRequest {
  /** The run's parts; `context.llm` is the session's model (capped, metered, stopped by the session's signal: runner.ts). */
  components: RunComponents;
  /** The (question, trial) pairs to answer, in the order they are taken. */
  todo: WorkItem[];
  concurrency: number;
  /** Stop after this many errors in a row with no success in this session. */
  maxConsecutiveErrors: number;
  /**
   * The session's controller: its signal (Ctrl-C, the cost cap) stops the loop, and the loop
   * aborts it when it gives up after a run of errors.
   */
  session: AbortController;
  /** The run's `groupBy` fields: each row records its question's group under each (`groups`). */
  groupBy?: readonly string[] | undefined;
  /**
   * A question (under `trials: k`, one trial of it) is done (answered: with its trace; failed:
   * `row.error`, no trace). Awaited before the worker takes the next.
   */
  onQuestion(row: ExampleResult, trace: Trace | undefined): void | Promise<void>;
}

export interface AnswerOutcome {
  /** The session's signal fired (Ctrl-C, a kernel interrupt, the cost cap, or too many errors). */
  interrupted: boolean;
  /** Set when the session gave up after a run of errors. */
  fatal?: string;
  /** Set when the cost cap stopped the session (resumable, like an interrupt). */
  stoppedBy?: string;
  answeredNow: number;
}

/**
 * Answers `todo` with a pool of `concurrency` workers and hands each finished question to
 * `onQuestion` (the runner emits it to the run's observers, which write it). An interrupt
 * abandons questions in flight: they are not emitted and are answered on resume, where the
 * cache replays their finished calls. Under `trials: k` an item is one trial of a question: the
 * pipeline runs inside `inTrial`, so the run model's `trial` layer gives its sampled calls that
 * trial's sample indexes, and its row and trace carry `trial`.
 */
export async function answerExamples(request: AnswerRequest): Promise<AnswerOutcome> {
  const { components, todo, session } = request;
  const signal = session.signal;
  const context: PipelineContext = { ...components.context, signal };

  let consecutiveErrors = 0;
  let successesNow = 0;
  let answeredNow = 0;
  let fatal: string | undefined;
  let next = 0;

  const answerOne = async ({ example, index, trial }: WorkItem): Promise<void> => {
    // What the row records beside the answer: its groups, and under trials which trial it is.
    const record = { groupBy: request.groupBy, ...(trial !== undefined ? { trial } : {}) };
    let out: PipelineOutput;
    try {
      // A retriever with a per-question view (`retriever.exclude: own`) is scoped to this question.
      const retriever = context.retriever?.forQuestion?.(questionKey(example.dataset, example.sourceId ?? example.id));
      out = await inTrial(trial ?? 0, () => components.pipeline.answer(example, retriever ? { ...context, retriever } : context));
    } catch (error) {
      if (signal.aborted) return; // abandoned by Ctrl-C: not done, answered again on resume
      const message = error instanceof Error ? error.message : String(error);
      const scores = await components.score(example, { output: '' });
      await request.onQuestion(questionRecord(example, index, { error: message }, scores, [], record), undefined);
      consecutiveErrors += 1;
      if (successesNow === 0 && consecutiveErrors >= request.maxConsecutiveErrors) {
        fatal = `${consecutiveErrors} examples failed in a row and none succeeded; last error: ${message}`;
        session.abort(new Error(fatal));
      }
      return;
    }
    const scores = await components.score(example, out);
    const judgments = components.labelJudgments?.(example, out.trace) ?? [];
    consecutiveErrors = 0;
    successesNow += 1;
    answeredNow += 1;
    const trace: Trace = trial !== undefined ? { ...out.trace, trial } : out.trace;
    await request.onQuestion(questionRecord(example, index, { answered: out }, scores, judgments, record), trace);
  };

  const worker = async () => {
    while (!signal.aborted && next < todo.length) {
      const item = todo[next++];
      await answerOne(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(request.concurrency, Math.max(1, todo.length)) }, worker));
  const reason: unknown = signal.reason;
  return {
    interrupted: signal.aborted,
    ...(fatal ? { fatal } : {}),
    ...(reason instanceof CostLimitError ? { stoppedBy: reason.message } : {}),
    answeredNow,
  };
}
