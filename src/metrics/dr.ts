/**
 * DR score (ASQA): the geometric mean of Disambig-F1 and ROUGE-L, both on the 0–100 scale,
 *
 *   DR = sqrt(D-F1 × ROUGE-L).
 *
 * "ROUGE-L" here is what ASQA's scorer calls ROUGE-L, i.e. `rougeLsum` with Punkt sentences
 * (rouge.ts). The run-level DR is computed from the run-level means — sqrt(mean D-F1 × mean
 * ROUGE-Lsum) — not as the mean of per-question DRs; `aggregate` (example.ts) does that.
 */
export function drScore(disambigF1: number, rougeL: number): number {
  return Math.sqrt(Math.max(0, disambigF1) * Math.max(0, rougeL));
}
