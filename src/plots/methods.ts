/**
 * What the figures of one method are, registered by the method itself (its pipeline registry
 * entry, src/pipelines/entry.ts): the report, notebooks and MLflow ask every registered method
 * which figures its traces make, instead of switching on `decisions.kind`. The registry lives
 * here, below the pipelines, which fill it (see src/metrics/methods.ts for why).
 */
import type { QaPair } from '../datasets/types';
import type { CoverageCurve } from './coverage';
import type { Figure, RunData } from './types';

/** questionId → the gold disambiguations (DQs with their short answers). */
export type GoldDqs = ReadonlyMap<string, readonly QaPair[]>;

/** What a figure may need beyond the run's files. */
export interface FigureInputs {
  /** questionId → gold DQ answers (e.g. for ToC's pruning figure). */
  gold?: GoldDqs;
  /**
   * questionId → acceptable short answers: scores answers a run did not score itself (e.g. the
   * majority answers Verify-and-Edit edited, for its re-applied threshold ablation).
   */
  answers?: ReadonlyMap<string, readonly string[]>;
  /** Extra coverage curves to plot (from `ambiqa coverage --out` files). */
  coverage?: CoverageCurve[];
  /** Which example a per-question figure draws (e.g. ToC's tree; default: the method's choice). */
  treeExample?: string;
}

/** One figure a method offers: built lazily, so a figure that cannot be drawn is skipped with its reason. */
export interface FigurePlan {
  /** File-safe name (`consistency-kde`), used for exported HTML/PNG files. */
  name: string;
  title: string;
  /** The figure, or null when the data has nothing to draw; throws (with a reason) when it cannot be drawn. */
  build(): Figure | null;
  caption?: string;
}

/** A figure a method skipped on purpose, with the reason shown in the report. */
export interface SkippedFigure {
  name: string;
  reason: string;
}

export interface MethodFigures {
  /** The `decisions.kind` whose traces it draws. */
  readonly kind: string;
  /** Figures of one run, from its traces of this kind (`run.traces` holds every trace). */
  forRun?(run: RunData, inputs: FigureInputs): { figures: FigurePlan[]; skipped?: SkippedFigure[] };
  /** Figures across a sweep's points whose traces are of this kind (ablation curves). */
  forSweep?(runs: ReadonlyArray<RunData & { sweepValues?: Record<string, unknown> }>, inputs: FigureInputs): FigurePlan[];
}

const registry = new Map<string, MethodFigures>();

/** Register (or replace) the figures of one decisions kind. */
export function registerMethodFigures(figures: MethodFigures): void {
  registry.set(figures.kind, figures);
}

export function methodFigures(kind: string): MethodFigures | undefined {
  return registry.get(kind);
}
