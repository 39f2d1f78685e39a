/**
 * Every graded judgment a pipeline makes, optionally with contextual calibration (Zhao et al.
 * 2021, "Calibrate Before Use: Improving Few-Shot Performance of Language Models").
 *
 * A small judge can prefer one label whatever the input: the 0.5B embedded model answers
 * "False"/"No" to nearly everything (every P(yes) measured lay in 0.23–0.45), so a 0.5 threshold
 * prunes every ToC node although the judge still ranks nodes. Contextual calibration estimates that
 * preference — the label prior — by asking the same prompt with the instance's slots replaced by
 * a neutral placeholder ("N/A"), and divides it out:
 *
 *   p_cal(label i) = (p_i / prior_i) / Σ_j (p_j / prior_j)
 *
 * which for two labels is (p/p0) / (p/p0 + (1−p)/(1−p0)). A judge with no label preference
 * (prior uniform) is left unchanged; one whose prior is 0.3 and that says 0.3 on an input is moved
 * to 0.5 ("as likely as on an empty input"). The content-free prompt depends only on the
 * template, so the LLM cache answers it after the first time: one extra forward pass per template.
 */
import { z } from 'zod';
import { AmbiqaError } from '../../errors';
import { normaliseJudgeRequest } from '../../llm/client';
import type { ChatMessage, JudgeMode } from '../../llm/types';
import type { Passage } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { PipelineContext } from '../types';
import { judgeLlm } from './llm';

/** The text standing in for every instance slot of a content-free prompt. */
export const CONTENT_FREE = 'N/A';

/** A passage whose title and text are the placeholder, for content-free prompts that show passages. */
export function contentFreePassage(index = 0): Passage {
  return { id: `content-free-${index}`, title: CONTENT_FREE, text: CONTENT_FREE };
}

export const judgeCalibrationSchema = z
  .enum(['none', 'content-free', 'batch'])
  .default('none')
  .describe(
    "'none': threshold the judge's raw P (the papers' method); 'content-free': divide out the judge's label prior, read from the same prompt with the instance replaced by 'N/A' (contextual calibration, Zhao et al. 2021); 'batch': divide out the mean label probabilities over a calibration sample of demo-pool questions judged once before the run and stored in it (batch calibration, Zhou et al. 2024) — for small or biased judges (docs/pipelines.md)",
  );

/** For judges without a batch prior (COMBO's scorers): the papers' rule or contextual calibration. */
export const contextualCalibrationSchema = z
  .enum(['none', 'content-free'])
  .default('none')
  .describe(
    "'none': threshold the judge's raw P (the papers' method); 'content-free': divide out the judge's label prior, read from the same prompt with the instance replaced by 'N/A' (contextual calibration, Zhao et al. 2021) — for small or biased judges (docs/pipelines.md)",
  );

export type JudgeCalibration = z.infer<typeof judgeCalibrationSchema>;

/**
 * Divide each label's probability by its prior and renormalise (k labels). Returns the raw
 * probabilities unchanged when the prior cannot be divided out (a label with prior 0, or a
 * content-free judgment with no readable label), with `applied: false`.
 */
export function calibrateProbabilities(probabilities: readonly number[], prior: readonly number[]): { probabilities: number[]; applied: boolean } {
  if (probabilities.length !== prior.length) {
    throw new Error(`calibrateProbabilities: ${probabilities.length} probabilities but ${prior.length} prior values`);
  }
  if (prior.some((q) => !(q > 0))) return { probabilities: [...probabilities], applied: false };
  const ratios = probabilities.map((p, i) => p / prior[i]);
  const total = ratios.reduce((s, r) => s + r, 0);
  // Every raw probability 0 (an unparsed text reply): nothing to renormalise.
  if (!(total > 0)) return { probabilities: [...probabilities], applied: false };
  return { probabilities: ratios.map((r) => r / total), applied: true };
}

export interface CalibratedJudgeRequest {
  /** The judge's purpose, e.g. `toc.verify`; the content-free judgment uses `<purpose>.prior`. */
  purpose: string;
  /** Labels, positive first. */
  labels: string[];
  /** The instance's prompt (chat messages or a plain prompt, like `LanguageModel.judge`). */
  messages?: ChatMessage[];
  prompt?: string;
  /**
   * The same prompt built by the pipeline's own prompt function with every instance slot replaced
   * by `CONTENT_FREE` (few-shot demos unchanged). Only read when calibration is on.
   */
  contentFree: () => { messages?: ChatMessage[]; prompt?: string };
  calibration: JudgeCalibration;
  /** What a text reply naming no label falls back to (recorded as a parse failure). */
  fallback: string;
}

export interface CalibratedJudgement {
  /** P(labels[0]) the pipeline thresholds: calibrated when calibration applied, else raw. */
  p: number;
  /** P(labels[0]) as the judge gave it. */
  pRaw: number;
  /** The prior of labels[0]: on the content-free prompt, or the stored batch prior (absent when calibration is off). */
  pPrior?: number;
  /** Calibration was on and could be applied (not when the prior had a zero or the reply was text). */
  calibrated: boolean;
  /** The instance's reply named no label (text mode). */
  unparsed: boolean;
  mode: JudgeMode;
  /** Index in the trace's `llmCalls` of the instance judgment. */
  callIndex: number;
  /** Index in the trace's `llmCalls` of the content-free judgment, when made. */
  priorCallIndex?: number;
}

/**
 * One judgment through the recorder and, with `calibration: 'content-free'`, its content-free
 * twin; the instance's trace record gets `judge.calibration` (prior, calibrated probabilities,
 * the prior call's index) so decision statistics can report raw and calibrated P per judge.
 */
export async function judgeCalibrated(rec: TraceRecorder, ctx: PipelineContext, request: CalibratedJudgeRequest): Promise<CalibratedJudgement> {
  const { purpose, labels, fallback } = request;
  const raw = await judgeLlm(rec, ctx, {
    purpose,
    labels,
    fallback,
    ...(request.messages ? { messages: request.messages } : {}),
    ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
  });
  const base = { pRaw: raw.p, unparsed: raw.unparsed, mode: raw.mode, callIndex: raw.callIndex };
  if (request.calibration === 'none') return { ...base, p: raw.p, calibrated: false };

  const record = rec.llmCalls[raw.callIndex];
  if (request.calibration === 'batch') {
    const stored = ctx.judgePriors?.purposes[purpose];
    if (!stored || JSON.stringify(stored.labels) !== JSON.stringify(labels)) {
      throw new AmbiqaError(
        `judgeCalibration batch: no stored ${purpose} prior for labels ${labels.join('/')} in the run`,
        'batch calibration reads the prior the experiment runner stores before the first question (judge-priors.json); outside `ambiqa run`, call the pipeline\'s calibrate() and pass its result as context.judgePriors',
      );
    }
    const rawProbabilities = record?.judge?.probabilities ?? [];
    const usable = raw.mode === 'probability' && rawProbabilities.length === labels.length;
    const result = usable ? calibrateProbabilities(rawProbabilities, stored.prior) : { probabilities: rawProbabilities, applied: false };
    const p = result.applied ? result.probabilities[0]! : raw.p;
    if (record?.judge) {
      record.judge.calibration = { method: 'batch', prior: stored.prior, probabilities: result.probabilities, p, applied: result.applied };
    }
    return { ...base, p, pPrior: stored.prior[0], calibrated: result.applied };
  }

  const free = request.contentFree();
  const prior =
    earlierPrior(rec, `${purpose}.prior`, free, labels) ??
    (await judgeLlm(rec, ctx, {
      purpose: `${purpose}.prior`,
      labels,
      fallback: 'no prior (raw P used)',
      ...(free.messages ? { messages: free.messages } : {}),
      ...(free.prompt !== undefined ? { prompt: free.prompt } : {}),
    }));
  const priorProbabilities = rec.llmCalls[prior.callIndex]?.judge?.probabilities ?? [];
  const rawProbabilities = record?.judge?.probabilities ?? [];
  // A text-mode judgment is 0 or 1: there is no graded prior to divide out, so the raw verdict stands.
  const usable = raw.mode === 'probability' && prior.mode === 'probability' && priorProbabilities.length === labels.length;
  const result = usable ? calibrateProbabilities(rawProbabilities, priorProbabilities) : { probabilities: rawProbabilities, applied: false };
  const p = result.applied ? result.probabilities[0] : raw.p;
  if (record?.judge) {
    record.judge.calibration = {
      method: 'content-free',
      priorCallIndex: prior.callIndex,
      prior: priorProbabilities,
      probabilities: result.probabilities,
      p,
      applied: result.applied,
    };
  }
  return { ...base, p, pPrior: prior.p, calibrated: result.applied, priorCallIndex: prior.callIndex };
}

/**
 * The same content-free judgment made earlier for this question, if any. The content-free
 * prompt depends on the template only, so a question's judgments of one purpose share one prior:
 * asking it again would only add a cache hit to the trace and spend the call budget
 * (`maxLlmCalls`) on nothing.
 */
function earlierPrior(
  rec: TraceRecorder,
  purpose: string,
  free: { messages?: ChatMessage[]; prompt?: string },
  labels: string[],
): { p: number; unparsed: boolean; mode: JudgeMode; callIndex: number } | undefined {
  // The client's own normalisation, so a prompt string compares equal to its recorded messages.
  const wanted = JSON.stringify(normaliseJudgeRequest({ ...free, labels }).messages.map((m) => [m.role, m.content]));
  const callIndex = rec.llmCalls.findIndex(
    (c) =>
      c.purpose === purpose &&
      c.judge !== undefined &&
      JSON.stringify(c.judge.labels) === JSON.stringify(labels) &&
      JSON.stringify(c.messages.map((m) => [m.role, m.content])) === wanted,
  );
  if (callIndex < 0) return undefined;
  const judge = rec.llmCalls[callIndex]!.judge!;
  return { p: judge.p, unparsed: judge.mode === 'text' && judge.unparsed === true, mode: judge.mode, callIndex };
}

/** Whether a judgment of `purpose` with this calibration still has its content-free prior to ask (for call budgets). */
export function priorCallsNeeded(rec: TraceRecorder, purpose: string, calibration: JudgeCalibration): 0 | 1 {
  // A batch prior was judged before the run, outside the question's budget (judge-priors.json).
  if (calibration === 'none' || calibration === 'batch') return 0;
  return rec.llmCalls.some((c) => c.purpose === `${purpose}.prior`) ? 0 : 1;
}
