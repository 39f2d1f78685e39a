import { describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import type { LanguageModelProvider, NormalisedJudgeRequest, NormalisedRequest } from '../../src/llm/types';
import { TocPipeline } from '../../src/pipelines/toc';
import { tocOptionsSchema } from '../../src/pipelines/toc/options';
import { MlflowClient, type TraceSpan } from '../../src/tracking/client';
import { traceIdFor } from '../../src/tracking/otel-export';
import { MlflowTracking } from '../../src/tracking/tracking';
import { asqaExample, FakeRetriever, fixedDemos, lastField, weasleyCorpus, WEASLEY_AQ } from '../pipelines/fakes';
import { trackingUri, uniqueName } from './helpers';

/**
 * Issue 45's bar: an MLflow trace of a ToC question shows its spans nested by node, at the times
 * they really ran. The question is answered by the real ToC pipeline over a scripted model that
 * takes `DELAY_MS` per call (so every call has a duration the timeline must show), exported
 * through the run's tracking, and read back from a real MLflow server.
 */
const uri = trackingUri();
const DELAY_MS = 20;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scripted model that takes its time: RAC invents two fresh pairs per node, the judge keeps them all. */
function slowScriptedModel(): LlmClient {
  let k = 0;
  const scripted = new ScriptedProvider(
    (request) => {
      if (request.purpose === 'toc.answer') return 'Answer: Several actors played the Weasley brothers.';
      if (request.purpose !== 'toc.rac') throw new Error(`no scripted reply for ${request.purpose}`);
      k += 1;
      const q = lastField(request, 'Question').replace(/\?$/, '');
      return `DQ 1: ${q} in film ${k}?\nDA 1: Actor ${k}\nDQ 2: ${q} on stage ${k}?\nDA 2: Player ${k}`;
    },
    'scripted-slow',
    () => 0.9,
  );
  const slow: LanguageModelProvider = {
    provider: scripted.provider,
    model: scripted.model,
    async doGenerate(request: NormalisedRequest, sampleIndex) {
      await sleep(DELAY_MS);
      return scripted.doGenerate(request, sampleIndex);
    },
    async doJudge(request: NormalisedJudgeRequest, options) {
      await sleep(DELAY_MS);
      return scripted.doJudge!(request, options);
    },
  };
  return new LlmClient(slow);
}

describe.skipIf(!uri)('a ToC trace in MLflow (real server)', () => {
  it('has spans nested node → expand / verify → calls, at their real, ordered start times', async () => {
    const options = tocOptionsSchema.parse({ nShots: 1, poolSize: 5, nPassages: 2, reranker: 'none', maxNodes: 4, maxLlmCalls: 30 });
    const before = Date.now();
    const out = await new TocPipeline(options).answer(asqaExample('q-spans', WEASLEY_AQ), {
      llm: slowScriptedModel(),
      retriever: new FakeRetriever(weasleyCorpus),
      demos: fixedDemos(),
    });
    const after = Date.now();

    const notes: string[] = [];
    const tracking = new MlflowTracking({ uri, notify: (m) => notes.push(m) });
    const run = await tracking.startRun({ experimentName: uniqueName('toc-spans'), runName: 'spans' });
    run.logQuestionTrace({ trace: out.trace, metrics: {} });
    await run.finish('FINISHED');
    expect(notes.filter((n) => /warning|fail/i.test(n))).toEqual([]);

    const { spans } = await new MlflowClient(uri).getTrace(`tr-${traceIdFor(run.runId, 'q-spans')}`);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: TraceSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    const root = spans.find((s) => !s.parentSpanId)!;
    expect(root.name).toBe('toc: q-spans');

    // Nesting: nodes under the question; under each node its expansion first, then its verification.
    const nodes = spans.filter((s) => /^node \d+$/.test(s.name)).sort((a, b) => a.startMs! - b.startMs!);
    expect(nodes.length).toBeGreaterThanOrEqual(2);
    for (const node of nodes) {
      expect(parentOf(node)).toBe(root);
      const children = spans.filter((s) => s.parentSpanId === node.spanId).sort((a, b) => a.startMs! - b.startMs!);
      expect(children.map((c) => c.name)).toEqual(['expand', 'verify']);
      expect(children[0].endMs!).toBeLessThanOrEqual(children[1].startMs!);
    }
    expect(nodes.map((n) => n.attributes['ambiqa.step.nodeId'])).toEqual(nodes.map((_, i) => i));
    const answer = spans.find((s) => s.name === 'answer')!;
    expect(parentOf(answer)).toBe(root);

    // Every model call sits in the step that made it; a verification's judge calls in its `verify`.
    const llm = spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL');
    expect(llm.length).toBe(out.trace.llmCalls.length);
    for (const call of llm) {
      const step = parentOf(call)!;
      expect(step.name, call.name).toBe(call.name === 'llm toc.rac' ? 'expand' : call.name === 'judge toc.verify' ? 'verify' : 'answer');
      if (step.name !== 'answer') expect(parentOf(step)!.name).toMatch(/^node \d+$/);
    }
    const retrievals = spans.filter((s) => s.attributes['mlflow.spanType'] === 'RETRIEVER');
    expect(retrievals.length).toBe(out.trace.retrievals.length);
    for (const r of retrievals) expect(['expand', 'answer']).toContain(parentOf(r)!.name);

    // Real times: inside the wall-clock window the question ran in, each span inside its parent,
    // each call as long as the model took, and the steps in the order the search ran them.
    for (const s of spans) {
      expect(s.startMs!).toBeGreaterThanOrEqual(before - 1);
      expect(s.endMs!).toBeLessThanOrEqual(after + 1);
      expect(s.endMs!).toBeGreaterThanOrEqual(s.startMs!);
      const parent = parentOf(s);
      if (parent && s.name !== 'decisions') {
        expect(s.startMs!).toBeGreaterThanOrEqual(parent.startMs! - 0.01);
        expect(s.endMs!).toBeLessThanOrEqual(parent.endMs! + 0.01);
      }
    }
    for (const call of llm) expect(call.endMs! - call.startMs!).toBeGreaterThanOrEqual(DELAY_MS - 1);
    for (let i = 1; i < nodes.length; i++) expect(nodes[i].startMs!).toBeGreaterThanOrEqual(nodes[i - 1].endMs!);
    expect(answer.startMs!).toBeGreaterThanOrEqual(nodes[nodes.length - 1].endMs!);
    const calls = [...llm].sort((a, b) => a.startMs! - b.startMs!);
    expect(calls.map((c) => c.attributes['ambiqa.call_index'])).toEqual(out.trace.llmCalls.map((c) => c.index));
    for (let i = 1; i < calls.length; i++) expect(calls[i].startMs!).toBeGreaterThanOrEqual(calls[i - 1].endMs! - 0.01);
    // The server holds the recorded times, not a layout: a call starts where the trace says.
    const first = out.trace.llmCalls[0];
    expect(calls[0].startMs!).toBeCloseTo(first.startedAt!, 0);
  }, 120_000);
});
