/**
 * COMBO's own analysis, carried by its pipeline entry into the method catalog (src/metrics/methods.ts): its two
 * judges (evidentiality of a retrieved passage, consistency of a retrieved–generated pair) with
 * their silver labels, and the mean compatibility and evidentiality.
 */
import type { Example } from '../../datasets/types';
import { goldAnswerMatcher } from '../../metrics/judge-labels';
import type { MethodAnalysis, PassageText } from '../../metrics/methods';
import type { LabelledJudgment } from '../../run-files';
import type { Trace } from '../../trace/types';
import type { ComboDecisions } from './decisions';

const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
const decisionsOf = (trace: Trace): ComboDecisions => trace.decisions as ComboDecisions;

/** COMBO's numbers come from an LLM judge unless the run chose embedding (or custom) scorers. */
const isLlmJudge = (scorer: string | undefined): boolean => scorer === undefined || scorer.startsWith('llm-judge');

/**
 * `combo.evidentiality`: the retrieved passage contains a gold short answer. `combo.consistency`:
 * both passages contain the same gold short answer → true; exactly one of them, or each a
 * different one → false; neither → no label (gold says nothing about whether they agree).
 */
function labelJudgments(trace: Trace, example: Example, passageText: PassageText): LabelledJudgment[] {
  const d = decisionsOf(trace);
  const gold = goldAnswerMatcher(example);
  const out: LabelledJudgment[] = [];
  const retrievedFound = d.retrievedPassageIds.map((id) => {
    const text = passageText(id);
    return gold.empty || text === undefined ? null : gold.which(text);
  });
  if (isLlmJudge(d.scorers?.evidentiality)) {
    d.evidentiality.forEach((p, i) => {
      const found = retrievedFound[i];
      out.push({ purpose: 'combo.evidentiality', p, label: found === null || found === undefined ? null : found.size > 0 });
    });
  }
  if (isLlmJudge(d.scorers?.consistency)) {
    const generatedFound = d.generatedPassages.map((t) => (gold.empty ? null : gold.which(t)));
    d.consistency.forEach((row, i) => {
      if (d.consistencySkipped?.[i]) return; // not judged: the passage was not evidential enough
      row.forEach((p, j) => {
        const r = retrievedFound[i];
        const g = generatedFound[j];
        let label: boolean | null = null;
        if (r && g && (r.size > 0 || g.size > 0)) label = [...r].some((a) => g.has(a));
        out.push({ purpose: 'combo.consistency', p, label });
      });
    });
  }
  return out;
}

/**
 * `decision_compatibility` (mean over all pairs), `decision_matched_compatibility` (mean over the
 * pairs the reader saw), `decision_evidentiality` (mean), `decision_judgments` (evidentiality and
 * consistency scores per question: judge calls with the LLM scorers; N + N² with the product
 * rule, fewer gated) and `decision_gated_out` (share of retrieved passages the gate found not
 * evidential; gated runs only).
 */
function statistics(traces: readonly Trace[]): Record<string, number> {
  const decisions = traces.map(decisionsOf);
  // A skipped row was never scored; every other row scored each generated passage once.
  const scored = (d: ComboDecisions) =>
    d.evidentiality.length + d.consistency.reduce((n, row, i) => n + (d.consistencySkipped?.[i] ? 0 : row.length), 0);
  const gated = decisions.filter((d) => d.consistencySkipped !== undefined);
  return {
    decision_compatibility: mean(decisions.flatMap((d) => d.compatibility.flat())),
    decision_matched_compatibility: mean(
      decisions.flatMap((d) => d.pairs?.map((p) => p.compatibility) ?? d.matching.flatMap((j, i) => (j >= 0 ? [d.compatibility[i][j]] : []))),
    ),
    decision_evidentiality: mean(decisions.flatMap((d) => d.evidentiality)),
    decision_judgments: mean(decisions.map(scored)),
    ...(gated.length > 0 ? { decision_gated_out: mean(gated.flatMap((d) => d.consistencySkipped!.map((s) => (s ? 1 : 0)))) } : {}),
  };
}

export const comboAnalysis: Omit<MethodAnalysis, 'kind'> = {
  judges: [
    { purpose: 'combo.evidentiality', labels: ['Yes', 'No'], silverLabel: 'the retrieved passage contains a gold short answer' },
    {
      purpose: 'combo.consistency',
      labels: ['Yes', 'No'],
      silverLabel: 'retrieved and generated passage contain the same gold short answer (pairs where neither has one are unlabelled)',
    },
  ],
  labelJudgments,
  statistics,
};
