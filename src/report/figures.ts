/**
 * Which figures a report shows, chosen from what the run recorded. A figure that cannot be drawn
 * from the data (no correctness metric, no gold, …) is skipped with a note saying why, instead of
 * failing the whole report.
 */
import { describeError } from '../errors';
import { exactMatch, maxOverGolds } from '../metrics/squad';
import { tocAblationFigure } from '../plots/ablation';
import { consistencyKdeFigure } from '../plots/consistency';
import { costQualityFigure } from '../plots/cost';
import { coverageFigure, type CoverageCurve } from '../plots/coverage';
import { pruningEffect, pruningEffectFigure, type GoldDqs } from '../plots/pruning';
import { findOption, pipelineOf } from '../plots/runs';
import { thresholdAblationFigure, thresholdAblationFromSweep, thresholdAblationFromTraces } from '../plots/threshold';
import { clarificationTreeFigure } from '../plots/tree';
import { judgeFigureSlug, judgeHistogramFigure, judgeReliabilityFigure, judgesOf } from '../plots/judges';
import type { Figure, RunData } from '../plots/types';

export interface NamedFigure {
  /** File-safe name (`consistency-kde`), used for exported HTML/PNG files. */
  name: string;
  title: string;
  figure: Figure;
  caption?: string;
}

export interface FigureChoice {
  figures: NamedFigure[];
  /** Figures that were considered and skipped, with the reason. */
  skipped: Array<{ name: string; reason: string }>;
}

export interface FigureInputs {
  /** questionId → gold DQ answers, for the ToC pruning figure. */
  gold?: GoldDqs;
  /**
   * questionId → acceptable short answers: scores the majority answers VE edited, which makes the
   * re-applied threshold ablation exact below the run's threshold (exact match, SQuAD-normalised).
   */
  answers?: ReadonlyMap<string, readonly string[]>;
  /** Extra coverage curves to plot (from `ambiqa coverage --out` files). */
  coverage?: CoverageCurve[];
  /** Which ToC example's tree to draw (default: the first with the most nodes). */
  treeExample?: string;
}

function attempt(choice: FigureChoice, name: string, title: string, build: () => Figure | null, caption?: string): void {
  try {
    const figure = build();
    if (figure) choice.figures.push({ name, title, figure, ...(caption ? { caption } : {}) });
  } catch (error) {
    choice.skipped.push({ name, reason: describeError(error).replace(/\n\s*fix:.*/s, '') });
  }
}

export function figuresForRun(run: RunData, inputs: FigureInputs = {}): FigureChoice {
  const choice: FigureChoice = { figures: [], skipped: [] };
  const kinds = new Set(run.traces.map((t) => t.decisions.kind));
  if (kinds.has('verify-edit') || kinds.has('cot-sc')) {
    attempt(choice, 'consistency-kde', 'Consistency of correct and incorrect predictions', () => consistencyKdeFigure(run.traces, run.results),
      'Gaussian KDE (Scott bandwidth) of the majority answer\'s vote share, with the raw values as a rug.');
  }
  if (kinds.has('verify-edit')) {
    attempt(choice, 'threshold-ablation', 'Threshold ablation (re-applied to this run)', () => {
      const answers = inputs.answers;
      const points = thresholdAblationFromTraces(run.traces, run.results, answers ? {
        scoreAnswer: (id, answer) => (answers.has(id) ? maxOverGolds(exactMatch, answer, answers.get(id)!) === 1 : undefined),
      } : {});
      return points.length > 0 ? thresholdAblationFigure(points) : null;
    }, 'Edited fraction is exact at every threshold; accuracy and AUC where the outcome is known from this run and the gold answers (see src/plots/threshold.ts).');
  }
  if (kinds.has('toc')) {
    const tocTraces = run.traces.filter((t) => t.decisions.kind === 'toc');
    const pick =
      tocTraces.find((t) => t.questionId === inputs.treeExample) ??
      [...tocTraces].sort((a, b) => nodeCount(b) - nodeCount(a))[0];
    if (inputs.treeExample && pick.questionId !== inputs.treeExample) {
      choice.skipped.push({ name: 'clarification-tree', reason: `no ToC trace for example ${inputs.treeExample}; drew ${pick.questionId}` });
    }
    attempt(choice, 'clarification-tree', `Clarification tree of ${pick.questionId}`, () => clarificationTreeFigure(pick));
    if (inputs.gold) {
      attempt(choice, 'pruning-effect', 'Pruning effect on node Answer-F1', () => pruningEffectFigure(pruningEffect(tocTraces, inputs.gold!)));
    } else {
      choice.skipped.push({ name: 'pruning-effect', reason: 'no gold disambiguations given (the dataset file could not be read)' });
    }
  }
  // Judge quality: one reliability diagram and one P histogram per graded judge.
  for (const d of Object.values(judgesOf(run))) {
    const slug = judgeFigureSlug(d.purpose);
    const caption = `${d.verdict} Silver label: ${d.silverLabel}; ${d.labelled} of ${d.judgments} judgments labelled (docs/metrics.md, "Judge diagnostics").`;
    attempt(choice, `judge-reliability-${slug}`, `Judge reliability: ${d.purpose}`, () => judgeReliabilityFigure(d), caption);
    attempt(choice, `judge-p-histogram-${slug}`, `Judge P by silver label: ${d.purpose}`, () => judgeHistogramFigure(d), caption);
  }
  if (inputs.coverage && inputs.coverage.length > 0) {
    attempt(choice, 'answer-coverage', 'Answer coverage AC@k', () => coverageFigure(inputs.coverage!));
  }
  return choice;
}

function nodeCount(t: RunData['traces'][number]): number {
  return t.decisions.kind === 'toc' ? t.decisions.nodes.length : 0;
}

const distinct = (values: unknown[]) => new Set(values.map((v) => JSON.stringify(v))).size;

/** A sweep point's short name: its swept values (`maxTokens=8`), else the run name. */
function pointLabel(run: RunData & { sweepValues?: Record<string, unknown> }): string {
  const values = run.sweepValues;
  return values && Object.keys(values).length > 0
    ? Object.entries(values).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')
    : run.name;
}

export function figuresForSweep(sweepRuns: ReadonlyArray<RunData & { sweepValues?: Record<string, unknown> }>, inputs: FigureInputs = {}): FigureChoice {
  const choice: FigureChoice = { figures: [], skipped: [] };
  const runs = sweepRuns.map((run) => ({ ...run, name: pointLabel(run) }));
  const pipelines = new Set(runs.map(pipelineOf));
  const veRuns = runs.filter((r) => r.traces.some((t) => t.decisions.kind === 'verify-edit'));
  const thresholds = veRuns.map((r) => r.traces.find((t) => t.decisions.kind === 'verify-edit')!.decisions).map((d) => (d as { threshold: number }).threshold);
  if (veRuns.length > 1 && distinct(thresholds) > 1) {
    attempt(choice, 'threshold-ablation', 'Threshold ablation (one run per threshold)', () => thresholdAblationFigure(thresholdAblationFromSweep(veRuns)));
  }
  const tocRuns = runs.filter((r) => pipelineOf(r) === 'toc');
  for (const knob of ['maxNodes', 'maxDepth'] as const) {
    if (tocRuns.length > 1 && distinct(tocRuns.map((r) => findOption(r.config, knob, ['toc', 'pipeline']))) > 1) {
      const name = knob === 'maxNodes' ? 'node-cap-ablation' : 'depth-ablation';
      attempt(choice, name, knob === 'maxNodes' ? 'Node cap ablation' : 'Depth ablation', () => tocAblationFigure(tocRuns, { knob }));
    }
  }
  if (runs.length > 1) {
    attempt(choice, 'cost-quality-tokens', 'Cost against quality (tokens)', () => costQualityFigure(runs, { cost: 'tokens' }));
    attempt(choice, 'cost-quality-seconds', 'Cost against quality (seconds)', () => costQualityFigure(runs, { cost: 'seconds' }));
  }
  if (pipelines.size === 1 && runs.length > 0) {
    // Per-run figures of the first point are still useful (e.g. a tree), drawn from its traces.
    for (const f of figuresForRun(runs[0], { ...inputs, coverage: undefined }).figures) {
      choice.figures.push({ ...f, name: `${f.name}-first-point`, title: `${f.title} — ${runs[0].name}` });
    }
  }
  if (inputs.coverage && inputs.coverage.length > 0) {
    attempt(choice, 'answer-coverage', 'Answer coverage AC@k', () => coverageFigure(inputs.coverage!));
  }
  return choice;
}
