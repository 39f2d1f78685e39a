/**
 * One question's record (a results.jsonl row, format 3: src/run-files) is built here and only
 * here: the run loop calls `questionRecord` for every question it answered or failed, so that a
 * row always carries the question, its target (the gold the dataset's metrics read), the output,
 * and every score with its reason and metadata. `exampleOfRecord` turns a row back into the
 * example its metrics need, which is how `ambiqa score` re-scores a run without the dataset file.
 */
import { exampleGroups } from '../datasets/groups';
import type { DatasetName, Example } from '../datasets/types';
import type { ExampleResult, LabelledJudgment, QuestionScores, QuestionTarget } from '../run-files';
import type { TraceSummary } from '../trace/types';

/** What the pipeline returned for the question (its trace's summary is the row's usage). */
export interface AnsweredOutput {
  output: string;
  answer?: string;
  /** The method's signals as its output handed them over (`PipelineOutput`); kept on the row. */
  confidence?: number;
  answerLogprob?: number;
  trace: { summary: TraceSummary };
}

export type QuestionOutcome = { answered: AnsweredOutput } | { error: string };

/**
 * What a row records beside the question's answer: the run's `groupBy` fields (its `groups`), and
 * under `trials: k` which answer of the question it is.
 */
export interface RecordOptions {
  groupBy?: readonly string[] | undefined;
  /**
   * Which answer of the question this is, under `trials: k` (0 … k−1); absent for a run without
   * trials, whose rows carry no `trial` (as before trials existed).
   */
  trial?: number;
}

/**
 * The row of one question. `scores` as the run's scorer returned them; `judgments` the question's
 * labelled judgments (left out when there are none). A failed question has an empty output, no
 * usage and its error, and still its target, scores (of the empty output) and groups.
 */
export function questionRecord(
  example: Example,
  index: number,
  outcome: QuestionOutcome,
  scores: QuestionScores,
  judgments: readonly LabelledJudgment[] = [],
  options: RecordOptions = {},
): ExampleResult {
  const groups = options.groupBy && options.groupBy.length > 0 ? { groups: exampleGroups(example, options.groupBy) } : {};
  const head = {
    format: 3 as const,
    id: example.id,
    index,
    ...(options.trial !== undefined ? { trial: options.trial } : {}),
    question: example.question,
    target: targetOf(example),
    ...groups,
  };
  if ('error' in outcome) return { ...head, output: '', scores, usage: emptySummary(), error: outcome.error };
  const out = outcome.answered;
  return {
    ...head,
    output: out.output,
    ...(out.answer !== undefined ? { answer: out.answer } : {}),
    scores,
    usage: out.trace.summary,
    ...(judgments.length > 0 ? { judgments: [...judgments] } : {}),
    // The method's signals, as its output handed them over (`ambiqa score`, figures read them here).
    ...(out.confidence !== undefined ? { confidence: out.confidence } : {}),
    ...(out.answerLogprob !== undefined ? { answerLogprob: out.answerLogprob } : {}),
  };
}

/**
 * The gold of an example that its metrics, judge labels, figures and the report read. Passages,
 * the rationale and loader-specific `meta` stay in the dataset: no metric reads them.
 */
export function targetOf(example: Example): QuestionTarget {
  return {
    answers: [...example.answers],
    qaPairs: example.qaPairs.map((q) => ({ question: q.question, shortAnswers: [...q.shortAnswers] })),
    longAnswers: [...example.longAnswers],
    ...(example.label !== undefined ? { label: example.label } : {}),
    ...(example.alternativeAnswers !== undefined ? { alternativeAnswers: [...example.alternativeAnswers] } : {}),
    ...(example.sourceId !== undefined ? { sourceId: example.sourceId } : {}),
  };
}

/** The example a row was scored as (no passages: no metric reads them), or undefined for a row without a target (formats 1 and 2). */
export function exampleOfRecord(row: ExampleResult, dataset: DatasetName): Example | undefined {
  const t = row.target;
  if (!t) return undefined;
  return {
    id: row.id,
    dataset,
    question: row.question,
    answers: t.answers,
    qaPairs: t.qaPairs,
    longAnswers: t.longAnswers,
    passages: [],
    ...(t.label !== undefined ? { label: t.label } : {}),
    ...(t.alternativeAnswers !== undefined ? { alternativeAnswers: t.alternativeAnswers } : {}),
    ...(t.sourceId !== undefined ? { sourceId: t.sourceId } : {}),
  };
}

function emptySummary(): TraceSummary {
  return { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 };
}
