/**
 * Which figures a report shows, chosen from what the run recorded. A figure that cannot be drawn
 * from the data (no correctness metric, no gold, …) is skipped with a note saying why, instead of
 * failing the whole report.
 */
import { describeError } from '../errors';
import { costQualityFigure } from '../plots/cost';
import { coverageFigure } from '../plots/coverage';
import type { FigureInputs, FigurePlan, MethodCatalog } from '../plots/methods';
import { pipelineOf } from '../plots/runs';
import { runsWithTrials, trialSpreadFigure } from '../plots/trials';
import { judgeFigureSlug, judgeHistogramFigure, judgeReliabilityFigure, judgesOf } from '../plots/judges';
import type { Figure, RunData } from '../plots/types';

export type { FigureInputs } from '../plots/methods';

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

function attempt(choice: FigureChoice, name: string, title: string, build: () => Figure | null, caption?: string): void {
  try {
    const figure = build();
    if (figure) choice.figures.push({ name, title, figure, ...(caption ? { caption } : {}) });
  } catch (error) {
    choice.skipped.push({ name, reason: describeError(error).replace(/\n\s*fix:.*/s, '') });
  }
}

const attemptPlan = (choice: FigureChoice, plan: FigurePlan): void => attempt(choice, plan.name, plan.title, () => plan.build(), plan.caption);

/** The decisions kinds of a run's traces, in order of first appearance. */
const kindsOf = (run: RunData): string[] => [...new Set(run.traces.map((t) => t.decisions.kind))];

/** A run's figures: each method's own (from `methods`, the method catalog), then the judges' and coverage. */
export function figuresForRun(run: RunData, methods: MethodCatalog, inputs: FigureInputs = {}): FigureChoice {
  const choice: FigureChoice = { figures: [], skipped: [] };
  // Each method's own figures (its MethodFigures in the catalog), from its traces.
  for (const kind of kindsOf(run)) {
    const offered = methods.figures(kind)?.forRun?.(run, inputs);
    for (const plan of offered?.figures ?? []) attemptPlan(choice, plan);
    choice.skipped.push(...(offered?.skipped ?? []));
  }
  // Judge quality: one reliability diagram and one P histogram per graded judge.
  for (const d of Object.values(judgesOf(run, methods.judges))) {
    const slug = judgeFigureSlug(d.purpose);
    const caption = `${d.verdict} Silver label: ${d.silverLabel}; ${d.labelled} of ${d.judgments} judgments labelled (docs/metrics.md, "Judge diagnostics").`;
    attempt(choice, `judge-reliability-${slug}`, `Judge reliability: ${d.purpose}`, () => judgeReliabilityFigure(d), caption);
    attempt(choice, `judge-p-histogram-${slug}`, `Judge P by silver label: ${d.purpose}`, () => judgeHistogramFigure(d), caption);
  }
  if (inputs.coverage && inputs.coverage.length > 0) {
    attempt(choice, 'answer-coverage', 'Answer coverage AC@k', () => coverageFigure(inputs.coverage!));
  }
  if (runsWithTrials([run])) attempt(choice, 'trial-spread', 'Trial spread per question', () => trialSpreadFigure([run]), TRIAL_CAPTION);
  return choice;
}

const TRIAL_CAPTION = 'Each question was answered several times (trials): its mean over them ± 1 SD. The run mean\'s CI is the two-level bootstrap (questions, then trials); docs/metrics.md, "Trials".';

/** A sweep point's short name: its swept values (`maxTokens=8`), else the run name. */
function pointLabel(run: RunData & { sweepValues?: Record<string, unknown> }): string {
  const values = run.sweepValues;
  return values && Object.keys(values).length > 0
    ? Object.entries(values).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')
    : run.name;
}

export function figuresForSweep(
  sweepRuns: ReadonlyArray<RunData & { sweepValues?: Record<string, unknown> }>,
  methods: MethodCatalog,
  inputs: FigureInputs = {},
): FigureChoice {
  const choice: FigureChoice = { figures: [], skipped: [] };
  const runs = sweepRuns.map((run) => ({ ...run, name: pointLabel(run) }));
  const pipelines = new Set(runs.map(pipelineOf));
  // Each method's ablation figures across the points whose traces are of its kind.
  for (const kind of [...new Set(runs.flatMap(kindsOf))]) {
    const own = runs.filter((r) => r.traces.some((t) => t.decisions.kind === kind));
    for (const plan of methods.figures(kind)?.forSweep?.(own, inputs) ?? []) attemptPlan(choice, plan);
  }
  if (runsWithTrials(runs)) attempt(choice, 'trial-spread-points', 'Trial spread per question, by point', () => trialSpreadFigure(runs), TRIAL_CAPTION);
  if (runs.length > 1) {
    attempt(choice, 'cost-quality-tokens', 'Cost against quality (tokens)', () => costQualityFigure(runs, { cost: 'tokens' }));
    attempt(choice, 'cost-quality-seconds', 'Cost against quality (seconds)', () => costQualityFigure(runs, { cost: 'seconds' }));
  }
  if (pipelines.size === 1 && runs.length > 0) {
    // Per-run figures of the first point are still useful (e.g. a tree), drawn from its traces.
    for (const f of figuresForRun(runs[0], methods, { ...inputs, coverage: undefined }).figures) {
      choice.figures.push({ ...f, name: `${f.name}-first-point`, title: `${f.title} — ${runs[0].name}` });
    }
  }
  if (inputs.coverage && inputs.coverage.length > 0) {
    attempt(choice, 'answer-coverage', 'Answer coverage AC@k', () => coverageFigure(inputs.coverage!));
  }
  return choice;
}
