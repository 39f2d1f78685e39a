import { describe, expect, it } from 'vitest';
import { describeOutcome } from '../../src/experiments/cli-support';
import type { RunOutcome } from '../../src/experiments/runner';
import type { ExampleResult } from '../../src/experiments/results';

function result(id: string, error?: string): ExampleResult {
  const usage = { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 };
  return { id, question: `q ${id}`, output: '', metrics: {}, usage, ...(error ? { error } : {}) };
}

function outcome(results: ExampleResult[]): RunOutcome {
  return {
    status: 'FINISHED',
    runDir: '/tmp/runs/x',
    metrics: { n: results.length, metrics: {}, usage: { llm_calls: 0, prompt_tokens: 0, completion_tokens: 0, cache_hits: 0, wall_seconds: 1 }, errors: results.filter((r) => r.error).length },
    results,
    mlflow: null,
    answeredNow: results.length,
  };
}

describe('the end-of-run summary', () => {
  it('says why questions failed, grouping identical messages', () => {
    const text = describeOutcome(outcome([result('a', 'cannot reach http://x/v1'), result('b', 'cannot reach http://x/v1'), result('c', 'parse trouble'), result('d')]));
    expect(text).toContain('failed (2): cannot reach http://x/v1');
    expect(text).toContain('failed (1): parse trouble');
  });

  it('lists at most three distinct messages', () => {
    const text = describeOutcome(outcome(['1', '2', '3', '4', '5'].map((i) => result(i, `error ${i}`))));
    expect(text.match(/failed \(1\)/g)).toHaveLength(3);
    expect(text).toContain('2 other error messages');
  });

  it('prints no failure lines for a clean run', () => {
    expect(describeOutcome(outcome([result('a')]))).not.toContain('failed');
  });
});
