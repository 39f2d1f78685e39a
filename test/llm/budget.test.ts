import { describe, expect, it } from 'vitest';
import { CostCap, CostLimitError, spendCap } from '../../src/llm/budget';
import { LlmClient } from '../../src/llm/client';
import { wrapModel } from '../../src/llm/middleware';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { runModel } from '../../src/llm/run-model';

/** The run's cost cap, a layer of the run's model (`spendCap`, `runModel`) rather than passed per call. */
describe('the cost cap on a model', () => {
  it('installed once on a model with a separate judge, counts what both clients spend', async () => {
    const llm = new LlmClient(new ScriptedProvider(() => 'answer'), { pricing: { prompt: 1, completion: 1 } });
    const judge = new LlmClient(new ScriptedProvider(() => 'Yes', 'judge-model'), { pricing: { prompt: 1, completion: 1 } });
    let stopped: CostLimitError | undefined;
    const cap = new CostCap(1, 0, 0, (e) => (stopped = e));
    const model = runModel(llm, { cap, judge });
    await model.generate({ prompt: 'a question' });
    await model.judge({ prompt: 'is it so?', labels: ['Yes', 'No'] });
    expect(cap.spentUsd).toBeCloseTo((llm.usage.costUsd ?? 0) + (judge.usage.costUsd ?? 0), 15);
    expect(llm.usage.costUsd).toBeGreaterThan(0);
    expect(judge.usage.costUsd).toBeGreaterThan(0);
    // The client itself is not capped: only the view the run installed the cap on is.
    const full = new CostCap(1e-9, 1);
    await expect(wrapModel(llm, [spendCap(full)]).generate({ prompt: 'another' })).rejects.toThrow(CostLimitError);
    await expect(llm.generate({ prompt: 'another' })).resolves.toBeDefined();
    expect(stopped).toBeUndefined();
    llm.close();
    judge.close();
  });
});
