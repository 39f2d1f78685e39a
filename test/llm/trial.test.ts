/**
 * The run model's `trial` layer (src/llm/trial.ts, issue 46): a sampled call made inside
 * `inTrial(t, …)` draws sample indexes t × stride + i, so its cache keys (and the seeds a provider
 * derives from them) differ from trial 0's; greedy calls and judgments keep theirs.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { runMiddleware, runModel } from '../../src/llm/run-model';
import { inTrial, TRIAL_SAMPLE_STRIDE, trialNow } from '../../src/llm/trial';
import { UsageMeter } from '../../src/llm/usage';

function scripted() {
  const provider = new ScriptedProvider((request, sampleIndex) => `${request.purpose} #${sampleIndex}`, 'm', () => 0.9);
  const client = new LlmClient(provider, { cache: { path: join(mkdtempSync(join(tmpdir(), 'ambiqa-trial-')), 'llm.sqlite') } });
  return { provider, client };
}

describe('the trial layer', () => {
  it('is a layer of runMiddleware only when the run has trials, between the meter and judge routing', () => {
    const { client } = scripted();
    const judge = scripted().client;
    const meter = new UsageMeter();
    expect(runMiddleware(client, { meter }).map((l) => l.name)).toEqual(['meter']);
    expect(runMiddleware(client, { meter, trials: true, judge }).map((l) => l.name)).toEqual(['meter', 'trial', 'judge']);
    client.close();
    judge.close();
  });

  it('moves sampled calls to their trial\'s sample indexes; greedy calls and judgments are shared', async () => {
    const { provider, client } = scripted();
    const model = runModel(client, { trials: true });
    const sampled = { prompt: 'q', purpose: 'sc', temperature: 0.7, n: 2 };
    const greedy = { prompt: 'q', purpose: 'greedy' };

    const t0 = await inTrial(0, () => model.generate(sampled));
    const t2 = await inTrial(2, () => model.generate(sampled));
    // Drawing in rounds (adaptive self-consistency) continues inside the trial's range.
    const t2more = await inTrial(2, () => model.generate({ ...sampled, n: 1, firstSample: 2 }));
    expect(t0.completions.map((c) => c.sampleIndex)).toEqual([0, 1]);
    expect(t2.completions.map((c) => c.sampleIndex)).toEqual([2 * TRIAL_SAMPLE_STRIDE, 2 * TRIAL_SAMPLE_STRIDE + 1]);
    expect(t2more.completions.map((c) => c.sampleIndex)).toEqual([2 * TRIAL_SAMPLE_STRIDE + 2]);
    expect(t2.completions.map((c) => c.text)).toEqual(['sc #2000', 'sc #2001']);
    // Trial 2's samples were live calls, not trial 0's cache hits; the trace's request says where they start.
    expect(t2.completions.every((c) => !c.cacheHit)).toBe(true);
    expect(t2.request.firstSample).toBe(2 * TRIAL_SAMPLE_STRIDE);

    const g0 = await inTrial(0, () => model.generate(greedy));
    const g1 = await inTrial(1, () => model.generate(greedy));
    expect([g0.completions[0]!.cacheHit, g1.completions[0]!.cacheHit]).toEqual([false, true]);
    expect(g1.completions[0]!.sampleIndex).toBe(0);
    await inTrial(1, () => model.judge({ prompt: 'ok?', labels: ['Yes', 'No'] }));
    await inTrial(2, () => model.judge({ prompt: 'ok?', labels: ['Yes', 'No'] }));
    expect(provider.judged).toHaveLength(1); // the second judgment replayed the first

    expect(provider.received.map((r) => `${r.request.purpose}:${r.sampleIndex}`)).toEqual(['sc:0', 'sc:1', 'sc:2000', 'sc:2001', 'sc:2002', 'greedy:0']);
    // Outside any trial (the judge calibration, a run without trials) nothing moves.
    expect(trialNow()).toBe(0);
    const outside = await model.generate(sampled);
    expect(outside.completions.map((c) => [c.sampleIndex, c.cacheHit])).toEqual([[0, true], [1, true]]);
    client.close();
  });

  it('keeps the trial across awaits and apart between concurrent questions', async () => {
    const { client } = scripted();
    const model = runModel(client, { trials: true });
    const ask = (t: number) =>
      inTrial(t, async () => {
        await new Promise((r) => setTimeout(r, 5 * (3 - t)));
        return (await model.generate({ prompt: 'p', temperature: 1 })).completions[0]!.sampleIndex;
      });
    expect(await Promise.all([ask(0), ask(1), ask(2)])).toEqual([0, TRIAL_SAMPLE_STRIDE, 2 * TRIAL_SAMPLE_STRIDE]);
    client.close();
  });

  it('refuses a call whose samples would pass into the next trial\'s indexes', async () => {
    const { provider, client } = scripted();
    const model = runModel(client, { trials: true });
    await expect(inTrial(1, () => model.generate({ prompt: 'p', purpose: 'big', temperature: 1, n: 2, firstSample: TRIAL_SAMPLE_STRIDE - 1 }))).rejects.toThrow(
      /LLM request big: samples 999…1000 pass the 1000 sample indexes a trial owns/,
    );
    expect(provider.received).toHaveLength(0);
    client.close();
  });
});
