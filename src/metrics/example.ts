/**
 * Scoring one example and aggregating a run: the glue between the metric families and the
 * experiment runner / `ambiqa score`.
 *
 * Metric names (all per-example values on the 0–100 scale):
 *   em, f1          SQuAD exact match / token F1 of the short answer, max over gold answers
 *   str_em, str_hit ALCE STR-EM / STR-HIT of the long answer (ASQA)
 *   rougeL          ROUGE-L F of the long answer, max over reference long answers, no sentence split
 *   rougeLsum       ROUGE-Lsum F with Punkt sentences (ASQA's "ROUGE-L"), max over references
 *   d_f1            Disambig-F1 with the configured reader (its name is reported)
 *   dr              sqrt(D-F1 × ROUGE-Lsum); run level: from the run-level means
 *   accuracy        FEVER label accuracy
 *   auc             VE accuracy–coverage AUC (run level only; needs the prediction's consistency;
 *                   correctness = accuracy for FEVER, EM otherwise)
 * Per example, `auc` stores `consistency` (100 × votes / samples) from which the run-level AUC is
 * computed.
 */
import type { DatasetName, Example } from '../datasets/types';
import { AmbiqaError } from '../errors';
import type { RunMetrics, MetricAggregate } from '../experiments/results';
import type { TraceSummary } from '../trace/types';
import { bootstrapInterval, bootstrapMean, type BootstrapOptions } from './bootstrap';
import { accuracyCoverageAuc } from './calibration';
import { disambigF1, type DisambigReader } from './disambig-f1';
import { drScore } from './dr';
import { normalizeFeverLabel } from './fever';
import { maxFOverReferences, rougeL, rougeLsum } from './rouge';
import { defaultSentenceSplitter, type SentenceSplitter } from './sentences';
import { exactMatch, maxOverGolds, tokenF1 } from './squad';
import { dqHits } from './str-em';

export const metricNames = ['em', 'f1', 'str_em', 'str_hit', 'rougeL', 'rougeLsum', 'd_f1', 'dr', 'accuracy', 'auc'] as const;
export type MetricName = (typeof metricNames)[number];

const ALLOWED: Record<DatasetName, readonly MetricName[]> = {
  asqa: ['str_em', 'str_hit', 'rougeL', 'rougeLsum', 'd_f1', 'dr'],
  ambignq: ['em', 'f1', 'auc'],
  situatedqa: ['em', 'f1', 'auc'],
  'hotpotqa-adversarial': ['em', 'f1', 'auc'],
  fever: ['accuracy', 'auc'],
};

const DEFAULTS: Record<DatasetName, readonly MetricName[]> = {
  asqa: ['str_em', 'str_hit', 'rougeLsum', 'rougeL', 'd_f1', 'dr'],
  ambignq: ['em', 'f1'],
  situatedqa: ['em', 'f1'],
  'hotpotqa-adversarial': ['em', 'f1'],
  fever: ['accuracy'],
};

/** Metrics that make sense for a dataset. */
export function metricsFor(dataset: DatasetName): MetricName[] {
  return [...ALLOWED[dataset]];
}

/** Metrics computed when none are named (ASQA's D-F1 and DR included: they need a reader, see experiments/reader.ts). */
export function defaultMetrics(dataset: DatasetName): MetricName[] {
  return [...DEFAULTS[dataset]];
}

export function isMetricName(name: string): name is MetricName {
  return (metricNames as readonly string[]).includes(name);
}

/** Check a metric list for a dataset; throws an AmbiqaError naming the bad one and the allowed ones. */
export function checkMetrics(dataset: DatasetName, names: readonly string[], option = '--metrics'): MetricName[] {
  const allowed = ALLOWED[dataset];
  for (const name of names) {
    if (!isMetricName(name) || !allowed.includes(name)) {
      throw new AmbiqaError(`${option}: metric "${name}" is not available for ${dataset}`, `use some of: ${allowed.join(', ')}`);
    }
  }
  return [...new Set(names)] as MetricName[];
}

/** What a system produced for one example. */
export interface Prediction {
  /** The long answer (ASQA) or the full output text. */
  output?: string;
  /** The short answer / label (EM, F1, accuracy datasets). */
  answer?: string;
  /** Majority votes / samples in [0, 1] (Verify-and-Edit); needed for `auc`. */
  consistency?: number;
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
  /** ASQA: per-DQ STR-EM hits, in the file's order. */
  dqHits?: boolean[];
  /** D-F1: the reader's span per DQ. */
  readerSpans?: string[];
  /** FEVER: the label read from the prediction (null: none recognised). */
  predictedLabel?: string | null;
  /** Why a metric is missing or what was assumed, e.g. "str_em: no qa_pairs". */
  notes: string[];
}

/**
 * Score one prediction. The text scored is `output` for ASQA (falling back to `answer`) and
 * `answer` for the short-answer datasets (falling back to `output`); a missing text is ''.
 */
export async function scoreExample(
  dataset: DatasetName,
  example: Example,
  prediction: Prediction,
  metrics: readonly string[],
  options: ScoreOptions = {},
): Promise<ExampleScores> {
  const names = checkMetrics(dataset, metrics, 'metrics');
  const out: ExampleScores = { metrics: {}, notes: [] };
  const text = (dataset === 'asqa' ? (prediction.output ?? prediction.answer) : (prediction.answer ?? prediction.output)) ?? '';
  const want = (m: MetricName): boolean => names.includes(m);
  const set = (m: string, v: number | null, why: string): void => {
    if (v === null || Number.isNaN(v)) out.notes.push(`${m}: ${why}`);
    else out.metrics[m] = v;
  };

  if (want('em')) set('em', example.answers.length ? 100 * maxOverGolds(exactMatch, text, example.answers) : null, 'no gold answers');
  if (want('f1')) set('f1', example.answers.length ? 100 * maxOverGolds(tokenF1, text, example.answers) : null, 'no gold answers');

  if (want('str_em') || want('str_hit')) {
    if (example.qaPairs.length === 0) {
      if (want('str_em')) out.notes.push('str_em: no qa_pairs');
      if (want('str_hit')) out.notes.push('str_hit: no qa_pairs');
    } else {
      const hits = dqHits(example.qaPairs, text);
      out.dqHits = hits;
      if (want('str_em')) out.metrics.str_em = (100 * hits.filter(Boolean).length) / hits.length;
      if (want('str_hit')) out.metrics.str_hit = hits.every(Boolean) ? 100 : 0;
    }
  }

  if (want('rougeL')) set('rougeL', example.longAnswers.length ? 100 * maxFOverReferences(example.longAnswers, text, rougeL) : null, 'no reference long answers');
  if (want('rougeLsum') || want('dr')) {
    const splitter = options.splitter ?? defaultSentenceSplitter();
    const v = example.longAnswers.length ? 100 * maxFOverReferences(example.longAnswers, text, (r, p) => rougeLsum(r, p, splitter)) : null;
    set('rougeLsum', v, 'no reference long answers');
  }

  if (want('d_f1') || want('dr')) {
    if (!options.reader) throw new AmbiqaError('d_f1 and dr need a reader', 'choose one: --reader llm or --reader qa-onnx:<folder>');
    if (example.qaPairs.length === 0) {
      out.notes.push('d_f1: no qa_pairs');
    } else {
      const r = await disambigF1(example.qaPairs, text, options.reader);
      out.metrics.d_f1 = r.score as number;
      out.readerSpans = r.spans;
    }
    if (want('dr') && out.metrics.d_f1 !== undefined && out.metrics.rougeLsum !== undefined) {
      out.metrics.dr = drScore(out.metrics.d_f1, out.metrics.rougeLsum);
    }
  }

  if (want('accuracy')) {
    const label = normalizeFeverLabel(text);
    out.predictedLabel = label;
    if (!example.label) out.notes.push('accuracy: no gold label');
    else out.metrics.accuracy = label === example.label ? 100 : 0;
    if (label === null) out.notes.push(`accuracy: no FEVER label recognised in ${JSON.stringify(text.slice(0, 60))}`);
  }

  if (want('auc')) {
    const c = prediction.consistency;
    if (c === undefined || !Number.isFinite(c) || c < 0 || c > 1) {
      out.notes.push('auc: the prediction has no consistency in [0, 1]');
    } else {
      out.metrics.consistency = 100 * c;
      // The correctness the AUC ranks; computed even when not requested by name.
      if (dataset === 'fever') {
        if (out.metrics.accuracy === undefined && example.label) out.metrics.accuracy = normalizeFeverLabel(text) === example.label ? 100 : 0;
      } else if (out.metrics.em === undefined && example.answers.length) {
        out.metrics.em = 100 * maxOverGolds(exactMatch, text, example.answers);
      }
    }
  }
  return out;
}

/** The usage part of a per-example row (ExampleResult.usage); absent rows count zero. */
type Row = { metrics: Record<string, number>; usage?: Partial<TraceSummary> };

/** Order in which aggregated metrics are listed. */
const ORDER: readonly string[] = [...metricNames, 'consistency'];

/**
 * Run-level metrics: the mean of each per-example metric with a seeded bootstrap 95% CI over the
 * examples that have it; `dr` = sqrt(mean d_f1 × mean rougeLsum) over examples having both (CI by
 * bootstrapping that statistic); `auc` from `consistency` and the correctness metric (accuracy
 * when present, else em), CI by bootstrap too. Usage sums the rows' usage.
 */
export function aggregate(perExample: readonly Row[], options: BootstrapOptions = {}): RunMetrics {
  const names = new Set<string>();
  for (const r of perExample) for (const k of Object.keys(r.metrics)) names.add(k);
  const sorted = [...names].sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
  const metrics: Record<string, MetricAggregate> = {};
  for (const name of sorted) {
    if (name === 'dr') continue;
    const values = perExample.map((r) => r.metrics[name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length > 0) metrics[name] = bootstrapMean(values, options);
  }
  if (names.has('dr')) {
    const both = perExample.filter((r) => Number.isFinite(r.metrics.d_f1) && Number.isFinite(r.metrics.rougeLsum));
    if (both.length > 0) {
      const d = both.map((r) => r.metrics.d_f1);
      const g = both.map((r) => r.metrics.rougeLsum);
      const stat = (idx: ArrayLike<number>): number => {
        let sd = 0;
        let sg = 0;
        for (let i = 0; i < idx.length; i++) {
          sd += d[idx[i]];
          sg += g[idx[i]];
        }
        return drScore(sd / idx.length, sg / idx.length);
      };
      const all = Array.from({ length: both.length }, (_, i) => i);
      const ci = bootstrapInterval(both.length, stat, options);
      metrics.dr = { mean: stat(all), ciLow: ci.low, ciHigh: ci.high, n: both.length };
    }
  }
  const withConsistency = perExample.filter((r) => Number.isFinite(r.metrics.consistency));
  if (withConsistency.length > 0) {
    const key = withConsistency.every((r) => Number.isFinite(r.metrics.accuracy)) ? 'accuracy' : 'em';
    const rows = withConsistency.filter((r) => Number.isFinite(r.metrics[key]));
    if (rows.length > 0) {
      const conf = rows.map((r) => r.metrics.consistency);
      const corr = rows.map((r) => r.metrics[key] / 100);
      const stat = (idx: ArrayLike<number>): number =>
        accuracyCoverageAuc(
          Array.from(idx, (i) => conf[i]),
          Array.from(idx, (i) => corr[i]),
        ) ?? NaN;
      const ci = bootstrapInterval(rows.length, stat, options);
      metrics.auc = { mean: accuracyCoverageAuc(conf, corr) as number, ciLow: ci.low, ciHigh: ci.high, n: rows.length };
    }
  }
  const sum = (k: keyof TraceSummary): number => perExample.reduce((s, r) => s + (Number(r.usage?.[k]) || 0), 0);
  return {
    n: perExample.length,
    metrics,
    usage: {
      llm_calls: sum('llmCalls'),
      prompt_tokens: sum('promptTokens'),
      completion_tokens: sum('completionTokens'),
      cache_hits: sum('cacheHits'),
      wall_seconds: sum('seconds'),
    },
  };
}
