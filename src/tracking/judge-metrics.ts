/**
 * Judge diagnostics (`metrics.json` `judges`, src/metrics/judge-quality.ts) as MLflow metrics:
 * `judge.<purpose>.<field>`, e.g. `judge.toc.verify.auc`, `judge.toc.verify.auc_ci_low`. Values
 * a run could not compute (an AUC with one class empty) are left out rather than logged as NaN,
 * so MLflow's charts and comparisons skip them.
 */
import type { JudgeDiagnostics } from '../run-files';

/** MLflow field name → how to read it from one judge's diagnostics. */
const fields: Record<string, (d: JudgeDiagnostics) => number | null | undefined> = {
  auc: (d) => d.auc,
  auc_ci_low: (d) => d.aucCiLow,
  auc_ci_high: (d) => d.aucCiHigh,
  brier: (d) => d.brier,
  mean_p_pos: (d) => d.meanPPositive,
  mean_p_neg: (d) => d.meanPNegative,
  share_ge_half: (d) => d.shareAtLeastHalf,
  judgments: (d) => d.judgments,
  labelled: (d) => d.labelled,
  positives: (d) => d.positives,
  negatives: (d) => d.negatives,
  separates: (d) => (d.separates ? 1 : 0),
  auc_raw: (d) => d.raw?.auc,
  auc_raw_ci_low: (d) => d.raw?.aucCiLow,
  auc_raw_ci_high: (d) => d.raw?.aucCiHigh,
  brier_raw: (d) => d.raw?.brier,
  share_ge_half_raw: (d) => d.raw?.shareAtLeastHalf,
};

/** The MLflow metric names of one judge field (`judge.toc.verify.auc`). */
export function judgeMetricName(purpose: string, field: string): string {
  return `judge.${purpose}.${field}`;
}

export function judgeMetricsForMlflow(judges: Record<string, JudgeDiagnostics> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [purpose, d] of Object.entries(judges ?? {})) {
    for (const [field, read] of Object.entries(fields)) {
      const value = read(d);
      if (typeof value === 'number' && Number.isFinite(value)) out[judgeMetricName(purpose, field)] = value;
    }
  }
  return out;
}
