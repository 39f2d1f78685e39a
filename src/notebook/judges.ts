/**
 * Judge quality of a run in a notebook: `judgeDiagnostics(runDir)` gives the table (one row per
 * graded judge: counts, AUC with its CI, Brier, mean P per silver label, share at 0.5, the
 * verdict), the diagnostics themselves and the report's figures (a reliability diagram and P
 * histograms by label per judge), ready for `showTable` / `show`.
 */
import type { MethodAnalyses } from '../metrics/methods';
import { methodCatalog } from '../pipelines/registry';
import type { Figure, RunData } from '../plots/types';
import { judgeFigureSlug, judgeHistogramFigure, judgeReliabilityFigure, judgesOf } from '../plots/judges';
import { loadRun } from '../report/load';
import type { JudgeDiagnostics } from '../run-files';
import type { Row } from './records';

export interface JudgeDiagnosticsView {
  /** One row per judge, for `showTable` / `toDataFrame`. */
  table: Row[];
  /** metrics.json's `judges` (or computed from the results' labelled judgments). */
  judges: Record<string, JudgeDiagnostics>;
  /** `reliability-<judge>` and `p-histogram-<judge>` per judge (e.g. `reliability-toc-verify`). */
  figures: Record<string, Figure>;
  /** Each judge's one-sentence verdict. */
  verdicts: string[];
}

const round = (x: number | null, digits = 3): number | null => (x === null ? null : Math.round(x * 10 ** digits) / 10 ** digits);

/** The diagnostics as table rows (one per judge). */
export function judgeRows(judges: Record<string, JudgeDiagnostics>): Row[] {
  return Object.values(judges).map((d) => ({
    judge: d.purpose,
    judgments: d.judgments,
    labelled: d.labelled,
    right: d.positives,
    wrong: d.negatives,
    auc: round(d.auc),
    auc_ci_low: round(d.aucCiLow),
    auc_ci_high: round(d.aucCiHigh),
    brier: round(d.brier),
    mean_p_right: round(d.meanPPositive),
    mean_p_wrong: round(d.meanPNegative),
    share_p_ge_half: round(d.shareAtLeastHalf),
    auc_raw: round(d.raw?.auc ?? null),
    separates: d.separates,
    verdict: d.verdict,
  }));
}

/**
 * Judge diagnostics of a run directory (or a run already loaded with `loadRun`); `methods` gives
 * the judges' silver labels and order (default: the catalog of every registered pipeline).
 */
export function judgeDiagnostics(run: string | Pick<RunData, 'results' | 'metrics'>, methods: MethodAnalyses = methodCatalog()): JudgeDiagnosticsView {
  const data = typeof run === 'string' ? loadRun(run) : run;
  const judges = judgesOf(data, methods.judges);
  const figures: Record<string, Figure> = {};
  for (const d of Object.values(judges)) {
    figures[`reliability-${judgeFigureSlug(d.purpose)}`] = judgeReliabilityFigure(d);
    figures[`p-histogram-${judgeFigureSlug(d.purpose)}`] = judgeHistogramFigure(d);
  }
  return { table: judgeRows(judges), judges, figures, verdicts: Object.values(judges).map((d) => d.verdict) };
}
