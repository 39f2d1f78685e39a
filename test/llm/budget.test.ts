import { describe, expect, it } from 'vitest';
import { CostCap, CostLimitError, withSpendGuard } from '../../src/llm/budget';
import { LlmClient } from '../../src/llm/client';
import { withJudge } from '../../src/llm/judge-routing';
import { ScriptedProvider } from '../../src/llm/providers/scripted';

/** The run's cost cap, installed once on a model (`withSpendGuard`) rather than passed per call. */
describe('the cost cap on a model', () => {
  it('installed once on a model with a separate judge, counts what both clients spend', async () => {
    const llm = new LlmClient(new ScriptedProvider(() => 'answer'), { pricing: { prompt: 1, completion: 1 } });
    const judge = new LlmClient(new ScriptedProvider(() => 'Yes', 'judge-model'), { pricing: { prompt: 1, completion: 1 } });
    let stopped: CostLimitError | undefined;
    const cap = new CostCap(1, 0, 0, (e) => (stopped = e));
    const model = withSpendGuard(withJudge(llm, judge), cap);
    await model.generate({ prompt: 'a question' });
    await model.judge({ prompt: 'is it so?', labels: ['Yes', 'No'] });
    expect(cap.spentUsd).toBeCloseTo((llm.usage.costUsd ?? 0) + (judge.usage.costUsd ?? 0), 15);
    expect(llm.usage.costUsd).toBeGreaterThan(0);
    expect(judge.usage.costUsd).toBeGreaterThan(0);
    // The client itself is not capped: only the view the run installed the cap on is.
    const full = new CostCap(1e-9, 1);
    await expect(withSpendGuard(llm, full).generate({ prompt: 'another' })).rejects.toThrow(CostLimitError);
    await expect(llm.generate({ prompt: 'another' })).resolves.toBeDefined();
    expect(stopped).toBeUndefined();
    llm.close();
    judge.close();
  });
});
