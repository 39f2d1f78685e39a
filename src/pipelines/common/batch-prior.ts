/**
 * Batch calibration of a yes/no judge: the label prior read from real inputs of the same purpose.
 *
 * Contextual calibration (`content-free`) reads the prior from one prompt whose instance is
 * "N/A"; for the 0.5B judge that prior (0.165) lies below every real input, so it overcorrects
 * and keeps everything (issue 26). Batch calibration (Zhou et al. 2024, "Batch Calibration:
 * Rethinking Calibration for In-Context Learning and Prompt Engineering", ICLR) instead takes the
 * prior as the mean of the judge's label probabilities over a batch of real inputs:
 *
 *   prior_j = mean_i p_j(x_i),   p_cal(j | x) ∝ p_j(x) / prior_j
 *
 * Here the batch is fixed before the run and built from the *demo pool*, never from the
 * evaluated questions: a seeded sample of pool questions with gold disambiguations, each asked in
 * the pipeline's own verification prompt once with one of its gold answers (a supported input) and
 * once with another sampled question's answer against the same evidence (an unsupported input).
 * The batch is balanced by construction, so a judge with no label preference has prior 0.5 and is
 * left as it is; the prior is what the judge says on average when half its inputs deserve "yes".
 *
 * The experiment runner asks the pipeline for the prior once, before the first question, and
 * stores it in the run directory (`judge-priors.json`) with every calibration call; resumes,
 * shards and merges read that file, so every question of a run divides by the same prior.
 */
import { z } from 'zod';
import { mulberry32 } from '../../common/random';
import { AmbiqaError } from '../../errors';
import type { ChatMessage } from '../../llm/types';
import { TraceRecorder } from '../../trace/recorder';
import { callsUsage, tokenFields } from '../../trace/usage';
import { checkAborted } from './context';
import { judgeLlm } from './llm';
import { normaliseAnswer } from './text';
import type { Demo, JudgePriors, PipelineContext } from '../types';

/** The pipeline options every batch-calibrating pipeline shares (spread into its schema). */
export const batchCalibrationOptions = {
  calibrationQuestions: z
    .int()
    .min(2)
    .max(200)
    .default(8)
    .describe("judgeCalibration batch: demo-pool questions (never evaluated ones) whose judgments give the judge's label prior"),
  calibrationSeed: z.int().default(0).describe('judgeCalibration batch: seed of the calibration sample'),
};

// The stored priors' schema is part of the pipeline contract (types.ts), which PipelineContext
// and Pipeline.calibrate name; re-exported here for the pipelines that calibrate.
export { judgePriorsSchema, purposePriorSchema, type JudgePriors } from '../types';

/** One calibration input: a prompt of the pipeline's own judge. */
export interface CalibrationItem {
  /** The judge's purpose, e.g. `toc.verify`. */
  purpose: string;
  labels: string[];
  messages: ChatMessage[];
}

/** A gold disambiguation of a sampled pool question, with an answer of another sampled question. */
export interface CalibrationPair {
  demo: Demo;
  question: string;
  answer: string;
  /** Another sampled question's pair: its answer is the unsupported input, its question the off-topic one. */
  other: { question: string; answer: string };
}

/**
 * A seeded sample of `n` pool questions that have gold disambiguations. The pool is ordered by id
 * first, so the sample depends on the pool's content, not on the order a loader returned it.
 */
export function sampleCalibrationDemos(pool: readonly Demo[], n: number, seed: number): Demo[] {
  const usable = pool.filter((d) => (d.qaPairs ?? []).some((p) => p.answer.trim() !== '')).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (usable.length < 2) {
    throw new AmbiqaError(
      `judgeCalibration batch: the demo pool has ${usable.length} question(s) with gold disambiguations outside the evaluated ones; it needs at least 2`,
      'batch calibration draws its questions from the demo pool: set nShots ≥ 1 and give a pool (dataset.demos, or an evaluation file larger than the selection), or use judgeCalibration none / content-free',
    );
  }
  const random = mulberry32(seed);
  const order = usable.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.slice(0, Math.min(n, usable.length)).map((i) => usable[i]!);
}

/**
 * Up to `perQuestion` gold pairs per sampled question, each with the first pair of a later sampled
 * question (cyclically) whose answer none of this question's pairs gives.
 */
export function calibrationPairs(sample: readonly Demo[], perQuestion = 2): CalibrationPair[] {
  const out: CalibrationPair[] = [];
  sample.forEach((demo, i) => {
    const own = (demo.qaPairs ?? []).filter((p) => p.answer.trim() !== '');
    const ownAnswers = new Set(own.map((p) => normaliseAnswer(p.answer)));
    let other: { question: string; answer: string } | undefined;
    for (let k = 1; k < sample.length && !other; k++) {
      const candidate = (sample[(i + k) % sample.length]!.qaPairs ?? []).find((p) => p.answer.trim() !== '' && !ownAnswers.has(normaliseAnswer(p.answer)));
      if (candidate) other = candidate;
    }
    if (!other) return;
    for (const pair of own.slice(0, perQuestion)) out.push({ demo, question: pair.question, answer: pair.answer, other });
  });
  return out;
}

/**
 * Judge every calibration item once (through the context's LLM, so the LLM cache and a separate
 * judge model apply as for real judgments) and average each purpose's label probabilities.
 * Text-mode judgments (0/1) carry no graded prior and are left out; a purpose with none left is
 * an error, since the run could not calibrate as asked.
 */
export async function estimateBatchPriors(
  pipeline: string,
  sample: readonly Demo[],
  seed: number,
  items: readonly CalibrationItem[],
  ctx: PipelineContext,
): Promise<JudgePriors> {
  const rec = new TraceRecorder(pipeline, { id: 'batch-calibration', question: '(batch calibration sample)' }, ctx.llm);
  const sums = new Map<string, { labels: string[]; sum: number[]; n: number }>();
  for (const item of items) {
    checkAborted(ctx);
    const result = await judgeLlm(rec, ctx, {
      purpose: `${item.purpose}.calibration`,
      labels: item.labels,
      messages: item.messages,
      fallback: 'left out of the prior',
    });
    const probabilities = rec.llmCalls[result.callIndex]?.judge?.probabilities ?? [];
    const entry = sums.get(item.purpose) ?? { labels: item.labels, sum: item.labels.map(() => 0), n: 0 };
    sums.set(item.purpose, entry);
    if (result.mode !== 'probability' || probabilities.length !== item.labels.length) continue;
    probabilities.forEach((p, j) => (entry.sum[j] += p));
    entry.n += 1;
  }
  const purposes: JudgePriors['purposes'] = {};
  for (const [purpose, { labels, sum, n }] of sums) {
    const total = sum.reduce((s, x) => s + x, 0);
    if (n === 0 || !(total > 0)) {
      throw new AmbiqaError(
        `judgeCalibration batch: none of the ${purpose} calibration judgments had label probabilities`,
        'batch calibration needs a judge that returns probabilities (an endpoint with logprobs); use judgeCalibration none',
      );
    }
    // Normalised: the labels' mass may fall short of 1 (other tokens), the prior is over the labels.
    purposes[purpose] = { labels, prior: sum.map((x) => x / total), judgments: n };
  }
  const total = callsUsage(rec.llmCalls);
  const usage = { llmCalls: total.calls, ...tokenFields(total), cacheHits: total.cacheHits };
  return { method: 'batch', pipeline, seed, sampleIds: sample.map((d) => d.id), purposes, calls: rec.llmCalls, usage };
}
