/**
 * ToC's search as the authors' run_toc.py runs it (issue 34): restarts of an emptied queue with
 * the root and the valid nodes, the restart / step / node limits, pruning switched off, the one
 * pool reranked per node with answered passages removed, demos by the node's question — and the
 * steps (expand, verify, un-prune, answer) one at a time, each with a scripted model.
 */
import { describe, expect, it } from 'vitest';
import { tocDecisionsSchema } from '../../../src/pipelines/toc/decisions';
import { TocPipeline } from '../../../src/pipelines/toc';
import { answerTree } from '../../../src/pipelines/toc/answer';
import { expand } from '../../../src/pipelines/toc/expand';
import { tocOptionsSchema, type TocOptions } from '../../../src/pipelines/toc/options';
import { openSession } from '../../../src/pipelines/toc/session';
import { switchesPruningOff, restorePruned } from '../../../src/pipelines/toc/unprune';
import { admitPairs } from '../../../src/pipelines/toc/verify';
import { EmbedderReranker } from '../../../src/pipelines/common/retrieval';
import { tocAnalysis } from '../../../src/pipelines/toc/analysis';
import { pruningEffect, pruningEffectFigure } from '../../../src/pipelines/toc/pruning-figure';
import { clarificationTreeFigure, nodesAfterRestart } from '../../../src/pipelines/toc/tree-figure';
import type { DemoQuestion, DemoSelector, PipelineContext } from '../../../src/pipelines/types';
import type { TocDecisions } from '../../../src/pipelines/toc/decisions';
import { asqaDemos, asqaExample, callText, FakeEmbedder, FakeRetriever, fixedDemos, lastField, scriptedLlm, weasleyCorpus, WEASLEY_AQ, type Responder } from '../fakes';

const corpus = weasleyCorpus;
const AQ = WEASLEY_AQ;

/** Released search by default (no `search` given), small prompts, no reranker. */
function options(overrides: Partial<TocOptions> = {}): TocOptions {
  return tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', ...overrides });
}

/** A RAC responder inventing `perCall` fresh pairs per call; answers numbered 1, 2, … across calls. */
function fresh(perCall: number): Responder {
  let k = 0;
  return (request) => {
    const q = lastField(request, 'Question').replace(/\?$/, '');
    const lines: string[] = [];
    for (let i = 1; i <= perCall; i++) {
      k += 1;
      lines.push(`DQ ${i}: ${q} variant ${k}?`, `DA ${i}: Answer ${k}`);
    }
    return lines.join('\n');
  };
}

/** Judge True for the answers whose number passes `keep`. */
const verdictBy = (keep: (k: number) => boolean): Responder => (request) =>
  keep(Number(/Answer (\d+)/.exec(lastField(request, 'Proposed answer'))?.[1] ?? 0)) ? 'True' : 'False';

function context(routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}) {
  const { llm, provider } = scriptedLlm({ 'toc.answer': 'Answer: Several actors played them.', ...routes });
  const retriever = new FakeRetriever(corpus);
  const ctx: PipelineContext = { llm, retriever, demos: fixedDemos(), ...extra };
  return { ctx, provider, retriever };
}

async function run(o: TocOptions, routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}) {
  const { ctx, provider, retriever } = context(routes, extra);
  const out = await new TocPipeline(o).answer(asqaExample('q1', AQ), ctx);
  const d = tocDecisionsSchema.parse(out.trace.decisions);
  const calls = (purpose: string) => out.trace.llmCalls.filter((c) => c.purpose === purpose);
  return { out, d, provider, retriever, calls };
}

describe('ToC released search: restarts', () => {
  it('the released search is the default, and an emptied queue restarts with the root and every valid node', async () => {
    expect(tocOptionsSchema.parse({}).search).toBe('released');
    let n = 0;
    // The root yields two pairs; every later expansion yields nothing. (Pruning off, so that no
    // switch resets the restart count; the switch has tests of its own below.)
    const rac: Responder = (request) => (++n === 1 ? fresh(2)(request, 0) : 'I do not know.');
    const { d, calls } = await run(options({ maxTrials: 1, pruning: false }), { 'toc.rac': rac });
    // Steps 1–3 expand the root and its two children; at step 4 the queue is empty: refilled with
    // the root and nodes 1 and 2, and the root is expanded again in the same step.
    expect(d.search).toBe('released');
    expect(d.restarts).toEqual([{ step: 4, queue: [0, 1, 2] }]);
    const racQuestions = calls('toc.rac').map((c) => lastField({ messages: c.messages } as never, 'Question'));
    expect(racQuestions).toEqual([AQ, `${AQ.replace(/\?$/, '')} variant 1?`, `${AQ.replace(/\?$/, '')} variant 2?`, AQ]);
    // One restart allowed (maxTrials 1): the search ends once it is used, never on an empty queue.
    expect(d.stopReason).toBe('max-restarts');
    expect(d.steps).toBe(4);
    expect(d.expansions.map((e) => [e.step, e.nodeId])).toEqual([[1, 0], [2, 1], [3, 2], [4, 0]]);
  });

  it('stops after maxTrials restarts (pruning off from the start: nothing to switch off)', async () => {
    const { d, calls } = await run(options({ pruning: false }), { 'toc.rac': 'No idea.' });
    expect(d.restarts).toEqual([
      { step: 2, queue: [0] },
      { step: 3, queue: [0] },
      { step: 4, queue: [0] },
    ]);
    expect(d.stopReason).toBe('max-restarts');
    expect(calls('toc.rac')).toHaveLength(4);
    expect(d.pruningOffAtStep).toBeUndefined();
  });

  it('stops at maxExpansions steps; a popped node too deep to expand still counts as a step', async () => {
    // One kept pair per expansion: a chain root → 1 → … → 10 (depth 10 = maxDepth).
    const { d, calls } = await run(options({ maxNodes: 100, maxDepth: 10 }), { 'toc.rac': fresh(1), 'toc.verify': 'True' });
    expect(d.stopReason).toBe('max-expansions');
    expect(d.steps).toBe(16);
    // Step 11 pops node 10 (depth 10) and skips it; step 12 finds the queue empty and restarts.
    expect(d.depthSkips).toEqual([{ step: 11, nodeId: 10 }]);
    expect(d.restarts).toEqual([{ step: 12, queue: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }]);
    expect(calls('toc.rac')).toHaveLength(15);
    expect(d.nodes.find((n) => n.id === 10)!.expanded).toBe(false);
  });

  it('stops at maxNodes valid nodes; the answer shows the first maxNodes in BFS order', async () => {
    const { d, out } = await run(options({ maxNodes: 3 }), { 'toc.rac': fresh(2), 'toc.verify': 'True' });
    expect(d.stopReason).toBe('max-nodes');
    expect(d.validNodeIds).toEqual([1, 2, 3]);
    expect(d.nodes.find((n) => n.id === 4)?.skipped).toBe('max-nodes');
    expect(callText(out.trace.llmCalls.at(-1)!)).not.toContain('variant 4');
  });
});

describe('ToC released search: the call budget', () => {
  it('the default maxLlmCalls does not cut the released search short, even at 15 pairs per expansion with one kept', async () => {
    // Each expansion keeps exactly one of its 15 pairs (the first), so pruning never switches off
    // and every pair is judged until the 10th valid node: about the most judgments the search asks.
    const o = tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none' });
    const { d, out, calls } = await run(o, { 'toc.rac': fresh(15), 'toc.verify': verdictBy((k) => k % 15 === 1) });
    expect(d.stopReason).toBe('max-nodes');
    expect(d.expansions).toHaveLength(10);
    expect(calls('toc.verify')).toHaveLength(9 * 15 + 1);
    expect(d.nodes.filter((n) => n.skipped === 'max-nodes')).toHaveLength(14);
    expect(out.trace.summary.llmCalls).toBe(10 + 136 + 1);
    expect(out.trace.summary.llmCalls).toBeLessThan(o.maxLlmCalls);
  });
});

describe('ToC released search: pruning switched off', () => {
  it('after maxTrials restarts an expansion whose pairs are all pruned switches pruning off and resets the restart count', async () => {
    const { d, calls } = await run(options(), { 'toc.rac': fresh(2), 'toc.verify': 'False' });
    // Steps 1–3: every pair pruned, restarts 0, 1, 2 — pruning stays on (neither limit reached).
    // Step 4: the third restart; its pairs pruned too → pruning off, restarts back to 0.
    expect(d.pruningOffAtStep).toBe(4);
    expect(d.expansions.map((e) => e.pruning)).toEqual([true, true, true, true, false, false, false, false, false]);
    expect(calls('toc.verify')).toHaveLength(8);
    // Step 5 restarts (the count begins again) and from then on every pair is admitted unverified.
    expect(d.restarts!.map((r) => r.step)).toEqual([2, 3, 4, 5]);
    const admitted = d.nodes.filter((n) => n.admittedWithPruningOff);
    expect(admitted.map((n) => n.id)).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
    expect(admitted.every((n) => n.verdict === null && !n.pruned)).toBe(true);
    expect(d.nodes.filter((n) => n.pruned)).toHaveLength(8);
    expect(d.stopReason).toBe('max-nodes');
    expect(d.validNodeIds).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17, 18]);
  });

  it('after pruningOffAfter steps an expansion that keeps nothing switches pruning off', async () => {
    // A chain of kept nodes; the 10th answer is pruned (step 10), the first expansion to keep nothing.
    const { d, calls } = await run(options({ maxNodes: 100, maxDepth: 10 }), { 'toc.rac': fresh(1), 'toc.verify': verdictBy((k) => k < 10) });
    expect(d.pruningOffAtStep).toBe(10);
    expect(calls('toc.verify')).toHaveLength(10);
    expect(d.nodes.filter((n) => n.id !== 0 && !n.admittedWithPruningOff).map((n) => n.verdict)).toEqual([...Array(9).fill(true), false]);
    // Step 11: the queue is empty; the refill holds the root and the nine valid nodes.
    expect(d.restarts).toEqual([{ step: 11, queue: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }]);
    expect(d.nodes.filter((n) => n.admittedWithPruningOff).length).toBe(6);
    expect(d.stopReason).toBe('max-expansions');
  });

  it('switchesPruningOff: only with pruning on, nothing kept, and a limit reached', () => {
    const o = { maxTrials: 3, pruningOffAfter: 10 };
    expect(switchesPruningOff({ pruning: true, restarts: 3, step: 4 }, 0, o)).toBe(true);
    expect(switchesPruningOff({ pruning: true, restarts: 0, step: 10 }, 0, o)).toBe(true);
    expect(switchesPruningOff({ pruning: true, restarts: 2, step: 9 }, 0, o)).toBe(false);
    expect(switchesPruningOff({ pruning: true, restarts: 3, step: 12 }, 1, o)).toBe(false);
    expect(switchesPruningOff({ pruning: false, restarts: 3, step: 12 }, 0, o)).toBe(false);
  });

  it('dedup while pruning is on is against the valid nodes only: a pruned pair that comes back is verified again', async () => {
    const rac = 'DQ 1: Who played Ron?\nDA 1: Rupert Grint';
    let verdicts = 0;
    // First judgment False, then True: the same pair, proposed again at the first restart, is kept.
    const verify: Responder = () => (++verdicts === 1 ? 'False' : 'True');
    const { d, calls } = await run(options({ maxTrials: 1, minValidNodes: 0 }), { 'toc.rac': rac, 'toc.verify': verify });
    expect(calls('toc.verify')).toHaveLength(2);
    expect(d.nodes[1]).toMatchObject({ question: 'Who played Ron?', pruned: true });
    expect(d.nodes[2]).toMatchObject({ question: 'Who played Ron?', pruned: false, verdict: true });
    expect(d.nodes[2].duplicateOf).toBeUndefined();
  });
});

describe('ToC pool as released', () => {
  it('retrieves once for the ambiguous question and reranks that pool for each node', async () => {
    const rac: Responder = (request) =>
      lastField(request, 'Question') === AQ ? 'DQ 1: Which Phelps twin played Fred Weasley?\nDA 1: James Phelps' : 'Nothing new.';
    const { retriever, calls } = await run(options({ reranker: 'embedder', maxTrials: 1, dropAnsweredPassages: false }), { 'toc.rac': rac, 'toc.verify': 'True' }, {
      embedder: new FakeEmbedder(),
    });
    expect(retriever.queries).toEqual([{ query: AQ, k: 5 }]);
    // The child's prompt shows the pool's passage nearest its own question first.
    const child = calls('toc.rac')[1]!;
    expect(callText(child)).toMatch(/Context:\n\[1\] James Phelps/);
    const perNode = await run(options({ reranker: 'embedder', maxTrials: 1, retrievePerNode: true }), { 'toc.rac': rac, 'toc.verify': 'True' }, {
      embedder: new FakeEmbedder(),
    });
    // retrievePerNode: a new retrieval for every expansion, each for the expanded node's question.
    const expanded = perNode.d.expansions.map((e) => perNode.d.nodes[e.nodeId]!.question);
    expect(perNode.retriever.queries.map((q) => q.query)).toEqual(expanded);
    expect(new Set(expanded)).toEqual(new Set([AQ, 'Which Phelps twin played Fred Weasley?']));
  });

  it('passages shown in a prompt that contain one of its answers leave the pool', async () => {
    // Root pool order (word overlap): p2, p4, p5, p1, p3; the root's prompt shows p2 and p4.
    const rac: Responder = (request) => (lastField(request, 'Question') === AQ ? 'DQ 1: Who played Ron?\nDA 1: Rupert Grint' : 'Nothing new.');
    const shownIn = (c: { messages: Array<{ content: string }> }) => [...callText(c).matchAll(/\[\d\] ([A-Z][a-z]+ [A-Z][a-z]+)/g)].map((m) => m[1]);
    const on = await run(options({ maxTrials: 1 }), { 'toc.rac': rac, 'toc.verify': 'True' });
    expect(on.d.expansions[0]!.removedPassageIds).toEqual(['p2']);
    expect(on.d.removedPassageIds).toEqual(['p2']);
    expect(shownIn(on.calls('toc.rac')[0]!)).toEqual(['Rupert Grint', 'Chris Rankin']);
    expect(shownIn(on.calls('toc.rac')[1]!)).toEqual(['Chris Rankin', 'Domhnall Gleeson']);
    // The evidence still comes from every retrieved passage (run_toc.py's all_passages).
    expect(on.d.nodes[1]!.evidencePassageId).toBe('p2');
    const off = await run(options({ maxTrials: 1, dropAnsweredPassages: false }), { 'toc.rac': rac, 'toc.verify': 'True' });
    expect(off.d.removedPassageIds).toBeUndefined();
    expect(shownIn(off.calls('toc.rac')[1]!)).toEqual(['Rupert Grint', 'Chris Rankin']);
  });

  it("RAC demos are chosen by the node's question; the answer's by the ambiguous question", async () => {
    const asked: string[] = [];
    const inner = fixedDemos();
    const demos: DemoSelector = { pool: asqaDemos, select: (q: DemoQuestion, k, opts) => (asked.push(q.question), inner.select(q, k, opts)) };
    const rac: Responder = (request) => (lastField(request, 'Question') === AQ ? 'DQ 1: Who played Ron?\nDA 1: Rupert Grint' : 'Nothing new.');
    // Pruning off, one restart: root, node 1, the root again (restart), then the answer.
    await run(options({ maxTrials: 1, pruning: false }), { 'toc.rac': rac }, { demos });
    expect(asked).toEqual([AQ, 'Who played Ron?', AQ, AQ]);
    asked.length = 0;
    await run(options({ maxTrials: 1, pruning: false, demosFor: 'root' }), { 'toc.rac': rac }, { demos });
    expect(asked).toEqual([AQ, AQ, AQ, AQ]);
  });

  it('the verification prompt asks whether the answer could be correct, without "possible readings" unless asked', async () => {
    const rac = 'DQ 1: Who played Ron?\nDA 1: Rupert Grint';
    const released = await run(options({ maxTrials: 1 }), { 'toc.rac': rac, 'toc.verify': 'True' });
    const text = callText(released.calls('toc.verify')[0]!);
    expect(text).toContain(`Question: ${AQ}`);
    expect(text).toContain('could the proposed answer be a correct answer to the question?');
    expect(text).not.toContain('possible readings');
    const old = await run(options({ maxTrials: 1, verifyWording: 'any-reading' }), { 'toc.rac': rac, 'toc.verify': 'True' });
    expect(callText(old.calls('toc.verify')[0]!)).toContain('under one of its possible readings?');
  });

  it("answerPassages 'pool' reranks the whole first pool against the ambiguous question; 'cover' starts from answer-bearing shown passages", async () => {
    // The child's prompt (the pool reranked for its question) shows p3, the only passage naming Oliver Phelps.
    const rac: Responder = (request) =>
      lastField(request, 'Question') === AQ ? 'DQ 1: Which Phelps twin played George?\nDA 1: Oliver Phelps' : 'Nothing new.';
    const o = { maxTrials: 1, pruning: false, nPassages: 2, reranker: 'embedder' as const };
    const cover = await run(options(o), { 'toc.rac': rac }, { embedder: new FakeEmbedder() });
    expect(cover.d.answerPassageIds).toContain('p3');
    const pool = await run(options({ ...o, answerPassages: 'pool' }), { 'toc.rac': rac }, { embedder: new FakeEmbedder() });
    const best = await new EmbedderReranker(new FakeEmbedder()).rerank(AQ, await new FakeRetriever(corpus).search(AQ, 5), 2);
    expect(pool.d.answerPassageIds).toEqual(best.map((b) => b.passage.id));
    expect(pool.d.answerPassageIds).not.toContain('p3');
  });
});

describe('ToC search: the old search stays available', () => {
  it("stop-when-empty ends on an empty queue where the released search restarts and fills the tree", async () => {
    const routes = { 'toc.rac': fresh(3), 'toc.verify': 'False' };
    const old = await run(options({ search: 'stop-when-empty', minValidNodes: 0 }), routes);
    expect(old.d.search).toBe('stop-when-empty');
    expect(old.d.stopReason).toBe('queue-empty');
    expect(old.d.validNodeIds).toEqual([]);
    expect(old.d.restarts).toBeUndefined();
    const released = await run(options({ minValidNodes: 0 }), { 'toc.rac': fresh(3), 'toc.verify': 'False' });
    expect(released.d.stopReason).not.toBe('queue-empty');
    expect(released.d.validNodeIds.length).toBe(10);
  });

  it('an unknown search is refused naming the option and the allowed values', async () => {
    const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
    let message = '';
    try {
      parsePipelineOptions('toc', { search: 'bfs' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/options?[ .]search/);
    expect(message).toContain('released');
    expect(message).toContain('stop-when-empty');
    expect(message.split('\n')).toHaveLength(1);
  });
});

describe('ToC steps, one at a time', () => {
  it('expand, verify, un-prune and answer, each on a session with a scripted model', async () => {
    const { ctx, provider } = context({
      'toc.rac': 'DQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: Who played Percy?\nDA 2: Nobody Known',
      'toc.verify': (r) => (lastField(r, 'Proposed answer') === 'Rupert Grint' ? 'True' : 'False'),
    });
    const s = openSession(options({ minValidNodes: 2 }), asqaExample('q1', AQ), ctx);
    const e = await expand(s, s.nodes[0]!);
    expect(e.pairs.map((p) => p.answer)).toEqual(['Rupert Grint', 'Nobody Known']);
    expect(e.passages.map((p) => p.id)).toEqual(['p2', 'p4']);
    expect(s.nodes).toHaveLength(1); // expanding makes no node
    const admitted = await admitPairs(s, s.nodes[0]!, e.pairs, e.callIndex, { dedup: 'valid-nodes', verify: true });
    expect(admitted.valid.map((n) => n.answer)).toEqual(['Rupert Grint']);
    expect(s.nodes[2]).toMatchObject({ pruned: true, verdict: false, evidenceHasAnswer: false });
    const restored = restorePruned(s);
    expect(restored.unprunedNodeIds).toEqual([2]);
    const answer = await answerTree(s);
    expect(answer.answerNodes.map((n) => n.id)).toEqual([1, 2]);
    expect(answer.output).toBe('Several actors played them.');
    expect(provider.received.map((r) => r.request.purpose)).toEqual(['toc.rac', 'toc.verify', 'toc.verify', 'toc.answer']);
  });
});

describe('ToC released search: statistics and figures show restarts and pruning switched off', () => {
  // Only answer 3 is judged True: root (1, 2 pruned); restart, root (3 kept, 4 pruned); node 3
  // (5, 6 pruned); … until pruning switches off and the rest is admitted unverified.
  const scenario = () => run(options({ minValidNodes: 0 }), { 'toc.rac': fresh(2), 'toc.verify': verdictBy((k) => k === 3) });

  it('decision statistics count restarts, trees with pruning switched off, and the nodes admitted after', async () => {
    const { out, d } = await scenario();
    const stats = tocAnalysis.statistics!([out.trace]);
    expect(d.restarts!.length).toBeGreaterThanOrEqual(3);
    expect(stats.decision_restarts_per_tree).toBe(d.restarts!.length);
    expect(stats.decision_pruning_off_rate).toBe(1);
    const admitted = d.nodes.filter((n) => n.admittedWithPruningOff).length;
    expect(admitted).toBeGreaterThan(0);
    expect(stats.decision_admitted_unpruned_per_tree).toBe(admitted);
    expect(stats.decision_expansions_per_tree).toBe(d.expansions.length);
    expect(stats.decision_stop_max_nodes).toBe(1);
    expect(stats.decision_stop_queue_empty).toBe(0);
  });

  it('the tree figure draws nodes admitted with pruning off and edges made after a restart distinctly, and names both', async () => {
    const { out, d } = await scenario();
    const fig = clarificationTreeFigure(out.trace);
    const group = (name: string) => fig.data.find((t) => t.name === name) as { customdata?: number[]; line?: { dash?: string } } | undefined;
    const admitted = d.nodes.filter((n) => n.admittedWithPruningOff).map((n) => n.id);
    expect(group('admitted, pruning off')!.customdata).toEqual(admitted);
    expect(group('clarifies (after a restart)')!.line!.dash).toBe('dash');
    expect(group('clarifies')!.line!.dash).toBeUndefined();
    // Node 3 (kept at the first restart) hangs on a dashed edge; nodes 1 and 2 (first pass) do not.
    const after = nodesAfterRestart(d);
    expect(after.has(3)).toBe(true);
    expect(after.has(1) || after.has(2)).toBe(false);
    const caption = JSON.stringify(fig.layout.annotations);
    expect(caption).toContain(`${d.restarts!.length} restarts (step ${d.restarts!.map((r) => r.step).join(', ')})`);
    expect(caption).toContain(`pruning off after step ${d.pruningOffAtStep}`);
  });

  it('the pruning figure keeps nodes kept after a restart and nodes admitted with pruning off apart', async () => {
    const { out, d } = await scenario();
    const gold = new Map([['q1', [{ question: 'Which?', shortAnswers: ['Answer 3'] }]]]);
    const stats = pruningEffect([out.trace], gold);
    const stage = (s: string) => stats.find((x) => x.stage === s)!;
    expect(stage('self-verification').nodes).toBe(1);
    expect(stage('kept after a restart').nodes).toBe(1);
    expect(stage('kept after a restart').meanF1).toBe(100);
    expect(stage('pruning off').nodes).toBe(d.nodes.filter((n) => n.admittedWithPruningOff).length);
    const fig = pruningEffectFigure(stats);
    expect((fig.data[0] as { x: string[] }).x).toEqual(expect.arrayContaining(['kept after a restart', 'pruning off']));
  });
});

describe('ToC released search: the other options keep working', () => {
  it('judgeCalibration content-free: one prior per question, every judgment calibrated by it', async () => {
    const { llm, provider } = scriptedLlm({ 'toc.rac': fresh(2), 'toc.answer': 'Answer: x' }, { 'toc.verify': 0.4, 'toc.verify.prior': 0.3 });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const out = await new TocPipeline(options({ judgeCalibration: 'content-free', maxNodes: 4 })).answer(asqaExample('q1', AQ), ctx);
    const d = tocDecisionsSchema.parse(out.trace.decisions);
    expect(provider.judged.filter((r) => r.purpose === 'toc.verify.prior')).toHaveLength(1);
    // Raw 0.4 below the papers' 0.5; against the prior 0.3 it is (0.4/0.3)/(0.4/0.3 + 0.6/0.7) ≈ 0.61: kept.
    const verified = d.nodes.filter((n) => n.verdict !== null);
    expect(verified.length).toBeGreaterThan(0);
    for (const n of verified) expect(n).toMatchObject({ pTrueRaw: 0.4, pTruePrior: 0.3, verdict: true });
    expect(d.stopReason).toBe('max-nodes');
  });

  it('earlyExit stops at the root with one interpretation; a demo copy keeps nothing and removes no passage', async () => {
    const one = await run(options({ earlyExit: true }), { 'toc.rac': 'DQ 1: Who played Ron?\nDA 1: Rupert Grint' });
    expect(one.d).toMatchObject({ stopReason: 'unambiguous', validNodeIds: [1] });
    expect(one.calls('toc.rac')).toHaveLength(1);
    const copied =
      'DQ 1: Who wrote the song Hallelujah released in 1984?\nDA 1: Leonard Cohen\n' +
      'DQ 2: Who wrote the 1979 song Hallelujah performed at Eurovision?\nDA 2: Kobi Oshrat';
    const copy = await run(options({ minValidNodes: 0 }), { 'toc.rac': copied, 'toc.verify': 'True' });
    // Every expansion copies the demo: nothing kept, so the restarts run out (pruning switches off
    // at the third, the count starts again) — never a node, never a removed passage.
    expect(copy.d.expansions.every((e) => e.copiedDemoId === 'd1' && e.removedPassageIds === undefined)).toBe(true);
    expect(copy.d.nodes).toHaveLength(1);
    expect(copy.d.pruningOffAtStep).toBe(4);
    expect(copy.d.stopReason).toBe('max-restarts');
    expect(copy.calls('toc.verify')).toHaveLength(0);
  });

  it("verifyDemos balanced: the worked examples precede every verification, in the search's wording", async () => {
    const { calls } = await run(options({ verifyDemos: 'balanced', maxTrials: 1 }), { 'toc.rac': 'DQ 1: Who played Ron?\nDA 1: Rupert Grint', 'toc.verify': 'True' });
    const v = calls('toc.verify')[0]!;
    expect(v.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(v.messages[0]!.content).toContain('Vell');
    expect(v.messages.map((m) => m.content).join('\n')).not.toContain('possible readings');
  });
});
