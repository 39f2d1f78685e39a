/**
 * What both judge-study benches start from: a study config's components with every metric but
 * STR-EM left out (the silver labels come from the gold data, so no D-F1 reader is loaded), and
 * the same components with a catalog model as `judge:`.
 */
import { createComposer } from '../src/experiments/compose';
import { loadExperimentConfig, type ExperimentConfig } from '../src/experiments/config';
import { runModel } from '../src/llm/run-model';
import type { PipelineContext } from '../src/pipelines/types';

export async function openStudy(configFile: string) {
  const composer = createComposer({ notify: (m) => console.error(m) });
  const loaded = loadExperimentConfig(configFile, composer.registry, { overrides: [] });
  const base: ExperimentConfig = { ...loaded, metrics: ['str_em'] as ExperimentConfig['metrics'] };
  const parts = await composer.components(base);
  /** The study's context with `name` (a catalog model) judging, the rest of the config shared. */
  const withJudge = async (name: string): Promise<PipelineContext> => {
    const config = { ...base, judge: { ...(base.llm as object), model: name } } as ExperimentConfig;
    const judged = await composer.components(config);
    // The composer hands the judge's client beside the run's; judgments reach it through the
    // run model's judge layer, as in a run (src/llm/run-model.ts).
    return { ...judged.context, llm: runModel(judged.context.llm, judged.judge ? { judge: judged.judge } : {}) };
  };
  return { composer, base, parts, withJudge };
}
