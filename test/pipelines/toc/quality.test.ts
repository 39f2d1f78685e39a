/**
 * Issue 41 beyond the reader: an exhausted pool is a state (tiny corpus, an embedding reranker),
 * the RAC prompt as released by default, pool removal by whole DA strings, and tree quality —
 * distinct well-formed valid pairs, garbled and repeated valid nodes, live and replayed calls —
 * in the decision statistics, the closing lines and the tree figure.
 */
import { describe, expect, it } from 'vitest';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocDecisionsSchema, type TocDecisions } from '../../../src/pipelines/toc/decisions';
import { tocOptionsSchema, type TocOptions } from '../../../src/pipelines/toc/options';
import { RAC_FORMAT_REMINDER, RAC_REPLY_PREFIX, racReplyText } from '../../../src/pipelines/toc/prompts';
import { tocAnalysis, treeQuality } from '../../../src/pipelines/toc/analysis';
import { clarificationTreeFigure } from '../../../src/pipelines/toc/tree-figure';
import { treeQualityLines } from '../../../src/experiments/cli-support';
import type { PipelineContext } from '../../../src/pipelines/types';
import type { Trace } from '../../../src/trace/types';
import type { RunMetrics } from '../../../src/run-files';
import { createReranker } from '../../../src/retrieval/factory';
import { asqaExample, callText, FakeRetriever, fixedDemos, lastField, passage, scriptedLlm, weasleyCorpus, WEASLEY_AQ, type Responder } from '../fakes';

const options = (o: Partial<TocOptions> = {}): TocOptions => tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', ...o });

async function run(o: TocOptions, rac: Responder | string, extra: Partial<PipelineContext> = {}, corpus = weasleyCorpus) {
  const { llm } = scriptedLlm({ 'toc.rac': rac, 'toc.verify': 'True', 'toc.answer': 'Answer: Several actors played them.' });
  const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos(), ...extra };
  const out = await new TocPipeline(o).answer(asqaExample('q1', WEASLEY_AQ), ctx);
  return { out, d: tocDecisionsSchema.parse(out.trace.decisions) };
}

describe('ToC: an exhausted pool is a state, not an error', () => {
  it('on a two-passage corpus with a reranker, expansions after the pool empties go on without passages, and the trace says so', async () => {
    const tiny = [passage('t1', 'Rupert Grint', 'Rupert Grint played Ron Weasley.'), passage('t2', 'Chris Rankin', 'Chris Rankin played Percy Weasley.')];
    // Both answers are in both shown passages' text: after the root's expansion the pool is empty.
    const rac = (request: Parameters<Responder>[0]) =>
      lastField(request, 'Question') === WEASLEY_AQ ? 'DQ 1: Who played Ron Weasley in the films?\nDA 1: Rupert Grint\nDQ 2: Who played Percy Weasley in the films?\nDA 2: Chris Rankin' : 'I do not know.';
    // The context's reranker from the factory checks k as every configured reranker does.
    const { out, d } = await run(options({ reranker: 'context', maxTrials: 1 }), rac, { reranker: createReranker('none') }, tiny);
    expect([...(d.removedPassageIds ?? [])].sort()).toEqual(['t1', 't2']);
    const later = d.expansions.slice(1);
    expect(later.length).toBeGreaterThan(0);
    for (const e of later) expect(e.poolShort).toBe(0);
    expect(out.trace.warnings?.some((w) => /the pool held 0 of 2 passages/.test(w.message))).toBe(true);
    // The later prompts have an empty context; the answer is still written.
    const racCalls = out.trace.llmCalls.filter((c) => c.purpose === 'toc.rac');
    expect(callText(racCalls[1]!)).not.toContain('Rupert Grint played');
    expect(out.output).toContain('Several actors');
  });

  it('with an empty corpus the question is answered, not failed', async () => {
    const { out, d } = await run(options({ reranker: 'context', maxTrials: 1 }), 'DQ 1: Who played Ron Weasley in the films?\nDA 1: Rupert Grint', { reranker: createReranker('none') }, []);
    expect(d.expansions[0]!.poolShort).toBe(0);
    expect(d.answerPassageIds).toEqual([]);
    expect(out.output).toContain('Several actors');
  });
});

describe('ToC: prompt and pool as released', () => {
  it('the RAC prompt has no format reminder by default; racPrompt: format-reminder restores it', async () => {
    const rac = 'DQ 1: Who played Ron Weasley in the films?\nDA 1: Rupert Grint';
    const released = await run(options({ maxTrials: 1 }), rac);
    const racCall = released.out.trace.llmCalls.find((c) => c.purpose === 'toc.rac')!;
    expect(callText(racCall)).not.toContain(RAC_FORMAT_REMINDER);
    // The question closes the user turn; the reply is opened with the demos' first words.
    expect(racCall.messages.at(-2)!.content.trimEnd().endsWith(`Question: ${WEASLEY_AQ}`)).toBe(true);
    expect(racCall.messages.at(-1)).toEqual({ role: 'assistant', content: RAC_REPLY_PREFIX });
    // The answer prompt opens its reply with the pairs, not with the RAC prefix.
    const answerCall = released.out.trace.llmCalls.find((c) => c.purpose === 'toc.answer')!;
    expect(answerCall.messages.filter((m) => m.role === 'assistant' && m.content === RAC_REPLY_PREFIX)).toEqual([]);
    const old = await run(options({ maxTrials: 1, racPrompt: 'format-reminder' }), rac);
    const oldCall = old.out.trace.llmCalls.find((c) => c.purpose === 'toc.rac')!;
    expect(callText(oldCall)).toContain(RAC_FORMAT_REMINDER);
    expect(oldCall.messages.at(-1)!.role).toBe('user');
  });

  it('a continued reply is read with the prefix; a reply that repeats it (a new turn) is read as it is', async () => {
    expect(racReplyText(' Who played Ron?\nDA 1: Rupert Grint')).toBe('DQ 1: Who played Ron?\nDA 1: Rupert Grint');
    expect(racReplyText('DQ 1: Who played Ron?\nDA 1: Rupert Grint')).toBe('DQ 1: Who played Ron?\nDA 1: Rupert Grint');
    expect(racReplyText('Who played Ron?', 'format-reminder')).toBe('Who played Ron?');
    const { d } = await run(options({ maxTrials: 1, maxExpansions: 1 }), ' Who played Ron Weasley in the films?\nDA 1: Rupert Grint');
    expect(d.nodes.slice(1).map((n) => n.question)).toEqual(['Who played Ron Weasley in the films?']);
  });

  it("pool removal matches the DA string whole (remove_dup_psgs); answerSplit: semicolon splits on ';'", async () => {
    const rac = 'DQ 1: Who played the Weasley brothers Ron and Percy?\nDA 1: Rupert Grint; Chris Rankin';
    const whole = await run(options({ nPassages: 5, maxTrials: 1, maxExpansions: 1 }), rac);
    expect(whole.d.removedPassageIds ?? []).toEqual([]);
    const split = await run(options({ nPassages: 5, maxTrials: 1, maxExpansions: 1, answerSplit: 'semicolon' }), rac);
    expect([...(split.d.removedPassageIds ?? [])].sort()).toEqual(['p2', 'p4']);
  });
});

describe('ToC: tree quality', () => {
  it('garbled replies become parse failures, not nodes; the statistics count distinct well-formed pairs and refused ones', async () => {
    const rac = 'DQ 1: Who played Ron Weasley in the films?|DA 1: Rupert Grint\nDQ 2: Who played Percy Weasley in the films?\nDA 2: start with "DQ 1:", then "DA 1:", and so on.';
    const { out, d } = await run(options({ maxTrials: 1, maxExpansions: 1 }), rac);
    expect(d.nodes.slice(1).map((n) => [n.question, n.answer])).toEqual([['Who played Ron Weasley in the films?', 'Rupert Grint']]);
    expect(d.expansions[0]).toMatchObject({ rejectedPairs: 1, replyShape: 'mixed' });
    expect(out.trace.parseFailures.map((f) => f.reason).join()).toMatch(/garbled pair \(a DQ\/DA label inside the answer\)/);
    const stats = tocAnalysis.statistics!([out.trace]);
    expect(stats).toMatchObject({ decision_distinct_wellformed_pairs_per_tree: 1, decision_garbled_valid_total: 0, decision_rejected_pairs_per_tree: 1 });
  });

  /** A trace as written before issue 41: its valid nodes garbled and repeated, its calls partly replayed. */
  async function olderTrace(): Promise<Trace> {
    const rac = 'DQ 1: Who played Ron Weasley in the films?\nDA 1: Rupert Grint\nDQ 2: Who played Percy Weasley in the films?\nDA 2: Chris Rankin';
    const { out } = await run(options({ maxTrials: 1, maxExpansions: 1, pruning: false }), rac);
    const d = out.trace.decisions as TocDecisions;
    d.nodes.push(
      { ...d.nodes[1]!, id: 3, bfsOrder: 3, question: 'Who played Ron Weasley in the films?|DA 1: Rupert Grint' },
      { ...d.nodes[2]!, id: 4, bfsOrder: 4 },
    );
    // The same RAC request twice, the second one a cache replay; one live judge call.
    const rac0 = out.trace.llmCalls.find((c) => c.purpose === 'toc.rac')!;
    const replay = { ...rac0, index: 9, completions: rac0.completions.map((c) => ({ ...c, cacheHit: true })) };
    out.trace.llmCalls.push(replay);
    return out.trace;
  }

  it('counts garbled and repeated valid nodes, and live against in-question replayed calls, in a trace written before the reader', async () => {
    const trace = await olderTrace();
    const q = treeQuality(trace);
    expect(q).toMatchObject({ valid: 4, garbledValid: 1, duplicateValid: 1, distinctWellFormed: 2, replayedCalls: 1, liveCalls: trace.llmCalls.length - 1 });
    const stats = tocAnalysis.statistics!([trace]);
    expect(stats.decision_garbled_valid_total).toBe(1);
    expect(stats.decision_replayed_calls_per_tree).toBe(1);
    const lines = treeQualityLines({ decisions: stats } as unknown as RunMetrics);
    expect(lines.join('\n')).toMatch(/2\.0 distinct well-formed pairs; garbled valid 1 in all; duplicate valid 1\.0 a tree/);
    expect(lines.join('\n')).toMatch(/1\.0 replayed within the question/);
    expect(treeQualityLines({ decisions: { decision_prune_rate: 0.5 } } as unknown as RunMetrics)).toEqual([]);
  });

  it('the tree figure marks garbled and repeated valid nodes and gives the quality in its caption', async () => {
    const fig = clarificationTreeFigure(await olderTrace());
    const names = fig.data.map((t) => t.name);
    expect(names).toContain('garbled (valid)');
    expect(names).toContain('repeats a valid node');
    const garbled = fig.data.find((t) => t.name === 'garbled (valid)')!;
    expect(garbled.customdata).toEqual([3]);
    const caption = JSON.stringify(fig.layout.annotations);
    expect(caption).toMatch(/2 distinct well-formed pairs · 1 garbled valid · 1 repeated valid · calls \d+ live \/ 1 replayed/);
  });
});
