/**
 * DR score (ASQA): the geometric mean of Disambig-F1 and ROUGE-L, both on the 0–100 scale,
 *
 *   DR = sqrt(D-F1 × ROUGE-L).
 *
 * "ROUGE-L" here is what ASQA's scorer calls ROUGE-L, i.e. `rougeLsum` with Punkt sentences
 * (rouge.ts). The run-level DR is computed from the run-level means — sqrt(mean D-F1 × mean
 * ROUGE-Lsum) — not as the mean of per-question DRs (`drFamily.aggregate`), over the questions
 * that have both, with a bootstrap CI of that statistic. Under trials the run-level means are the
 * means of per-question means (trials.ts) and the CI is the two-level bootstrap of the same
 * statistic; DR gets `trials` but no `trialSd`/`samplingShare`, which are defined for means of
 * per-row values and DR is not one (its D-F1 and ROUGE-Lsum carry them).
 */
import { bootstrapInterval } from './bootstrap';
import { adjustedTrials, drawnMean, groupByQuestion, hasTrials, twoLevelInterval, type TwoLevelDraw } from './trials';
import type { BootstrapOptions } from './bootstrap';
import type { MetricAggregate } from '../run-files';
import type { MetricFamily } from './score';

export function drScore(disambigF1: number, rougeL: number): number {
  return Math.sqrt(Math.max(0, disambigF1) * Math.max(0, rougeL));
}

/** Run-level DR of questions with trials: from the means of per-question means, two-level CI. */
function drOverTrials(groups: ReadonlyArray<ReadonlyArray<{ metrics: Record<string, number> }>>, options: BootstrapOptions): MetricAggregate {
  const d = groups.map((g) => g.map((r) => r.metrics.d_f1));
  const g = groups.map((q) => q.map((r) => r.metrics.rougeLsum));
  // Each component resampled on its adjusted values (trials.ts `adjustedTrials`).
  const [ad, ag] = [adjustedTrials(d), adjustedTrials(g)];
  const stat = (draw: TwoLevelDraw): number => drScore(drawnMean(ad, draw), drawnMean(ag, draw));
  const ci = twoLevelInterval([d.map((v) => v.length)], stat, options);
  const mean = (vs: readonly number[][]) => vs.reduce((s, v) => s + v.reduce((a, x) => a + x, 0) / v.length, 0) / vs.length;
  return { mean: drScore(mean(d), mean(g)), ciLow: ci.low, ciHigh: ci.high, n: groups.length, trials: Math.max(...d.map((v) => v.length)) };
}

/** Registry entry: per question sqrt(D-F1 × ROUGE-Lsum); the run-level value from the run-level means. */
export const drFamily: MetricFamily<'dr'> = {
  family: 'dr',
  reference: 'ASQA (Stelmakh et al. 2022) DR score',
  metrics: ['dr'],
  datasets: ['asqa'],
  defaults: ['dr'],
  requires: ['d_f1', 'rougeLsum'],
  score({ scores }) {
    const { d_f1: d, rougeLsum: g } = scores;
    if (d === undefined || g === undefined) return [{ name: 'dr', score: null, reason: `needs d_f1 and rougeLsum (${d === undefined ? 'd_f1' : 'rougeLsum'} missing)` }];
    return [{ name: 'dr', score: drScore(d, g) }];
  },
  aggregate(rows, options): Record<string, MetricAggregate> {
    // The questions that have a DR, i.e. both D-F1 and ROUGE-Lsum.
    const both = rows.filter((r) => Number.isFinite(r.metrics.dr) && Number.isFinite(r.metrics.d_f1) && Number.isFinite(r.metrics.rougeLsum));
    if (both.length === 0) return {};
    if (hasTrials(both)) return { dr: drOverTrials(groupByQuestion(both), options) };
    const d = both.map((r) => r.metrics.d_f1);
    const g = both.map((r) => r.metrics.rougeLsum);
    const stat = (idx: ArrayLike<number>): number => {
      let sd = 0;
      let sg = 0;
      for (let i = 0; i < idx.length; i++) {
        sd += d[idx[i]];
        sg += g[idx[i]];
      }
      return drScore(sd / idx.length, sg / idx.length);
    };
    const ci = bootstrapInterval(both.length, stat, options);
    return { dr: { mean: stat(Array.from({ length: both.length }, (_, i) => i)), ciLow: ci.low, ciHigh: ci.high, n: both.length } };
  },
};
