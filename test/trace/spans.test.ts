import { describe, expect, it } from 'vitest';
import { TraceRecorder } from '../../src/trace/recorder';
import { TocPipeline } from '../../src/pipelines/toc';
import { tocOptionsSchema } from '../../src/pipelines/toc/options';
import { readTraces } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import { asqaExample, FakeRetriever, fixedDemos, lastField, scriptedLlm, weasleyCorpus, WEASLEY_AQ } from '../pipelines/fakes';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function recorder() {
  const { llm } = scriptedLlm({ a: 'reply a', b: 'reply b', c: 'reply c' });
  return new TraceRecorder('test', { id: 'q1', question: 'Q?' }, llm);
}

const ask = (rec: TraceRecorder, purpose: string) => rec.llm.generate({ purpose, messages: [{ role: 'user', content: purpose }] });

describe('TraceRecorder spans', () => {
  it('stamps calls, retrievals and steps with start times and the step they ran in', async () => {
    const rec = recorder();
    const before = Date.now();
    await ask(rec, 'a');
    await rec.span('outer', { nodeId: 3 }, async () => {
      await sleep(5);
      await ask(rec, 'b');
      await rec.span('inner', {}, async () => {
        const started = rec.now();
        await sleep(5);
        rec.recordRetrieval('c.retrieve', 'fake', 'query', 2, [], undefined, started);
      });
    });
    const trace = rec.finish({ kind: 'baseline' }, 'out');
    const [outer, inner] = trace.steps!;
    expect(trace.steps!.map((s) => s.name)).toEqual(['outer', 'inner']);
    expect(outer.parentSpanId).toBeUndefined();
    expect(outer.attributes).toEqual({ nodeId: 3 });
    expect(inner.parentSpanId).toBe(outer.spanId);
    const [a, b] = trace.llmCalls;
    expect(a.parentSpanId).toBeUndefined();
    expect(b.parentSpanId).toBe(outer.spanId);
    const r = trace.retrievals[0];
    expect(r.parentSpanId).toBe(inner.spanId);
    // Every span id is distinct.
    const ids = [a, b, r, outer, inner].map((x) => x.spanId);
    expect(new Set(ids).size).toBe(ids.length);
    // Real epoch times, in the order things happened.
    expect(trace.startedAt!).toBeGreaterThanOrEqual(before - 1);
    expect(a.startedAt!).toBeGreaterThanOrEqual(trace.startedAt!);
    expect(outer.startedAt).toBeGreaterThanOrEqual(a.startedAt!);
    expect(b.startedAt! - outer.startedAt).toBeGreaterThanOrEqual(4);
    expect(inner.startedAt).toBeGreaterThanOrEqual(b.startedAt!);
    expect(r.startedAt!).toBeGreaterThanOrEqual(inner.startedAt);
    expect(r.wallSeconds!).toBeGreaterThanOrEqual(0.004);
    expect(inner.endedAt).toBeGreaterThanOrEqual(r.startedAt! + 4);
    expect(outer.endedAt).toBeGreaterThanOrEqual(inner.endedAt);
    expect(outer.endedAt).toBeLessThanOrEqual(Date.now() + 1);
  });

  it('keeps concurrent branches apart: each call names the span it was started in', async () => {
    const rec = recorder();
    // Two spans open at once; their calls interleave (b's branch sleeps less), yet each call
    // belongs to its own branch — a push/pop stack would parent the later call to the wrong one.
    await Promise.all([
      rec.span('left', {}, async () => {
        await sleep(15);
        await ask(rec, 'a');
      }),
      rec.span('right', {}, async () => {
        await sleep(1);
        await ask(rec, 'b');
        await rec.span('right.child', {}, () => ask(rec, 'c'));
      }),
    ]);
    const trace = rec.finish({ kind: 'baseline' }, 'out');
    const step = (name: string) => trace.steps!.find((s) => s.name === name)!;
    const call = (purpose: string) => trace.llmCalls.find((c) => c.purpose === purpose)!;
    expect(call('a').parentSpanId).toBe(step('left').spanId);
    expect(call('b').parentSpanId).toBe(step('right').spanId);
    expect(call('c').parentSpanId).toBe(step('right.child').spanId);
    expect(step('right.child').parentSpanId).toBe(step('right').spanId);
    expect(step('left').parentSpanId).toBeUndefined();
    expect(call('a').index).toBeGreaterThan(call('b').index);
  });

  it('records a step that throws with its error and end, and rethrows', async () => {
    const rec = recorder();
    await expect(rec.span('failing', {}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await ask(rec, 'a');
    const trace = rec.finish({ kind: 'baseline' }, 'out');
    expect(trace.steps![0]).toMatchObject({ name: 'failing', error: 'boom' });
    expect(trace.steps![0].endedAt).toBeGreaterThanOrEqual(trace.steps![0].startedAt);
    // After the span, calls are at the top level again.
    expect(trace.llmCalls[0].parentSpanId).toBeUndefined();
  });

  it('does not mix two recorders: an inner question recorder sees none of the outer spans', async () => {
    const outer = recorder();
    const inner = recorder();
    await outer.span('outer step', {}, async () => {
      await ask(inner, 'a');
      await inner.span('inner step', {}, () => ask(outer, 'b'));
    });
    const o = outer.finish({ kind: 'baseline' }, '');
    const i = inner.finish({ kind: 'baseline' }, '');
    expect(i.llmCalls[0].parentSpanId).toBeUndefined();
    expect(i.steps![0].parentSpanId).toBeUndefined();
    expect(o.llmCalls[0].parentSpanId).toBe(o.steps![0].spanId);
  });
});

describe('ToC spans', () => {
  it('opens node → expand → verify → answer, with every call and retrieval inside its step', async () => {
    let k = 0;
    const { llm } = scriptedLlm(
      {
        'toc.rac': (request) => {
          k += 1;
          const q = lastField(request, 'Question').replace(/\?$/, '');
          return `DQ 1: ${q} in film ${k}?\nDA 1: Actor ${k}\nDQ 2: ${q} on stage ${k}?\nDA 2: Player ${k}`;
        },
        'toc.answer': 'Answer: Several actors played them.',
      },
      { 'toc.verify': 0.9 },
    );
    const options = tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', maxNodes: 4, maxLlmCalls: 30 });
    const out = await new TocPipeline(options).answer(asqaExample('q1', WEASLEY_AQ), { llm, retriever: new FakeRetriever(weasleyCorpus), demos: fixedDemos() });
    const trace = out.trace;
    const steps = trace.steps!;
    const byId = new Map(steps.map((s) => [s.spanId, s]));
    const nodes = steps.filter((s) => s.name.startsWith('node '));
    expect(nodes.length).toBeGreaterThan(0);
    for (const node of nodes) {
      expect(node.parentSpanId).toBeUndefined();
      const children = steps.filter((s) => s.parentSpanId === node.spanId).map((s) => s.name);
      expect(children[0]).toBe('expand');
      expect(children.slice(1)).toEqual(children.length > 1 ? ['verify'] : []);
    }
    expect(steps.filter((s) => s.name === 'answer')).toHaveLength(1);
    expect(steps.find((s) => s.name === 'answer')!.parentSpanId).toBeUndefined();
    const stepOf = (parent: string | undefined) => (parent ? byId.get(parent)!.name : undefined);
    for (const call of trace.llmCalls) {
      const expected = call.purpose === 'toc.rac' ? 'expand' : call.purpose === 'toc.verify' ? 'verify' : 'answer';
      expect(stepOf(call.parentSpanId), call.purpose).toBe(expected);
    }
    for (const r of trace.retrievals) expect(stepOf(r.parentSpanId), r.purpose).toMatch(/^(expand|verify|answer)$/);
    // Steps and calls begin in the order the search ran them.
    const starts = [...steps.map((s) => s.startedAt)];
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    const callStarts = trace.llmCalls.map((c) => c.startedAt!);
    expect(callStarts).toEqual([...callStarts].sort((a, b) => a - b));
  });
});

describe('traces without a timeline', () => {
  it('a traces.jsonl line written before issue 45 still reads', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-spans-'));
    const old: Trace = {
      pipeline: 'toc',
      questionId: 'q1',
      question: 'Q?',
      llm: { provider: 'scripted', model: 'm' },
      demoIds: [],
      llmCalls: [
        {
          index: 0,
          purpose: 'toc.rac',
          messages: [{ role: 'user', content: 'x' }],
          params: { temperature: 0, topP: 1, maxTokens: 5, stop: [], n: 1, seed: null },
          completions: [{ text: 'y', finishReason: 'stop', latencySeconds: 0.1, cacheHit: false }],
          wallSeconds: 0.1,
        },
      ],
      retrievals: [{ index: 0, purpose: 'toc.rac.retrieve.root', retriever: 'bm25', query: 'q', k: 1, hits: [] }],
      parseFailures: [],
      decisions: { kind: 'baseline' },
      summary: { llmCalls: 1, cacheHits: 0, seconds: 0.2, retrievals: 1, parseFailures: 0 },
      output: 'out',
    };
    writeFileSync(join(dir, 'traces.jsonl'), `${JSON.stringify(old)}\n`);
    const [read] = readTraces(join(dir, 'traces.jsonl'));
    expect(read.llmCalls[0].startedAt).toBeUndefined();
    expect(read.steps).toBeUndefined();
    expect(read.output).toBe('out');
  });
});
