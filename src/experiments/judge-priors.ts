/**
 * The run's stored judge priors (`judgeCalibration: batch`, src/pipelines/common/batch-prior.ts).
 *
 * A batch prior is computed once per run directory, before the first question, and written to
 * `judge-priors.json`; every later session (a resume) and every reader (merge, reports) uses that
 * file, never a recomputation, so all questions of a run divide by the same numbers. Shards of one
 * run each compute it from the same seeded sample of the same pool; the judgments are
 * deterministic (temperature-free probabilities, LLM cache), and merge refuses shards whose stored
 * priors differ rather than mixing them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import { judgePriorsSchema, type JudgePriors } from '../pipelines/types';
import { normaliseQuestion } from '../pipelines/common/text';
import type { Demo } from '../pipelines/types';
import { runFiles, writeJson } from '../run-files';
import { formatIssues } from '../common/zod-issues';
import type { RunComponents } from './orchestrate';

/** Read a run's stored priors; undefined when the run has none. A damaged file is an error naming it. */
export function readJudgePriors(runDir: string): JudgePriors | undefined {
  const path = join(runDir, runFiles.judgePriors);
  if (!existsSync(path)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${path} is not valid JSON (${(error as Error).message})`, 'restore it from the run, or delete it together with results.jsonl and traces.jsonl to start the run again');
  }
  const parsed = judgePriorsSchema.safeParse(value);
  if (!parsed.success) {
    throw new AmbiqaError(`${path}: ${formatIssues(parsed.error.issues).join('; ')}`, 'the file is written by `ambiqa run`; restore it from the run');
  }
  return parsed.data;
}

/** The demo pool without the run's evaluated questions (by id, source id and normalised text). */
export function calibrationPool(pool: readonly Demo[], examples: RunComponents['examples']): Demo[] {
  const ids = new Set<string>();
  const questions = new Set<string>();
  for (const e of examples) {
    ids.add(e.id);
    if (e.sourceId !== undefined) ids.add(e.sourceId);
    questions.add(normaliseQuestion(e.question));
  }
  return pool.filter((d) => !ids.has(d.id) && !questions.has(normaliseQuestion(d.question)));
}

/**
 * The components with `context.judgePriors` set: from the run directory when it has them (a
 * resume), else computed by the pipeline from the demo pool minus every evaluated question (the
 * whole selection, not only this shard's) and written there first. Unchanged when the pipeline
 * does not calibrate by batch.
 */
export async function withJudgePriors(
  components: RunComponents,
  runDir: string,
): Promise<{ components: RunComponents; priors?: JudgePriors }> {
  const { pipeline, context } = components;
  if (!pipeline.calibrate) return { components };
  let priors = readJudgePriors(runDir);
  if (!priors) {
    const pool = calibrationPool(context.demos?.pool ?? [], components.examples);
    // `context.llm` is the run's model (runner.ts): the judgments are metered, capped and stopped like the questions' calls.
    const computed = await pipeline.calibrate(pool, context);
    if (!computed) return { components };
    priors = computed;
    writeJson(join(runDir, runFiles.judgePriors), priors);
  }
  return { components: { ...components, context: { ...context, judgePriors: priors } }, priors };
}

/** Settings (MLflow params) and usage that make a run's batch prior visible in metrics.json. */
export function judgePriorSettings(priors: JudgePriors): Record<string, string> {
  const out: Record<string, string> = { 'judge.calibration': 'batch', 'judge.calibration.seed': String(priors.seed), 'judge.calibration.questions': String(priors.sampleIds.length) };
  for (const [purpose, p] of Object.entries(priors.purposes)) {
    out[`judge.${purpose}.prior`] = p.prior[0]!.toFixed(4);
    out[`judge.${purpose}.prior_judgments`] = String(p.judgments);
  }
  return out;
}
