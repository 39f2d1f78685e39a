import { describe, expect, it } from 'vitest';
import { decisionStatistics, metricSafe } from '../../src/metrics/decisions';
import { ComboPipeline } from '../../src/pipelines/combo';
import { comboOptionsSchema } from '../../src/pipelines/combo/options';
import { DivaPipeline } from '../../src/pipelines/diva';
import { divaOptionsSchema } from '../../src/pipelines/diva/options';
import { TocPipeline } from '../../src/pipelines/toc';
import { tocOptionsSchema } from '../../src/pipelines/toc/options';
import type { PipelineContext } from '../../src/pipelines/types';
import { VerifyEditPipeline } from '../../src/pipelines/verify-edit';
import { verifyEditOptionsSchema } from '../../src/pipelines/verify-edit/options';
import type { Trace } from '../../src/trace/types';
import type { ComboDecisions } from '../../src/pipelines/combo/decisions';
import type { TocDecisions } from '../../src/pipelines/toc/decisions';
import {
  asqaExample,
  FakeEmbedder,
  FakeRetriever,
  fixedDemos,
  hotpotDemos,
  hotpotExample,
  judgeField,
  lastField,
  passage,
  scriptedLlm,
  type JudgeResponder,
  type Responder,
} from '../pipelines/fakes';
import { methodCatalog } from '../../src/pipelines/registry';

const corpus = [
  passage('p1', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('p2', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
  passage('p3', 'Bread', 'Bread is made from flour, water and yeast.'),
];
const AQ = 'Who played the Weasley brothers in Harry Potter?';

/** Four fresh pairs per expansion; P(true) by answer number 1..4: 0.9, 0.7, 0.3, 0.1. */
function rac(): Responder {
  let k = 0;
  return (request) => {
    const q = lastField(request, 'Question');
    const lines: string[] = [];
    for (let i = 1; i <= 4; i++) {
      k += 1;
      lines.push(`DQ ${i}: ${q.replace(/\?$/, '')} variant ${k}?`, `DA ${i}: Answer ${k}`);
    }
    return lines.join('\n');
  };
}
const P_TRUE = [0.9, 0.7, 0.3, 0.1];
const tocJudge: JudgeResponder = (r) => P_TRUE[(Number(/\d+/.exec(judgeField(r, 'Proposed answer'))![0]) - 1) % 4];

/** `judges: null`: a provider without probabilities (text-mode judgments). */
async function tocTraces(options: Record<string, unknown>, judges: Record<string, JudgeResponder> | null = { 'toc.verify': tocJudge }) {
  const traces: Trace[] = [];
  for (const id of ['q1', 'q2']) {
    const { llm } = scriptedLlm({ 'toc.rac': rac(), 'toc.verify': 'False', 'toc.answer': 'Answer: Several actors.' }, judges ?? undefined);
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    // The statistics of stop-when-empty trees (the released search's have a test of their own).
    const o = tocOptionsSchema.parse({ search: 'stop-when-empty', nShots: 1, poolSize: 3, nPassages: 2, reranker: 'none', maxDepth: 1, maxTrials: 1, ...options });
    traces.push((await new TocPipeline(o).answer(asqaExample(id, AQ), ctx)).trace);
  }
  return traces;
}

describe('decision statistics from traces', () => {
  it('ToC: prune and un-prune rates, nodes, depth, stop reasons, mean P(true), judge mode', async () => {
    const traces = await tocTraces({ pruneThreshold: 0.5, minValidNodes: 3, unpruneFloor: 0.2 });
    const s = decisionStatistics(traces, methodCatalog());
    // Per tree: 4 nodes judged 0.9/0.7/0.3/0.1; 0.3 and 0.1 rejected; un-pruning wants 3 valid,
    // restores 0.3; 0.1 is below the floor and stays pruned (blocked, not needed afterwards).
    expect(s.metrics.decision_prune_rate).toBeCloseTo(2 / 4);
    expect(s.metrics.decision_unpruned_rate).toBeCloseTo(1 / 2);
    expect(s.metrics.decision_unprune_blocked_rate).toBe(0);
    expect(s.metrics.decision_nodes_per_tree).toBe(4);
    expect(s.metrics.decision_valid_nodes_per_tree).toBe(3);
    expect(s.metrics.decision_tree_depth).toBe(1);
    expect(s.metrics.decision_stop_max_depth).toBe(1);
    expect(s.metrics.decision_stop_max_nodes).toBe(0);
    expect(s.metrics.decision_p_yes_toc_verify).toBeCloseTo((0.9 + 0.7 + 0.3 + 0.1) / 4);
    expect(s.metrics.decision_fallback_rate).toBe(0);
    expect(s.metrics.decision_parse_failure_rate).toBe(0);
    expect(s.judgeMode).toBe('probability');

    // The threshold knob moves the statistics.
    const strict = decisionStatistics(await tocTraces({ pruneThreshold: 0.8, minValidNodes: 0 }), methodCatalog());
    expect(strict.metrics.decision_prune_rate).toBeCloseTo(3 / 4);
    expect(strict.metrics.decision_valid_nodes_per_tree).toBe(1);
    // A floor above every rejected P(true) blocks un-pruning of all of them.
    const floored = decisionStatistics(await tocTraces({ pruneThreshold: 0.8, minValidNodes: 4, unpruneFloor: 0.95 }), methodCatalog());
    expect(floored.metrics.decision_unpruned_rate).toBe(0);
    expect(floored.metrics.decision_unprune_blocked_rate).toBe(1);
  });

  it('text-mode judgments: fallback rate 1, judge mode text; mixed runs say mixed', async () => {
    const text = await tocTraces({ minValidNodes: 0 }, null);
    const s = decisionStatistics(text, methodCatalog());
    expect(s.judgeMode).toBe('text');
    expect(s.metrics.decision_fallback_rate).toBe(1);
    expect(s.metrics.decision_prune_rate).toBe(1);
    const probability = await tocTraces({ minValidNodes: 0 });
    expect(decisionStatistics([...text, ...probability], methodCatalog()).judgeMode).toBe('mixed');
    expect(decisionStatistics([...text, ...probability], methodCatalog()).metrics.decision_fallback_rate).toBeCloseTo(0.5);
  });

  it('ToC stop-reason shares and demo copies', async () => {
    const [a, b] = await tocTraces({ minValidNodes: 0 });
    (b.decisions as TocDecisions).stopReason = 'max-calls';
    (b.decisions as TocDecisions).expansions[0].copiedDemoId = 'd1';
    const s = decisionStatistics([a, b], methodCatalog());
    expect(s.metrics.decision_stop_max_depth).toBe(0.5);
    expect(s.metrics.decision_stop_max_calls).toBe(0.5);
    expect(s.metrics.decision_demo_copy_rate).toBeCloseTo(1 / 2);
  });

  it('parse failures per LLM call', async () => {
    const { llm } = scriptedLlm({ 'toc.rac': 'no pairs at all', 'toc.answer': 'Answer: Something.' });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const o = tocOptionsSchema.parse({ search: 'stop-when-empty', nShots: 1, poolSize: 3, nPassages: 2, reranker: 'none', maxTrials: 1 });
    const trace = (await new TocPipeline(o).answer(asqaExample('q', AQ), ctx)).trace;
    // One RAC call (unparsed) and one answer call.
    expect(decisionStatistics([trace], methodCatalog()).metrics.decision_parse_failure_rate).toBeCloseTo(1 / 2);
    expect(decisionStatistics([trace], methodCatalog()).judgeMode).toBe('none');
  });

  it('Diva route and usefulness shares', async () => {
    const traces: Trace[] = [];
    for (const p of [0.9, 0.1, 0.05]) {
      const { llm } = scriptedLlm(
        {
          'diva.diversify': 'Ambiguity type: subject\nReason: Several brothers.\nInterpretations:\n1. Who played Ron?\n2. Who played Percy?',
          'diva.generate.rag': 'Answer: Rupert Grint.',
          'diva.generate.closed-book': 'Answer: Someone.',
        },
        { 'diva.verify': () => p },
      );
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
      traces.push((await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 2 })).answer(asqaExample(`q${p}`, AQ), ctx)).trace);
    }
    const s = decisionStatistics(traces, methodCatalog());
    expect(s.metrics.decision_route_rag).toBeCloseTo(1 / 3);
    expect(s.metrics.decision_route_closed_book).toBeCloseTo(2 / 3);
    expect(s.metrics.decision_usefulness_Useful).toBeCloseTo(1 / 3);
    expect(s.metrics.decision_usefulness_PartialUseful).toBe(0);
    expect(s.metrics.decision_p_yes_diva_verify).toBeCloseTo((0.9 + 0.1 + 0.05) / 3);
  });

  it('COMBO mean compatibility over all pairs and over the matching', async () => {
    const { llm } = scriptedLlm(
      { 'combo.generate': (_r, i) => ['Ron was Rupert Grint.', 'Percy was Chris Rankin.'][i], 'combo.read': 'Answer: Rupert Grint.' },
      { 'combo.evidentiality': () => 0.8, 'combo.consistency': (r) => (/Ron[\s\S]*Ron|Percy[\s\S]*Percy/.test(r.messages[0].content) ? 0.9 : 0.2) },
    );
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const trace = (await new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 0 })).answer(asqaExample('q', AQ), ctx)).trace;
    const d = trace.decisions as ComboDecisions;
    const s = decisionStatistics([trace], methodCatalog());
    const all = d.compatibility.flat();
    expect(s.metrics.decision_compatibility).toBeCloseTo(all.reduce((a, b) => a + b, 0) / all.length);
    expect(s.metrics.decision_matched_compatibility).toBeCloseTo(d.matchingScore! / 2);
    expect(s.metrics.decision_evidentiality).toBeCloseTo(0.8);
    expect(s.metrics.decision_p_yes_combo_evidentiality).toBeCloseTo(0.8);
    // Gated (default), both passages evidential: 2 evidentiality + 2 × 2 consistency judgments.
    expect(s.metrics.decision_judgments).toBe(6);
    expect(s.metrics.decision_gated_out).toBe(0);
  });

  it('COMBO judgments per question: the gate saves a row of consistency judgments per passage it closes', async () => {
    const answer = async (options: Record<string, unknown>) => {
      const { llm } = scriptedLlm(
        { 'combo.generate': (_r, i) => ['Ron was Rupert Grint.', 'Percy was Chris Rankin.'][i], 'combo.read': 'Answer: Rupert Grint.' },
        { 'combo.evidentiality': (r) => (r.messages[0].content.includes('Rupert') ? 0.8 : 0.3), 'combo.consistency': 0.6 },
      );
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
      const pipeline = new ComboPipeline(comboOptionsSchema.parse({ nPassages: 2, nShots: 0, ...options }));
      return (await pipeline.answer(asqaExample('q', AQ), ctx)).trace;
    };
    const gated = await answer({});
    const calls = gated.llmCalls.filter((c) => c.purpose === 'combo.evidentiality' || c.purpose === 'combo.consistency').length;
    expect(decisionStatistics([gated], methodCatalog()).metrics.decision_judgments).toBe(calls);
    expect(calls).toBe(2 + 1 * 2);
    expect(decisionStatistics([gated], methodCatalog()).metrics.decision_gated_out).toBe(0.5);
    const product = decisionStatistics([await answer({ compatibility: 'product' })], methodCatalog()).metrics;
    expect(product.decision_judgments).toBe(2 + 2 * 2);
    expect(product.decision_gated_out).toBeUndefined();
    // A trace written before issue 34 (no pairs, no gate) still reads: every pair judged.
    const old = await answer({ compatibility: 'product' });
    const d = old.decisions as ComboDecisions;
    delete d.pairs;
    const s = decisionStatistics([old], methodCatalog()).metrics;
    expect(s.decision_judgments).toBe(2 + 2 * 2);
    expect(s.decision_matched_compatibility).toBeCloseTo((d.compatibility[0][d.matching[0]] + d.compatibility[1][d.matching[1]]) / 2, 12);
  });

  it('Verify-and-Edit edit rate and mean consistency', async () => {
    const traces: Trace[] = [];
    for (const answers of [['1991', '1991', '1991', '1990', '1989'], ['1991', '1990', '1989', '1988', '1987']]) {
      const { llm } = scriptedLlm({
        've.cot': (_r, i) => `Palmer was born then. So the answer is: ${answers[i]}.`,
        've.verifying-question': 'When was Jolyon Palmer born?',
        've.verifying-answer': 'Jolyon Palmer was born in 1991.',
        've.answer': 'So the answer is: 1991.',
        've.answer-logprob': 'So the answer is: 1991.',
      });
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos(hotpotDemos) };
      traces.push((await new VerifyEditPipeline(verifyEditOptionsSchema.parse({ nShots: 1 })).answer(hotpotExample(answers[1], 'When?'), ctx)).trace);
    }
    const s = decisionStatistics(traces, methodCatalog());
    expect(s.metrics.decision_edit_rate).toBe(0.5);
    expect(s.metrics.decision_consistency).toBeCloseTo((3 / 5 + 1 / 5) / 2);
  });

  it('no traces: no statistics; metric names are safe for MLflow', () => {
    expect(decisionStatistics([], methodCatalog())).toEqual({ metrics: {}, judgeMode: 'none', judgments: 0 });
    expect(metricSafe('toc.verify')).toBe('toc_verify');
    expect(metricSafe('closed-book')).toBe('closed_book');
  });
});
