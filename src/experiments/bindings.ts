import type { z } from 'zod';
import type { DatasetName, Example } from '../datasets/types';
import { seededRandom } from '../datasets/sample';
import { rougeL, rougeLsum, maxFOverReferences } from '../metrics/rouge';
import { defaultSentenceSplitter, type SentenceSplitter } from '../metrics/sentences';
import { exactMatch, maxOverGolds, normalizeAnswer, tokenF1 } from '../metrics/squad';
import { strEm } from '../metrics/str-em';
import { ClosedBookPipeline } from '../pipelines/baselines/closed-book';
import { CotScPipeline } from '../pipelines/baselines/cot-sc';
import { CotPipeline } from '../pipelines/baselines/cot';
import {
  closedBookOptionsSchema,
  cotOptionsSchema,
  cotScOptionsSchema,
  vanillaRagOptionsSchema,
} from '../pipelines/baselines/options';
import { VanillaRagPipeline } from '../pipelines/baselines/vanilla-rag';
import { ComboPipeline } from '../pipelines/combo';
import { comboOptionsSchema } from '../pipelines/combo/options';
import { DivaPipeline } from '../pipelines/diva';
import { divaOptionsSchema } from '../pipelines/diva/options';
import { TocPipeline } from '../pipelines/toc';
import { tocOptionsSchema } from '../pipelines/toc/options';
import type { Pipeline } from '../pipelines/types';
import { VerifyEditPipeline } from '../pipelines/verify-edit';
import { verifyEditOptionsSchema } from '../pipelines/verify-edit/options';
import type { PipelineName } from '../trace/types';
import type { ExampleResult, MetricAggregate } from './results';

/**
 * What the runner needs from the pipeline and metric modules, in one narrow place: the names,
 * option schemas and constructors of the pipelines, and per-example scores and aggregates with
 * bootstrap confidence intervals.
 */

// ------------------------------------------------------------------------------- pipelines

interface PipelineEntry {
  options: z.ZodType;
  create(options: never): Pipeline;
}

const pipelines: Record<PipelineName, PipelineEntry> = {
  'closed-book': { options: closedBookOptionsSchema, create: (o) => new ClosedBookPipeline(o) },
  'vanilla-rag': { options: vanillaRagOptionsSchema, create: (o) => new VanillaRagPipeline(o) },
  cot: { options: cotOptionsSchema, create: (o) => new CotPipeline(o) },
  'cot-sc': { options: cotScOptionsSchema, create: (o) => new CotScPipeline(o) },
  toc: { options: tocOptionsSchema, create: (o) => new TocPipeline(o) },
  'verify-edit': { options: verifyEditOptionsSchema, create: (o) => new VerifyEditPipeline(o) },
  diva: { options: divaOptionsSchema, create: (o) => new DivaPipeline(o) },
  combo: { options: comboOptionsSchema, create: (o) => new ComboPipeline(o) },
};

export const pipelineNames = Object.keys(pipelines) as PipelineName[];

export function pipelineOptionsSchema(name: string): z.ZodType | undefined {
  return (pipelines as Record<string, PipelineEntry | undefined>)[name]?.options;
}

/** A pipeline from already-validated options. */
export function createPipeline(name: PipelineName, options: Record<string, unknown>): Pipeline {
  const entry = pipelines[name];
  return entry.create(entry.options.parse(options) as never);
}

/** Pipelines that cannot run without a retriever (checked before any model loads). */
export const retrievalPipelines: ReadonlySet<PipelineName> = new Set(['vanilla-rag', 'toc', 'verify-edit', 'diva', 'combo']);

// --------------------------------------------------------------------------------- metrics

/** Metric name → per-example score (0–100), or null where it is undefined for the example. */
type MetricFn = (example: Example, output: { output: string; answer?: string }, ctx: { splitter: () => SentenceSplitter }) => number | null;

const shortAnswer = (o: { output: string; answer?: string }) => o.answer ?? o.output;

const metrics: Record<string, MetricFn> = {
  /** ASQA/ALCE STR-EM: share of DQs with a short answer contained in the output. */
  str_em: (e, o) => (e.qaPairs.length > 0 ? strEm(e.qaPairs, o.output) : null),
  /** ROUGE-Lsum against the reference long answers (max over references), Punkt sentences. */
  rougeLsum: (e, o, ctx) =>
    e.longAnswers.length > 0 ? 100 * maxFOverReferences(e.longAnswers, o.output, (r, p) => rougeLsum(r, p, ctx.splitter())) : null,
  /** Plain ROUGE-L (no sentence split). */
  rougeL: (e, o) => (e.longAnswers.length > 0 ? 100 * maxFOverReferences(e.longAnswers, o.output, rougeL) : null),
  /** SQuAD exact match of the short answer, max over gold answers. */
  em: (e, o) => (e.answers.length > 0 ? 100 * maxOverGolds(exactMatch, shortAnswer(o), e.answers) : null),
  /** SQuAD token F1 of the short answer. */
  f1: (e, o) => (e.answers.length > 0 ? 100 * maxOverGolds(tokenF1, shortAnswer(o), e.answers) : null),
  /** FEVER label accuracy (normalised label equality). */
  accuracy: (e, o) => {
    const gold = e.label ?? e.answers[0];
    if (gold === undefined) return null;
    return normalizeAnswer(shortAnswer(o)) === normalizeAnswer(gold) ? 100 : 0;
  },
};

export const metricNames = Object.keys(metrics);

export function defaultMetrics(dataset: DatasetName): string[] {
  switch (dataset) {
    case 'asqa':
      return ['str_em', 'rougeLsum', 'rougeL'];
    case 'ambignq':
      return ['str_em'];
    case 'fever':
      return ['accuracy'];
    default:
      return ['em', 'f1'];
  }
}

export function createScorer(names: string[]): (example: Example, output: { output: string; answer?: string }) => Record<string, number> {
  let splitter: SentenceSplitter | undefined;
  const ctx = { splitter: () => (splitter ??= defaultSentenceSplitter()) };
  return (example, output) => {
    const out: Record<string, number> = {};
    for (const name of names) {
      const v = metrics[name](example, output, ctx);
      if (v !== null) out[name] = v;
    }
    return out;
  };
}

/**
 * Mean of each metric over the examples that have it, with a percentile bootstrap 95% CI (1,000
 * resamples, fixed seed, so the same results always give the same interval).
 */
export function aggregateResults(results: ExampleResult[], resamples = 1000, seed = 0): Record<string, MetricAggregate> {
  const names = new Set<string>();
  for (const r of results) for (const k of Object.keys(r.metrics)) names.add(k);
  const out: Record<string, MetricAggregate> = {};
  for (const name of names) {
    const values = results.map((r) => r.metrics[name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length === 0) continue;
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const rng = seededRandom(seed);
    const means: number[] = [];
    for (let b = 0; b < resamples; b++) {
      let sum = 0;
      for (let i = 0; i < values.length; i++) sum += values[Math.floor(rng() * values.length)];
      means.push(sum / values.length);
    }
    means.sort((a, b) => a - b);
    const at = (q: number) => means[Math.min(means.length - 1, Math.max(0, Math.floor(q * means.length)))];
    out[name] = { mean, ciLow: at(0.025), ciHigh: at(0.975), n: values.length };
  }
  return out;
}
