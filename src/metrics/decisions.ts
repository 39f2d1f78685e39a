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
 * ToC: `decision_prune_rate` (share of verified nodes the judge rejected), `decision_unpruned_rate`
 * (share of those rejected nodes restored by un-pruning), `decision_unprune_blocked_rate`,
 * `decision_demo_copy_rate` (share of expansions that copied a demo), `decision_nodes_per_tree`
 * (nodes other than the root, duplicates excluded), `decision_tree_depth` (deepest node),
 * `decision_valid_nodes_per_tree`, and `decision_stop_<reason>` (share of questions).
 * Verify-and-Edit: `decision_edit_rate`, `decision_consistency` (mean).
 * CoT-SC: `decision_consistency` (mean).
 * Diva: `decision_route_<route>` and `decision_usefulness_<label>` (shares of questions).
 * COMBO: `decision_compatibility` (mean over all pairs), `decision_matched_compatibility` (mean
 * over the chosen matching), `decision_evidentiality` (mean).
 */
import type { JudgeMode } from '../llm/types';
import type { MethodDecisions, TocDecisions, Trace } from '../trace/types';

export type RunJudgeMode = JudgeMode | 'mixed' | 'none';

export interface DecisionStatistics {
  /** `decision_*` name → value (shares and rates in [0, 1], means in their own unit). */
  metrics: Record<string, number>;
  /** How the run's judgments were read (the `judge_mode` param). */
  judgeMode: RunJudgeMode;
  /** Judgments seen (all purposes). */
  judgments: number;
}

type Kind = MethodDecisions['kind'];
type OfKind<K extends Kind> = Extract<MethodDecisions, { kind: K }>;

function ofKind<K extends Kind>(decisions: MethodDecisions[], kind: K): Array<OfKind<K>> {
  return decisions.filter((d): d is OfKind<K> => d.kind === kind);
}

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

/** `toc.verify` → `toc_verify`: metric names MLflow and CSV headers take as they are. */
export function metricSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
}

/** Shares of each value, as `${prefix}${value}`; every value of `all` gets a key (0 when absent). */
function shares(values: string[], prefix: string, all: readonly string[] = []): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of all) out[`${prefix}${metricSafe(v)}`] = 0;
  for (const v of values) out[`${prefix}${metricSafe(v)}`] = (out[`${prefix}${metricSafe(v)}`] ?? 0) + 1 / values.length;
  return out;
}

const TOC_STOP_REASONS: ReadonlyArray<TocDecisions['stopReason']> = ['max-nodes', 'max-depth', 'max-trials', 'max-expansions', 'queue-empty', 'max-calls', 'unambiguous'];
const DIVA_ROUTES = ['rag', 'closed-book'] as const;
const DIVA_LABELS = ['Useful', 'PartialUseful', 'Useless'] as const;

/** Decision statistics of a run's traces (one per answered question; failed questions have none). */
export function decisionStatistics(traces: readonly Trace[]): DecisionStatistics {
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

  const decisions = traces.map((t) => t.decisions);
  const toc = ofKind(decisions, 'toc');
  if (toc.length > 0) {
    let verified = 0;
    let rejected = 0;
    let unpruned = 0;
    let blocked = 0;
    let expansions = 0;
    let copies = 0;
    const nodesPerTree: number[] = [];
    const validPerTree: number[] = [];
    const depths: number[] = [];
    for (const d of toc) {
      const children = d.nodes.filter((n) => n.id !== 0 && n.duplicateOf === undefined);
      nodesPerTree.push(children.length);
      validPerTree.push(children.filter((n) => !n.pruned && n.skipped === undefined).length);
      depths.push(Math.max(0, ...children.map((n) => n.depth)));
      for (const n of children) {
        if (n.verdict === null) continue;
        verified += 1;
        if (n.verdict === false) rejected += 1;
        if (n.unpruned) unpruned += 1;
        if (n.unpruneBlocked) blocked += 1;
      }
      expansions += d.expansions.length;
      copies += d.expansions.filter((e) => e.copiedDemoId !== undefined).length;
    }
    metrics.decision_prune_rate = verified === 0 ? 0 : rejected / verified;
    metrics.decision_unpruned_rate = rejected === 0 ? 0 : unpruned / rejected;
    metrics.decision_unprune_blocked_rate = rejected === 0 ? 0 : blocked / rejected;
    metrics.decision_demo_copy_rate = expansions === 0 ? 0 : copies / expansions;
    metrics.decision_nodes_per_tree = mean(nodesPerTree);
    metrics.decision_valid_nodes_per_tree = mean(validPerTree);
    metrics.decision_tree_depth = mean(depths);
    Object.assign(metrics, shares(toc.map((d) => d.stopReason), 'decision_stop_', TOC_STOP_REASONS));
  }

  const ve = ofKind(decisions, 'verify-edit');
  if (ve.length > 0) {
    metrics.decision_edit_rate = mean(ve.map((d) => (d.edited ? 1 : 0)));
    metrics.decision_consistency = mean(ve.map((d) => d.consistency));
  }
  const sc = ofKind(decisions, 'cot-sc');
  if (sc.length > 0) metrics.decision_consistency = mean(sc.map((d) => d.consistency));

  const diva = ofKind(decisions, 'diva');
  if (diva.length > 0) {
    Object.assign(metrics, shares(diva.map((d) => d.route), 'decision_route_', DIVA_ROUTES));
    Object.assign(metrics, shares(diva.map((d) => d.usefulness), 'decision_usefulness_', DIVA_LABELS));
  }

  const combo = ofKind(decisions, 'combo');
  if (combo.length > 0) {
    metrics.decision_compatibility = mean(combo.flatMap((d) => d.compatibility.flat()));
    metrics.decision_matched_compatibility = mean(
      combo.flatMap((d) => d.matching.flatMap((j, i) => (j >= 0 ? [d.compatibility[i][j]] : []))),
    );
    metrics.decision_evidentiality = mean(combo.flatMap((d) => d.evidentiality));
  }

  return { metrics, judgeMode, judgments };
}
