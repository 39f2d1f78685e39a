/**
 * What the figures of one method are, defined by the method itself (its pipeline registry entry,
 * src/pipelines/entry.ts), and the method catalog that carries them: the report, notebooks and
 * MLflow ask the catalog they are handed which figures a method's traces make, instead of
 * switching on `decisions.kind`. The catalog is built from the pipeline registry by
 * `methodCatalog()` (src/pipelines/registry.ts) and passed down as an argument; the types live
 * here, below the pipelines, so that the report (which may not import pipelines) can take it.
 */
import type { z } from 'zod';
import type { QaPair } from '../datasets/types';
import type { MethodAnalyses, MethodAnalysis, MethodJudge } from '../metrics/methods';
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

/** One method as its pipeline entry describes it (`PipelineEntry.method`). */
export interface MethodDescription {
  /** The `decisions.kind` its traces carry (pipelines may share one, e.g. the baselines). */
  readonly kind: string;
  /** The zod schema of its decisions (`kind` a literal). */
  readonly decisionsSchema?: z.ZodType<{ kind: string }>;
  readonly analysis?: Omit<MethodAnalysis, 'kind'>;
  readonly figures?: Omit<MethodFigures, 'kind'>;
}

/**
 * Every method of a run's pipelines, by decisions kind: analysis (judges, decision statistics,
 * signals read back from traces), figures and decisions schema. Built by `methodCatalog()` from
 * the pipeline registry; report, compare, merge and the notebook helpers take it as an argument.
 */
export interface MethodCatalog extends MethodAnalyses {
  /** The decisions kinds it knows, in registry order. */
  readonly kinds: readonly string[];
  figures(kind: string): MethodFigures | undefined;
  decisionsSchema(kind: string): z.ZodType<{ kind: string }> | undefined;
}

/**
 * A catalog of the given methods. A kind described twice keeps the later analysis, figures and
 * schema where the later description has them (a pipeline registered again from a notebook cell
 * replaces its method), at the kind's first position.
 */
export function createMethodCatalog(methods: readonly MethodDescription[]): MethodCatalog {
  const kinds: string[] = [];
  const analyses = new Map<string, MethodAnalysis>();
  const figures = new Map<string, MethodFigures>();
  const schemas = new Map<string, z.ZodType<{ kind: string }>>();
  for (const m of methods) {
    if (!kinds.includes(m.kind)) kinds.push(m.kind);
    if (m.analysis) analyses.set(m.kind, { kind: m.kind, ...m.analysis });
    if (m.figures) figures.set(m.kind, { kind: m.kind, ...m.figures });
    if (m.decisionsSchema) schemas.set(m.kind, m.decisionsSchema);
  }
  const judges: MethodJudge[] = [...analyses.values()].flatMap((a) => a.judges ?? []);
  return {
    kinds,
    judges,
    analysis: (kind) => analyses.get(kind),
    figures: (kind) => figures.get(kind),
    decisionsSchema: (kind) => schemas.get(kind),
  };
}
