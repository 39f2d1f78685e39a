/**
 * Scoring one example and aggregating a run, both derived from the metric registry
 * (registry.ts): the glue between the metric families and the experiment runner / `ambiqa score`.
 *
 * Metric names (all per-example values on the 0–100 scale):
 *   em, f1          SQuAD exact match / token F1 of the short answer, max over gold answers
 *   str_em, str_hit ALCE STR-EM / STR-HIT of the long answer (ASQA)
 *   rougeL          ROUGE-L F of the long answer, max over reference long answers, no sentence split
 *   rougeLsum       ROUGE-Lsum F with Punkt sentences (ASQA's "ROUGE-L"), max over references
 *   d_f1            Disambig-F1 with the run's fixed reader (its name is reported)
 *   dr              sqrt(D-F1 × ROUGE-Lsum); run level: from the run-level means
 *   accuracy        FEVER label accuracy
 *   em_alt, f1_alt  EM / F1 counting the authors' alternative answers (adversarial HotpotQA)
 *   auc             VE accuracy–coverage AUC ranked by consistency (run level only; correctness =
 *                   accuracy for FEVER, em_alt where present, EM otherwise)
 *   auc_logprob     the same AUC ranked by the final answer's log-probability (the released code's)
 * Per example, `auc` stores `consistency` (100 × votes / samples) and `auc_logprob` stores
 * `answer_logprob` (natural log), from which the run-level AUCs are computed.
 */
import type { DatasetName, Example } from '../datasets/types';
import { emptyUsage } from '../llm/types';
import { addUsage } from '../llm/usage';
import type { RunMetrics, MetricAggregate, QuestionScores } from '../run-files';
import type { TraceSummary } from '../trace/types';
import { summaryUsage } from '../trace/usage';
import type { BootstrapOptions } from './bootstrap';
import { checkMetrics, metricFamilies, metricNames, splitterMetricNames, withRequirements } from './registry';
import type { DisambigReader, Score } from './score';
import { defaultSentenceSplitter, type SentenceSplitter } from './sentences';
import { metricAggregate, type TrialKeyed } from './trials';

export { checkMetrics, defaultMetrics, isMetricName, metricNames, metricsFor, type MetricName } from './registry';

/** What a system produced for one example. */
export interface Prediction {
  /** The long answer (ASQA) or the full output text. */
  output?: string;
  /** The short answer / label (EM, F1, accuracy datasets). */
  answer?: string;
  /** Majority votes / samples in [0, 1] (Verify-and-Edit); needed for `auc`. */
  consistency?: number;
  /** The final answer's log-probability (Verify-and-Edit); needed for `auc_logprob`. */
  answerLogprob?: number;
}

export interface ScoreOptions {
  /** Needed for d_f1 and dr. */
  reader?: DisambigReader;
  /** Sentence splitter for rougeLsum (default: Punkt from the data dir, else the labelled fallback). */
  splitter?: SentenceSplitter;
}

export interface ExampleScores {
  /** Per-example values, 0–100; a metric undefined for this example is absent (see `notes`). */
  metrics: Record<string, number>;
  /**
   * Every score with its reason and metadata, as a results row keeps it (`QuestionScores`):
   * a metric undefined for this example is here with value null and its reason.
   */
  scores: QuestionScores;
  /** What each metric's scorer reported beside its value (splitter, reader, spans, hits …). */
  metadata: Record<string, Record<string, unknown>>;
  /** ASQA: per-DQ STR-EM hits, in the file's order. */
  dqHits?: boolean[];
  /** D-F1: the reader's span per DQ. */
  readerSpans?: string[];
  /** FEVER: the label read from the prediction (null: none recognised). */
  predictedLabel?: string | null;
  /** Why a metric is missing, e.g. "str_em: no qa_pairs". */
  notes: string[];
}

/**
 * Score one prediction with the registry's families, in registry order (a family may read the
 * values of those before it; required metrics are computed and kept). The text scored is
 * `output` for ASQA (falling back to `answer`) and `answer` for the short-answer datasets
 * (falling back to `output`); a missing text is ''.
 */
export async function scoreExample(
  dataset: DatasetName,
  example: Example,
  prediction: Prediction,
  metrics: readonly string[],
  options: ScoreOptions = {},
): Promise<ExampleScores> {
  const wanted = new Set(withRequirements(checkMetrics(dataset, metrics, 'metrics')));
  const out: ExampleScores = { metrics: {}, scores: {}, metadata: {}, notes: [] };
  const text = (dataset === 'asqa' ? (prediction.output ?? prediction.answer) : (prediction.answer ?? prediction.output)) ?? '';
  const splitter = [...wanted].some((m) => splitterMetricNames.has(m)) ? (options.splitter ?? defaultSentenceSplitter()) : undefined;
  const record = (s: Score): void => {
    if (s.metadata) out.metadata[s.name] = s.metadata;
    const value = s.score === null || Number.isNaN(s.score) ? null : s.score;
    out.scores[s.name] = { value, ...(value === null ? { reason: s.reason ?? 'undefined for this example' } : s.reason ? { reason: s.reason } : {}), ...(s.metadata ? { metadata: s.metadata } : {}) };
    if (s.score === null || Number.isNaN(s.score)) out.notes.push(`${s.name}: ${s.reason ?? 'undefined for this example'}`);
    else out.metrics[s.name] = s.score;
  };
  for (const family of metricFamilies) {
    const want = new Set(family.metrics.filter((m) => wanted.has(m)));
    if (want.size === 0) continue;
    const scores = await family.score(
      {
        dataset,
        example,
        text,
        ...(prediction.consistency !== undefined ? { consistency: prediction.consistency } : {}),
        ...(prediction.answerLogprob !== undefined ? { answerLogprob: prediction.answerLogprob } : {}),
        ...(options.reader ? { reader: options.reader } : {}),
        ...(splitter ? { splitter } : {}),
        scores: out.metrics,
      },
      want,
    );
    scores.forEach(record);
  }
  const hits = out.metadata.str_em?.dq_hits ?? out.metadata.str_hit?.dq_hits;
  if (Array.isArray(hits)) out.dqHits = hits as boolean[];
  const spans = out.metadata.d_f1?.spans;
  if (Array.isArray(spans)) out.readerSpans = spans as string[];
  if (out.metadata.accuracy && 'predicted_label' in out.metadata.accuracy) out.predictedLabel = out.metadata.accuracy.predicted_label as string | null;
  return out;
}

/**
 * The usage part of a per-example row (ExampleResult.usage; absent rows count zero), with the
 * question id and trial that group a run's rows under `trials: k` (trials.ts).
 */
type Row = TrialKeyed & { metrics: Record<string, number>; usage?: Partial<TraceSummary> };

/** Order in which aggregated metrics are listed. */
const ORDER: readonly string[] = [...metricNames, 'consistency', 'answer_logprob'];

/**
 * Run-level metrics: the mean of each per-example metric with a seeded bootstrap 95% CI over the
 * examples that have it (under trials — some row with `trial` > 0 — the mean of per-question
 * means with the two-level bootstrap, `trials`, `trialSd` and `samplingShare`: trials.ts), except where a family defines its run-level value itself (`dr` from the
 * run-level means, `auc` from consistency and correctness; see their families). Usage sums the
 * rows' usage.
 */
export function aggregate(perExample: readonly Row[], options: BootstrapOptions = {}): RunMetrics {
  const names = new Set<string>();
  for (const r of perExample) for (const k of Object.keys(r.metrics)) names.add(k);
  const sorted = [...names].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
  const own = new Set<string>(metricFamilies.filter((f) => f.aggregate).flatMap((f) => f.metrics));
  const computed: Record<string, MetricAggregate> = {};
  for (const name of sorted) {
    if (own.has(name)) continue;
    const agg = metricAggregate(perExample, name, options);
    if (agg) computed[name] = agg;
  }
  // Families with their own run-level statistic (each returns nothing when no row has its inputs).
  for (const family of metricFamilies) if (family.aggregate) Object.assign(computed, family.aggregate(perExample, options));
  const metrics: Record<string, MetricAggregate> = {};
  for (const name of [...sorted, ...Object.keys(computed)]) if (computed[name] && !metrics[name]) metrics[name] = computed[name];
  // A row without usage made no recorded calls (predictions scored by `ambiqa score`).
  const total = perExample.map((r) => (r.usage ? summaryUsage(r.usage) : emptyUsage())).reduce(addUsage, emptyUsage());
  return {
    n: perExample.length,
    metrics,
    usage: {
      llm_calls: total.calls,
      ...(total.promptTokens !== undefined ? { prompt_tokens: total.promptTokens } : {}),
      ...(total.completionTokens !== undefined ? { completion_tokens: total.completionTokens } : {}),
      cache_hits: total.cacheHits,
      wall_seconds: perExample.reduce((s, r) => s + (Number(r.usage?.seconds) || 0), 0),
    },
  };
}
