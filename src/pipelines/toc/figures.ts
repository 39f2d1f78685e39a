/**
 * The figures of Tree of Clarifications' traces, carried by its pipeline entry into the method catalog
 * (src/plots/methods.ts): one question's clarification tree and the pruning effect on node
 * Answer-F1 for a run; node-cap and depth ablations across a sweep.
 */
import { tocAblationFigure } from '../../plots/ablation';
import type { FigureInputs, FigurePlan, MethodFigures, SkippedFigure } from '../../plots/methods';
import { pruningEffect, pruningEffectFigure } from './pruning-figure';
import { findOption, pipelineOf } from '../../plots/runs';
import { tocDecisionsOf } from './decisions';
import { clarificationTreeFigure } from './tree-figure';
import type { RunData } from '../../plots/types';
import type { Trace } from '../../trace/types';

const nodeCount = (t: Trace): number => tocDecisionsOf(t)?.nodes.length ?? 0;
const distinct = (values: unknown[]): number => new Set(values.map((v) => JSON.stringify(v))).size;

function forRun(run: RunData, inputs: FigureInputs): { figures: FigurePlan[]; skipped: SkippedFigure[] } {
  const figures: FigurePlan[] = [];
  const skipped: SkippedFigure[] = [];
  const traces = run.traces.filter((t) => t.decisions.kind === 'toc');
  if (traces.length === 0) return { figures, skipped };
  // The tree asked for, else the first of the largest trees.
  const pick = traces.find((t) => t.questionId === inputs.treeExample) ?? [...traces].sort((a, b) => nodeCount(b) - nodeCount(a))[0]!;
  if (inputs.treeExample && pick.questionId !== inputs.treeExample) {
    skipped.push({ name: 'clarification-tree', reason: `no ToC trace for example ${inputs.treeExample}; drew ${pick.questionId}` });
  }
  figures.push({ name: 'clarification-tree', title: `Clarification tree of ${pick.questionId}`, build: () => clarificationTreeFigure(pick) });
  const gold = inputs.gold;
  if (gold) {
    figures.push({ name: 'pruning-effect', title: 'Pruning effect on node Answer-F1', build: () => pruningEffectFigure(pruningEffect(traces, gold)) });
  } else {
    skipped.push({ name: 'pruning-effect', reason: 'no gold disambiguations given (the dataset file could not be read)' });
  }
  return { figures, skipped };
}

function forSweep(runs: ReadonlyArray<RunData>): FigurePlan[] {
  const tocRuns = runs.filter((r) => pipelineOf(r) === 'toc');
  const plans: FigurePlan[] = [];
  for (const knob of ['maxNodes', 'maxDepth'] as const) {
    if (tocRuns.length > 1 && distinct(tocRuns.map((r) => findOption(r.config, knob, ['toc', 'pipeline']))) > 1) {
      plans.push({
        name: knob === 'maxNodes' ? 'node-cap-ablation' : 'depth-ablation',
        title: knob === 'maxNodes' ? 'Node cap ablation' : 'Depth ablation',
        build: () => tocAblationFigure(tocRuns, { knob }),
      });
    }
  }
  return plans;
}

export const tocFigures: Omit<MethodFigures, 'kind'> = { forRun, forSweep };
