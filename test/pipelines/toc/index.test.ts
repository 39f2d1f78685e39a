import { describe, expect, it } from 'vitest';
import { tocDecisionsSchema } from '../../../src/pipelines/toc/decisions';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema, type TocOptions } from '../../../src/pipelines/toc/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { TocDecisions } from '../../../src/pipelines/toc/decisions';
import { AmbiqaError } from '../../../src/errors';
import {
  asqaExample,
  FakeEmbedder,
  FakeRetriever,
  fixedDemos,
  lastField,
  promptOf,
  judgeField,
  scriptedLlm,
  type JudgeResponder,
  type Responder,
  callText,
  weasleyCorpus,
  WEASLEY_AQ,
} from '../fakes';

const corpus = weasleyCorpus;
const AQ = WEASLEY_AQ;

function options(overrides: Partial<TocOptions> = {}): TocOptions {
  return tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', ...overrides });
}

/** A RAC responder that invents `perExpansion` fresh pairs for every question it is asked. */
function freshPairs(perExpansion: number, answerOf: (k: number) => string = (k) => `Answer ${k}`): Responder {
  let k = 0;
  return (request) => {
    const q = lastField(request, 'Question');
    const lines: string[] = [];
    for (let i = 1; i <= perExpansion; i++) {
      k += 1;
      lines.push(`DQ ${i}: ${q.replace(/\?$/, '')} variant ${k}?`, `DA ${i}: ${answerOf(k)}`);
    }
    lines.push('Answer: A long answer.');
    return lines.join('\n');
  };
}

type Judges = Record<string, JudgeResponder | number>;

function ctxWith(routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}, judges?: Judges) {
  const { llm, provider } = scriptedLlm({ 'toc.answer': 'Answer: The brothers were played by several actors.', ...routes }, judges);
  const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos(), ...extra };
  return { ctx, provider };
}

async function run(opts: TocOptions, routes: Record<string, Responder | string>, extra: Partial<PipelineContext> = {}, judges?: Judges) {
  const { ctx, provider } = ctxWith(routes, extra, judges);
  const out = await new TocPipeline(opts).answer(asqaExample('q1', AQ), ctx);
  return { out, d: tocDecisionsSchema.parse(out.trace.decisions), provider };
}

describe('ToC tree search', () => {
  it('expands in breadth-first order and never exceeds maxDepth', async () => {
    for (const maxDepth of [1, 2, 3]) {
      const { d } = await run(options({ search: 'stop-when-empty', pruning: false, maxNodes: 100, maxDepth, maxLlmCalls: 1000, maxExpansions: 100 }), {
        'toc.rac': freshPairs(2),
      });
      const expanded = d.expansions.map((e) => e.nodeId);
      // BFS: node ids are created level by level, so expansions visit them in increasing order.
      expect(expanded).toEqual([...expanded].sort((a, b) => a - b));
      const depthOf = new Map(d.nodes.map((n) => [n.id, n.depth]));
      const depths = expanded.map((id) => depthOf.get(id)!);
      expect(depths).toEqual([...depths].sort((a, b) => a - b));
      expect(Math.max(...d.nodes.map((n) => n.depth))).toBe(maxDepth);
      // A full binary tree of depth maxDepth: 2 + 4 + … nodes, and every node above maxDepth expanded.
      expect(d.nodes.length).toBe(2 ** (maxDepth + 1) - 1);
      expect(d.nodes.filter((n) => n.expanded).every((n) => n.depth < maxDepth)).toBe(true);
      expect(d.stopReason).toBe('max-depth');
    }
  });

  it('stops at maxNodes valid nodes', async () => {
    const { d, out } = await run(options({ pruning: false, maxNodes: 3 }), { 'toc.rac': freshPairs(2) });
    expect(d.stopReason).toBe('max-nodes');
    expect(d.validNodeIds).toEqual([1, 2, 3]);
    expect(d.nodes.find((n) => n.id === 4)?.skipped).toBe('max-nodes');
    expect(d.expansions.map((e) => e.nodeId)).toEqual([0, 1]);
    // The answer prompt is the RAC template (same instruction and demos, so the embedded model
    // reuses their evaluated prefix) with the reply opened by exactly the three valid pairs.
    const answerCall = out.trace.llmCalls.find((c) => c.purpose === 'toc.answer')!;
    const racCall = out.trace.llmCalls.find((c) => c.purpose === 'toc.rac')!;
    const opened = answerCall.messages.at(-1)!;
    expect(opened.role).toBe('assistant');
    expect(opened.content).toMatch(/^DQ 1: .*\nDA 1: .*\nDQ 2: .*\nDA 2: .*\nDQ 3: .*\nDA 3: .*\nAnswer:$/);
    expect(opened.content).not.toContain('DQ 4:');
    const shared = racCall.messages.length - 1; // all but the turn with the passages and the question
    expect(answerCall.messages.slice(0, shared)).toEqual(racCall.messages.slice(0, shared));
    expect(answerCall.messages.at(-2)!.content).toContain(`Question: ${AQ}`);
  });

  it('stops after maxTrials consecutive failed expansions and counts the parse failures', async () => {
    let calls = 0;
    const rac: Responder = (request) => {
      calls += 1;
      if (calls === 1) return freshPairs(5)(request, 0);
      return 'I am not sure what you mean.';
    };
    const { d, out } = await run(options({ search: 'stop-when-empty', pruning: false, maxTrials: 3 }), { 'toc.rac': rac });
    expect(d.stopReason).toBe('max-trials');
    expect(d.expansions.map((e) => e.failed)).toEqual([false, true, true, true]);
    expect(out.trace.parseFailures.filter((f) => f.purpose === 'toc.rac')).toHaveLength(3);
    expect(out.trace.summary.parseFailures).toBe(3);
    expect(d.failedTrials).toBe(3);
  });

  it('a successful expansion resets the failed-trial count', async () => {
    const script = ['pairs', 'fail', 'fail', 'pairs', 'fail', 'fail', 'fail'];
    let i = 0;
    const make = freshPairs(4);
    const rac: Responder = (request) => (script[i++] === 'pairs' ? make(request, 0) : 'no idea');
    const { d } = await run(options({ search: 'stop-when-empty', pruning: false, maxTrials: 3, maxNodes: 100 }), { 'toc.rac': rac });
    expect(d.expansions.map((e) => e.failed)).toEqual([false, true, true, false, true, true, true]);
    expect(d.stopReason).toBe('max-trials');
  });

  it('stops at maxExpansions', async () => {
    const { d } = await run(options({ pruning: false, maxNodes: 100, maxDepth: 10, maxExpansions: 4, maxLlmCalls: 1000 }), {
      'toc.rac': freshPairs(1),
    });
    expect(d.expansions).toHaveLength(4);
    expect(d.stopReason).toBe('max-expansions');
  });

  it('prunes nodes judged False and keeps those judged True', async () => {
    const verify: Responder = (request) => (lastField(request, 'Proposed answer').includes('wrong') ? 'False' : 'True.');
    const { d, out } = await run(options({ maxNodes: 4, minValidNodes: 0 }), {
      'toc.rac': freshPairs(2, (k) => (k % 2 === 0 ? `wrong ${k}` : `Right ${k}`)),
      'toc.verify': verify,
    });
    const kids = d.nodes.filter((n) => n.id !== 0 && n.skipped === undefined);
    for (const n of kids) {
      expect(n.verdict).toBe(!n.answer!.includes('wrong'));
      expect(n.pruned).toBe(n.answer!.includes('wrong'));
    }
    // Pruned nodes are never expanded and never reach the answer prompt.
    const pruned = new Set(d.nodes.filter((n) => n.pruned).map((n) => n.id));
    expect(pruned.size).toBeGreaterThan(0);
    expect(d.expansions.some((e) => pruned.has(e.nodeId))).toBe(false);
    expect(d.validNodeIds.some((id) => pruned.has(id))).toBe(false);
    const answerPrompt = callText(out.trace.llmCalls.at(-1)!);
    expect(answerPrompt).not.toContain('wrong');
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify')).toHaveLength(kids.length);
  });

  it('un-prunes nearest the root first when too few nodes remain', async () => {
    // Root → A (kept), B (pruned); A → C, D (pruned). With minValidNodes 3: restore B, then C.
    const rac: Responder = (request) => {
      const q = lastField(request, 'Question');
      if (q === AQ) return 'DQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: Who played Percy?\nDA 2: Chris Rankin';
      if (q === 'Who played Ron?') return 'DQ 1: Who played Ron as a child?\nDA 1: Rupert Grint Jr\nDQ 2: Who played Ron on stage?\nDA 2: Paul Thornley';
      return 'nothing';
    };
    const verify: Responder = (request) => (lastField(request, 'Proposed answer') === 'Rupert Grint' ? 'True' : 'False');
    const { d } = await run(options({ search: 'stop-when-empty', maxNodes: 10, minValidNodes: 3, maxTrials: 1 }), { 'toc.rac': rac, 'toc.verify': verify });
    const byQ = new Map(d.nodes.map((n) => [n.question, n]));
    expect(d.unprunedNodeIds).toEqual([byQ.get('Who played Percy?')!.id, byQ.get('Who played Ron as a child?')!.id]);
    expect(byQ.get('Who played Ron on stage?')!.pruned).toBe(true);
    expect(byQ.get('Who played Percy?')!.unpruned).toBe(true);
    expect(byQ.get('Who played Percy?')!.verdict).toBe(false);
    expect(d.validNodeIds).toEqual([1, 2, 3]);
  });

  it('drops duplicate pairs without verifying them again', async () => {
    const rac = 'DQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: who played ron\nDA 2: Rupert Grint (actor)';
    const { d, out } = await run(options({ maxTrials: 2 }), { 'toc.rac': rac, 'toc.verify': 'True' });
    expect(d.nodes[2].duplicateOf).toBe(1);
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify')).toHaveLength(1);
    // The second expansion (of node 1) yields only duplicates: a failed expansion.
    expect(d.expansions[1]).toMatchObject({ nodeId: 1, failed: true });
  });

  it('evidence: contains-answer picks the best passage containing the answer, else the best overall', async () => {
    const rac = 'DQ 1: Who played Percy Weasley?\nDA 1: Chris Rankin\nDQ 2: Who played the oldest brother?\nDA 2: Nobody Known';
    const { d, out } = await run(options({ nPassages: 5, maxTrials: 1, evidence: 'contains-answer' }), { 'toc.rac': rac, 'toc.verify': 'True' });
    expect(d.nodes[1].evidencePassageId).toBe('p4');
    expect(d.nodes[1].evidenceHasAnswer).toBe(true);
    // No shown passage contains "Nobody Known": the best passage overall (top-ranked, no reranker).
    expect(d.nodes[2].evidenceHasAnswer).toBe(false);
    expect(d.nodes[2].evidencePassageId).toBe(out.trace.retrievals[0].hits[0].id);
  });

  it('with an embedder, evidence is reranked against the DQ among answer-containing passages', async () => {
    const rac = 'DQ 1: Which Phelps twin played Fred Weasley?\nDA 1: Weasley';
    const { d } = await run(options({ nPassages: 5, maxTrials: 1, reranker: 'embedder' }), { 'toc.rac': rac, 'toc.verify': 'True' }, {
      embedder: new FakeEmbedder(),
    });
    // Every passage contains "Weasley"; the one about Fred is the closest to the DQ.
    expect(d.nodes[1].evidencePassageId).toBe('p3');
  });

  it('answer passages cover the valid nodes first', async () => {
    const rac = 'DQ 1: Who played Bill?\nDA 1: Domhnall Gleeson\nDQ 2: Who played Percy?\nDA 2: Chris Rankin';
    const { d } = await run(options({ nPassages: 2, poolSize: 5, maxTrials: 1, retrievePerNode: true }), {
      'toc.rac': rac,
      'toc.verify': 'True',
    }, {
      // A retriever whose top-2 for the root are p1/p2 and, for the children, the covering passages.
      retriever: new FakeRetriever(corpus),
    });
    expect(d.answerPassageIds.slice().sort()).toEqual(['p4', 'p5']);
  });

  it('stop-when-empty: with the default limits the tree, not the call budget, ends the search', async () => {
    // Every 2nd DQ judged True: 10 valid nodes need ~20 judgments and ~5 expansions (26 calls),
    // more than the old budget of 19 and well inside the default.
    const scenarios: Array<[Record<string, Responder | string>, string]> = [
      [{ 'toc.rac': freshPairs(3), 'toc.verify': 'True' }, 'max-nodes'],
      [{ 'toc.rac': freshPairs(5), 'toc.verify': (r) => (/[02468]$/.test(lastField(r, 'Proposed answer')) ? 'True' : 'False') }, 'max-nodes'],
      [{ 'toc.rac': freshPairs(4), 'toc.verify': (r) => (/[02468]$/.test(lastField(r, 'Proposed answer')) ? 'True' : 'False') }, 'max-nodes'],
      [{ 'toc.rac': freshPairs(5), 'toc.verify': 'False' }, 'queue-empty'],
      [{ 'toc.rac': freshPairs(1), 'toc.verify': 'True' }, 'max-depth'],
    ];
    for (const [routes, stop] of scenarios) {
      const { out, d } = await run(tocOptionsSchema.parse({ nShots: 1, search: 'stop-when-empty' }), routes);
      expect(d.stopReason).toBe(stop);
      // Within the old default budget of 50, which was sized for this search.
      expect(out.trace.summary.llmCalls).toBeLessThanOrEqual(50);
      expect(out.trace.llmCalls.at(-1)!.purpose).toBe('toc.answer');
    }
  });

  it('a small call budget stops the search and leaves room for the answer', async () => {
    const { out, d } = await run(options({ maxLlmCalls: 6, maxNodes: 100 }), { 'toc.rac': freshPairs(3), 'toc.verify': 'True' });
    expect(d.stopReason).toBe('max-calls');
    expect(out.trace.summary.llmCalls).toBeLessThanOrEqual(6);
    expect(out.trace.llmCalls.at(-1)!.purpose).toBe('toc.answer');
  });

  it('uses the paper temperatures: 0.7 for expansions, 0 for the answer and verification', async () => {
    const { out } = await run(options({ maxTrials: 1 }), { 'toc.rac': freshPairs(1), 'toc.verify': 'True' });
    const t = (purpose: string) => out.trace.llmCalls.filter((c) => c.purpose === purpose).map((c) => c.params.temperature);
    expect(new Set(t('toc.rac'))).toEqual(new Set([0.7]));
    expect(t('toc.verify').length).toBeGreaterThan(0);
    expect(new Set(t('toc.verify'))).toEqual(new Set([0]));
    expect(t('toc.answer')).toEqual([0]);
    expect(out.trace.llmCalls.at(-1)!.params.maxTokens).toBe(300);
  });

  it('an unreadable verdict is a counted parse failure that prunes the node', async () => {
    const { d, out } = await run(options({ search: 'stop-when-empty', maxTrials: 1, minValidNodes: 0 }), {
      'toc.rac': freshPairs(1),
      'toc.verify': 'Hmm, hard to say.',
    });
    expect(d.nodes[1]).toMatchObject({ verdict: false, pruned: true });
    expect(out.trace.parseFailures).toEqual([
      expect.objectContaining({ purpose: 'toc.verify', fallback: 'False (pruned)' }),
    ]);
  });

  it('an empty retrieval is a recorded warning, and the question is still answered', async () => {
    const { out } = await run(options({ maxTrials: 1 }), { 'toc.rac': freshPairs(1), 'toc.verify': 'True' }, {
      retriever: new FakeRetriever([]),
    });
    expect(out.trace.warnings?.some((w) => /no passages/.test(w.message))).toBe(true);
    expect(out.output).toContain('several actors');
    expect(promptOf({ messages: out.trace.llmCalls[0].messages } as never)).toContain('(no passages found)');
  });

  it('without a demo pool and nShots > 0 it fails before any LLM call', async () => {
    const { ctx, provider } = ctxWith({ 'toc.rac': freshPairs(1) }, { demos: undefined });
    await expect(new TocPipeline(options()).answer(asqaExample('q', AQ), ctx)).rejects.toThrow(AmbiqaError);
    expect(provider.received).toHaveLength(0);
  });

  it('without a retriever it fails with a clear error', async () => {
    const { ctx } = ctxWith({}, { retriever: undefined });
    await expect(new TocPipeline(options()).answer(asqaExample('q', AQ), ctx)).rejects.toThrow(/needs a retriever/);
  });

  it('drops demos whose answers overlap the answers already in the tree', async () => {
    // The tree finds "Leonard Cohen", the answer of demo d1; d1 must leave the later prompts.
    const rac = 'DQ 1: Who played the Weasley brother Ron in 1984?\nDA 1: Leonard Cohen';
    const { out } = await run(options({ nShots: 3, maxTrials: 1 }), { 'toc.rac': rac, 'toc.verify': 'True' });
    const first = callText(out.trace.llmCalls[0]);
    const last = callText(out.trace.llmCalls.at(-1)!);
    expect(first).toContain('Who wrote the song Hallelujah?');
    expect(last).not.toContain('Who wrote the song Hallelujah?');
  });
});

describe('ToC graded self-verification', () => {
  // Five fresh pairs per expansion, answers "Answer 1" … ; P(true) by answer number: 0.9, 0.6, 0.4, 0.2, 0.05, …
  const P = [0.9, 0.6, 0.4, 0.2, 0.05];
  const pOf = (answer: string) => P[(Number(/\d+/.exec(answer)![0]) - 1) % P.length];
  const judges: Judges = { 'toc.verify': (r) => pOf(judgeField(r, 'Proposed answer')) };
  const graded = (o: Partial<TocOptions>) =>
    run(options({ search: 'stop-when-empty', maxTrials: 1, maxDepth: 1, minValidNodes: 0, ...o }), { 'toc.rac': freshPairs(5) }, {}, judges);

  it('records P(true) per node, reads it from probabilities, and keeps nodes with P(true) ≥ pruneThreshold', async () => {
    const kept = async (pruneThreshold: number) => {
      const { d, out } = await graded({ pruneThreshold });
      const kids = d.nodes.filter((n) => n.id !== 0);
      for (const n of kids) {
        expect(n.pTrue).toBe(pOf(n.answer!));
        expect(n.verdict).toBe(n.pTrue! >= pruneThreshold);
        expect(n.pruned).toBe(!n.verdict);
      }
      const verifyCalls = out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify');
      expect(verifyCalls.map((c) => c.judge?.mode)).toEqual(kids.map(() => 'probability'));
      expect(verifyCalls.map((c) => c.judge?.labels)).toEqual(kids.map(() => ['True', 'False']));
      return d.validNodeIds.length;
    };
    // The knob changes the decisions: 0.5 keeps 0.9 and 0.6; 0.3 also 0.4; 0.95 keeps none.
    expect(await kept(0.5)).toBe(2);
    expect(await kept(0.3)).toBe(3);
    expect(await kept(0.95)).toBe(0);
  });

  it('un-pruning never restores a node whose P(true) is below unpruneFloor, and counts it', async () => {
    // Threshold 0.95 prunes all five; minValidNodes 4 asks for four back.
    const restore = async (unpruneFloor: number) => {
      const { d } = await graded({ pruneThreshold: 0.95, minValidNodes: 4, unpruneFloor });
      const pOfId = (id: number) => d.nodes[id].pTrue!;
      return { restored: d.unprunedNodeIds!.map(pOfId), blocked: d.unpruneBlockedNodeIds!.map(pOfId), d };
    };
    const low = await restore(0);
    expect(low.restored).toEqual([0.9, 0.6, 0.4, 0.2]);
    expect(low.blocked).toEqual([]);
    const high = await restore(0.3);
    expect(high.restored).toEqual([0.9, 0.6, 0.4]);
    expect(high.blocked).toEqual([0.2, 0.05]);
    expect(high.d.nodes.filter((n) => n.unpruneBlocked).map((n) => n.pTrue)).toEqual([0.2, 0.05]);
  });

  it('text-mode verdicts (no probabilities) are 0/1 and exempt from the floor', async () => {
    const { d, out } = await run(
      options({ search: 'stop-when-empty', maxTrials: 1, maxDepth: 1, minValidNodes: 1, unpruneFloor: 0.5 }),
      { 'toc.rac': freshPairs(2), 'toc.verify': 'False' },
    );
    expect(out.trace.llmCalls.filter((c) => c.purpose === 'toc.verify').map((c) => c.judge?.mode)).toEqual(['text', 'text']);
    expect(d.nodes.slice(1).map((n) => n.pTrue)).toEqual([0, 0]);
    expect(d.unprunedNodeIds).toEqual([1]);
  });

  it('rejects thresholds outside [0, 1] naming the option', async () => {
    const { parsePipelineOptions } = await import('../../../src/pipelines/registry');
    expect(() => parsePipelineOptions('toc', { pruneThreshold: 1.5 })).toThrow(/pipeline toc: options?[ .]pruneThreshold: must be ≤ 1 \(got 1\.5\)/);
    expect(() => parsePipelineOptions('toc', { unpruneFloor: -0.1 })).toThrow(/options?[ .]unpruneFloor: must be ≥ 0 \(got -0\.1\)/);
    expect(() => parsePipelineOptions('toc', { pruneThreshold: 'high' })).toThrow(/options?[ .]pruneThreshold: expected number/);
  });

  it('evidence: best-shown (default, as the released get_evidence effectively chooses) is the best shown passage, answer or not', async () => {
    expect(options().evidence).toBe('best-shown');
    const rac = 'DQ 1: Who played Percy Weasley?\nDA 1: Chris Rankin';
    const { d, out } = await run(options({ nPassages: 1, poolSize: 5, maxTrials: 1 }), { 'toc.rac': rac }, {}, { 'toc.verify': 0.8 });
    const shown = out.trace.retrievals[0].hits[0].id;
    expect(shown).not.toBe('p4');
    // The answer-bearing p4 is in the pool but was never shown: the evidence is the shown passage.
    expect(d.nodes[1].evidencePassageId).toBe(shown);
    expect(d.nodes[1].evidenceHasAnswer).toBe(false);
  });

  it('evidence: contains-answer draws evidence from every retrieved passage, not only those shown in the prompt', async () => {
    // nPassages 1: only the top passage is shown; the one naming Chris Rankin is elsewhere in the pool.
    const rac = 'DQ 1: Who played Percy Weasley?\nDA 1: Chris Rankin';
    const { d, out } = await run(options({ nPassages: 1, poolSize: 5, maxTrials: 1, evidence: 'contains-answer' }), { 'toc.rac': rac }, {}, { 'toc.verify': 0.8 });
    const shown = out.trace.retrievals[0].hits[0].id;
    expect(shown).not.toBe('p4');
    expect(d.nodes[1].evidencePassageId).toBe('p4');
    expect(d.nodes[1].evidenceHasAnswer).toBe(true);
    const verify = out.trace.llmCalls.find((c) => c.purpose === 'toc.verify')!;
    expect(callText(verify)).toContain('Chris Rankin played Percy Weasley');
  });
});

describe('ToC demo-copy detection', () => {
  const copied =
    'DQ 1: Who wrote the song Hallelujah released in 1984?\nDA 1: Leonard Cohen\n' +
    'DQ 2: Who wrote the 1979 song Hallelujah performed at Eurovision?\nDA 2: Kobi Oshrat';
  const own = 'DQ 1: Who played Ron Weasley in the Harry Potter films?\nDA 1: Rupert Grint';

  it("an expansion that repeats a demo's DQs yields no node, with a warning", async () => {
    const { d, out } = await run(options({ maxTrials: 1 }), { 'toc.rac': copied }, {}, { 'toc.verify': 0.9 });
    expect(d.nodes).toHaveLength(1);
    expect(d.expansions[0]).toMatchObject({ failed: true, copiedDemoId: 'd1', newChildren: 0 });
    expect(out.trace.llmCalls.some((c) => c.purpose === 'toc.verify')).toBe(false);
    expect(out.trace.warnings!.some((w) => /repeats demo d1/.test(w.message))).toBe(true);
  });

  it('an expansion about the question is kept, and the check can be turned off', async () => {
    const mine = await run(options({ maxTrials: 1 }), { 'toc.rac': own }, {}, { 'toc.verify': 0.9 });
    expect(mine.d.nodes[1]).toMatchObject({ answer: 'Rupert Grint', pruned: false });
    expect(mine.d.expansions.every((e) => e.copiedDemoId === undefined)).toBe(true);
    const off = await run(options({ maxTrials: 1, dropDemoCopies: false }), { 'toc.rac': copied }, {}, { 'toc.verify': 0.9 });
    expect(off.d.nodes.length).toBeGreaterThan(1);
  });
});

