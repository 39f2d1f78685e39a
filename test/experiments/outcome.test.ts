import { describe, expect, it } from 'vitest';
import { describeOutcome } from '../../src/experiments/cli-support';
import { metricsForMlflow, summariseRun, type RunOutcome } from '../../src/experiments/runner';
import { scoreValues, type ExampleResult } from '../../src/run-files';

function result(id: string, error?: string): ExampleResult {
  const usage = { llmCalls: 0, promptTokens: 0, completionTokens: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 };
  return { id, question: `q ${id}`, output: '', format: 3, scores: {}, usage, ...(error ? { error } : {}) };
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

  it('groups messages that differ only in numbers as one cause, most frequent first', () => {
    const text = describeOutcome(outcome([...['1', '2', '3'].map((i) => result(i, `HTTP 500 from http://x:8${i}/v1 (gave up after ${i} attempts)`)), result('p', 'parse trouble')]));
    const lines = text.split('\n').filter((l) => l.includes('failed ('));
    expect(lines).toEqual(['  failed (3): HTTP 500 from http://x:81/v1 (gave up after 1 attempts) (2 other messages like it, with other numbers)', '  failed (1): parse trouble']);
  });

  it('lists at most five causes and counts the questions of the rest', () => {
    const causes = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta'];
    const text = describeOutcome(outcome(causes.map((c) => result(c, `broken ${c}`))));
    expect(text.match(/failed \(1\)/g)).toHaveLength(5);
    expect(text).toContain('… 2 more failed questions with 2 other causes');
  });

  it('prints no failure lines for a clean run', () => {
    const text = describeOutcome(outcome([result('a')]));
    expect(text).not.toContain('failed (');
    expect(text).toContain('1 answered, 0 failed of 1 questions');
  });
});

describe('answered and failed questions', () => {
  const aggregate = (rs: ExampleResult[]) => {
    const xs = rs.map((r) => scoreValues(r).rougeL ?? 0);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    return { rougeL: { mean, ciLow: Math.min(...xs), ciHigh: Math.max(...xs), n: xs.length } };
  };
  const scored = (id: string, rougeL: number, error?: string) => ({ ...result(id, error), scores: { rougeL: { value: rougeL } } });

  it('are counted separately, and metrics cover the answered ones only', () => {
    const results = [scored('a', 40), scored('b', 60), scored('c', 0, 'HTTP 500 from x (gave up after 4 attempts)')];
    const metrics = summariseRun(results, aggregate, { wallSeconds: 2, total: 4, status: 'FINISHED' });
    expect(metrics).toMatchObject({ n: 3, answered: 2, errors: 1, total: 4 });
    expect(metrics.metrics.rougeL).toMatchObject({ mean: 50, n: 2 });
    const text = describeOutcome({ ...outcome(results), metrics });
    expect(text.split('\n')[0]).toBe('run x FINISHED: 2 answered, 1 failed, 1 not reached of 4 questions, 2s');
    expect(text).toContain('metrics over the 2 answered questions (the 1 failed ones are left out)');
    expect(metricsForMlflow(metrics)).toMatchObject({ answered: 2, errors: 1, rougeL: 50 });
  });

  it('a run where every question failed prints no confidence intervals over failures', () => {
    const results = [scored('a', 0, 'down'), scored('b', 0, 'down')];
    const metrics = summariseRun(results, aggregate, { wallSeconds: 1, total: 2, status: 'FINISHED' });
    expect(metrics.metrics).toEqual({});
    const text = describeOutcome({ ...outcome(results), metrics });
    expect(text).toContain('0 answered, 2 failed of 2 questions');
    expect(text).toContain('no metrics: no question was answered');
    expect(text).not.toMatch(/CI \[/);
  });
});
