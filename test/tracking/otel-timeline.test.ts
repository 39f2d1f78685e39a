import { describe, expect, it } from 'vitest';
import { hasTimeline, planSpans, traceIdFor } from '../../src/tracking/otel-export';
import type { LlmCallRecord, Trace } from '../../src/trace/types';

const T0 = 1_800_000_000_000;

function call(index: number, purpose: string, startedAt: number | undefined, spanId: string | undefined, parentSpanId?: string): LlmCallRecord {
  return {
    index,
    purpose,
    messages: [{ role: 'user', content: purpose }],
    params: { temperature: 0, topP: 1, maxTokens: 8, stop: [], n: 1, seed: null },
    completions: [{ text: 'ok', finishReason: 'stop', latencySeconds: 0.05, cacheHit: false }],
    wallSeconds: 0.05,
    ...(startedAt !== undefined ? { startedAt } : {}),
    ...(spanId !== undefined ? { spanId } : {}),
    ...(parentSpanId !== undefined ? { parentSpanId } : {}),
  };
}

/** A ToC-shaped trace with its timeline: node 0 (expand, verify), then the answer. */
function timedTrace(): Trace {
  return {
    pipeline: 'toc',
    questionId: 'q1',
    question: 'Q?',
    llm: { provider: 'scripted', model: 'm' },
    demoIds: [],
    startedAt: T0,
    steps: [
      { name: 'node 0', spanId: 's1', startedAt: T0 + 10, endedAt: T0 + 200, attributes: { nodeId: 0, depth: 0 } },
      { name: 'expand', spanId: 's2', parentSpanId: 's1', startedAt: T0 + 10, endedAt: T0 + 90, attributes: { nodeId: 0 } },
      { name: 'verify', spanId: 's5', parentSpanId: 's1', startedAt: T0 + 100, endedAt: T0 + 200, attributes: { nodeId: 0 }, error: 'judge down' },
      { name: 'answer', spanId: 's8', startedAt: T0 + 210, endedAt: T0 + 290, attributes: {} },
    ],
    llmCalls: [
      call(0, 'toc.rac', T0 + 30, 's4', 's2'),
      call(1, 'toc.verify', T0 + 100, 's6', 's5'),
      call(2, 'toc.verify', T0 + 150, 's7', 's5'),
      call(3, 'toc.answer', T0 + 220, 's9', 's8'),
      // A parent the trace does not hold: placed under the question rather than dropped.
      call(4, 'stray', T0 + 295, 's10', 's99'),
    ],
    retrievals: [{ index: 0, purpose: 'toc.rac.retrieve.root', retriever: 'bm25', query: 'Q', k: 2, hits: [], startedAt: T0 + 12, wallSeconds: 0.01, spanId: 's3', parentSpanId: 's2' }],
    parseFailures: [],
    decisions: { kind: 'toc' },
    summary: { llmCalls: 5, cacheHits: 0, seconds: 0.3, retrievals: 1, parseFailures: 0 },
    output: 'out',
  };
}

const item = (trace: Trace, endedAtMs = T0 + 5_000) => ({ traceIdHex: traceIdFor('run', trace.questionId), trace, metrics: {}, endedAtMs });

describe('MLflow export: the recorded timeline', () => {
  it('exports each step, call and retrieval at its recorded time under the span it ran in', () => {
    const { spans } = planSpans(item(timedTrace()));
    const named = (name: string) => spans.find((s) => s.name === name)!;
    const parentName = (name: string) => {
      const p = named(name).parent;
      return p === null ? null : spans[p].name;
    };
    expect(spans[0]).toMatchObject({ name: 'toc: q1', parent: null, startMs: T0 });
    // The question ends with its last span (the stray call ends at T0 + 345), not at endedAtMs.
    expect(spans[0].endMs).toBeCloseTo(T0 + 345, 6);
    expect(parentName('node 0')).toBe('toc: q1');
    expect(parentName('expand')).toBe('node 0');
    expect(parentName('verify')).toBe('node 0');
    expect(parentName('answer')).toBe('toc: q1');
    expect(parentName('llm toc.rac')).toBe('expand');
    expect(parentName('retrieve toc.rac.retrieve.root')).toBe('expand');
    expect(parentName('llm toc.answer')).toBe('answer');
    expect(parentName('llm stray')).toBe('toc: q1');
    const verifies = spans.filter((s) => s.name === 'llm toc.verify');
    expect(verifies.map((s) => spans[s.parent!].name)).toEqual(['verify', 'verify']);
    expect(verifies.map((s) => [s.startMs, s.endMs])).toEqual([
      [T0 + 100, T0 + 150],
      [T0 + 150, T0 + 200],
    ]);
    expect(named('llm toc.rac')).toMatchObject({ startMs: T0 + 30, endMs: T0 + 80 });
    expect(named('retrieve toc.rac.retrieve.root')).toMatchObject({ startMs: T0 + 12, endMs: T0 + 22 });
    expect(named('node 0')).toMatchObject({ startMs: T0 + 10, endMs: T0 + 200 });
    expect(named('node 0').attributes['ambiqa.step.nodeId']).toBe(0);
    expect(JSON.parse(named('node 0').attributes['mlflow.spanInputs'] as string)).toEqual({ nodeId: 0, depth: 0 });
    expect(named('verify').error).toBe('judge down');
    // No purpose groups: the steps are the pipeline's own.
    expect(spans.some((s) => s.name === 'toc.rac')).toBe(false);
    // Parents come before their children in the plan (the builder ends children first).
    spans.forEach((s, i) => {
      if (s.parent !== null) expect(s.parent).toBeLessThan(i);
    });
  });

  it('falls back to the placed timeline when a record has no start time (traces before issue 45)', () => {
    const old = timedTrace();
    delete old.startedAt;
    delete old.steps;
    for (const c of old.llmCalls) {
      delete c.startedAt;
      delete c.spanId;
      delete c.parentSpanId;
    }
    expect(hasTimeline(old)).toBe(false);
    expect(hasTimeline(timedTrace())).toBe(true);
    const endedAtMs = T0 + 5_000;
    const { spans } = planSpans(item(old, endedAtMs));
    // Grouped by purpose, placed back to back ending at the question's end.
    expect(spans.filter((s) => s.parent === 0 && s.attributes['mlflow.spanType'] === 'CHAIN').map((s) => s.name)).toEqual([
      'toc.rac',
      'toc.verify',
      'toc.answer',
      'stray',
      'toc.rac.retrieve.root',
    ]);
    expect(spans[0]).toMatchObject({ startMs: endedAtMs - 300, endMs: endedAtMs });
    const rac = spans.find((s) => s.name === 'llm toc.rac')!;
    expect(rac.startMs).toBe(endedAtMs - 300);
  });
});
