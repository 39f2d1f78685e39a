/**
 * Decision statistics: what a pipeline *decided* on a run, computed from its traces (never by
 * re-running), so that a reader of an ablation can see whether a knob changed the decisions
 * before asking whether it changed the answers. Issue #10 item 5 names them; all are run-level
 * means or shares, written to `metrics.json` (`decisions`), logged as MLflow metrics and shown in
 * the report and the sweep summary.
 *
 * Every pipeline:
 * - `decision_parse_failure_rate`: parse failures per LLM call (a reply the pipeline could not read
 *   and replaced by a stated fallback; `Trace.parseFailures`).
 * - `decision_fallback_rate`: share of graded judgments that fell back to parsing text because the
 *   provider gave no probabilities (`judge.mode = text`).
 * - `decision_p_yes_<purpose>`: mean P(labels[0]) of each judge as the judge gave it, i.e. raw
 *   (e.g. `decision_p_yes_toc_verify`); with `judgeCalibration: content-free` also
 *   `decision_p_cal_<purpose>`, the mean calibrated P the pipeline thresholded, and the judge's
 *   prior appears as `decision_p_yes_<purpose>_prior` (its content-free judgments).
 * - `judgeMode` (a run param `judge_mode`): probability | text | mixed, or none without judgments.
 * Each method adds its own statistics (its `MethodAnalysis.statistics`, defined with its
 * pipeline entry and handed over in the method catalog: src/metrics/methods.ts), computed over
 * the run's traces of its kind — e.g.
 * ToC's prune rate and stop reasons (src/pipelines/toc/analysis.ts), Verify-and-Edit's edit rate.
 */
import type { JudgeMode } from '../llm/types';
import type { Trace } from '../trace/types';
import type { MethodAnalyses } from './methods';

export type RunJudgeMode = JudgeMode | 'mixed' | 'none';

export interface DecisionStatistics {
  /** `decision_*` name → value (shares and rates in [0, 1], means in their own unit). */
  metrics: Record<string, number>;
  /** How the run's judgments were read (the `judge_mode` param). */
  judgeMode: RunJudgeMode;
  /** Judgments seen (all purposes). */
  judgments: number;
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

/** `toc.verify` → `toc_verify`: metric names MLflow and CSV headers take as they are. */
export function metricSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
}

/** Shares of each value, as `${prefix}${value}`; every value of `all` gets a key (0 when absent). */
export function shares(values: readonly string[], prefix: string, all: readonly string[] = []): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of all) out[`${prefix}${metricSafe(v)}`] = 0;
  for (const v of values) out[`${prefix}${metricSafe(v)}`] = (out[`${prefix}${metricSafe(v)}`] ?? 0) + 1 / values.length;
  return out;
}

/**
 * Decision statistics of a run's traces (one per answered question; failed questions have none);
 * `methods` (the method catalog, `methodCatalog()`) adds each method's own.
 */
export function decisionStatistics(traces: readonly Trace[], methods: MethodAnalyses): DecisionStatistics {
  const metrics: Record<string, number> = {};
  if (traces.length === 0) return { metrics, judgeMode: 'none', judgments: 0 };

  // Every pipeline: parse failures, text fallbacks and mean P(yes) per judge purpose.
  let calls = 0;
  let parseFailures = 0;
  const pByPurpose = new Map<string, number[]>();
  const pCalByPurpose = new Map<string, number[]>();
  const modes = new Set<JudgeMode>();
  let judgments = 0;
  let textJudgments = 0;
  for (const t of traces) {
    calls += t.llmCalls.length;
    parseFailures += t.parseFailures.length;
    for (const c of t.llmCalls) {
      if (!c.judge) continue;
      judgments += 1;
      modes.add(c.judge.mode);
      if (c.judge.mode === 'text') textJudgments += 1;
      const list = pByPurpose.get(c.purpose) ?? [];
      list.push(c.judge.p);
      pByPurpose.set(c.purpose, list);
      if (c.judge.calibration) {
        const cal = pCalByPurpose.get(c.purpose) ?? [];
        cal.push(c.judge.calibration.p);
        pCalByPurpose.set(c.purpose, cal);
      }
    }
  }
  metrics.decision_parse_failure_rate = calls === 0 ? 0 : parseFailures / calls;
  metrics.decision_fallback_rate = judgments === 0 ? 0 : textJudgments / judgments;
  for (const [purpose, ps] of [...pByPurpose].sort(([a], [b]) => a.localeCompare(b))) {
    metrics[`decision_p_yes_${metricSafe(purpose)}`] = mean(ps);
  }
  for (const [purpose, ps] of [...pCalByPurpose].sort(([a], [b]) => a.localeCompare(b))) {
    metrics[`decision_p_cal_${metricSafe(purpose)}`] = mean(ps);
  }
  const judgeMode: RunJudgeMode = modes.size === 0 ? 'none' : modes.size > 1 ? 'mixed' : [...modes][0];

  // Each method's own statistics over its traces (a run normally holds one kind).
  const byKind = new Map<string, Trace[]>();
  for (const t of traces) byKind.set(t.decisions.kind, [...(byKind.get(t.decisions.kind) ?? []), t]);
  for (const [kind, own] of byKind) Object.assign(metrics, methods.analysis(kind)?.statistics?.(own));

  return { metrics, judgeMode, judgments };
}
