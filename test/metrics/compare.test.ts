import { describe, expect, it } from 'vitest';
import { compareRuns, metricSafeNames, type CompareRunInput } from '../../src/metrics/compare';
import { comparisonSchema } from '../../src/run-files/comparison';
import { scoresOf, type ExampleResult } from '../../src/run-files';

const usage = { llmCalls: 1, promptTokens: 10, completionTokens: 5, cacheHits: 0, seconds: 1, parseFailures: 0 } as unknown as ExampleResult['usage'];

function result(id: string, output: string, metrics: Record<string, number>, error?: string): ExampleResult {
  return { id, question: `question ${id}?`, output, format: 3, scores: scoresOf(metrics), usage, ...(error ? { error } : {}) };
}

function run(name: string, results: ExampleResult[], dataset: Record<string, unknown> = { name: 'asqa', split: 'dev' }): CompareRunInput {
  return { name, dir: `/runs/${name}`, config: { dataset, pipeline: { name: name.split('-')[0] } }, results };
}

describe('compareRuns', () => {
  const rag = run('rag', [
    result('q1', 'Paris', { str_em: 0, rougeL: 20 }),
    result('q2', 'Berlin', { str_em: 50, rougeL: 30 }),
    result('q3', 'Rome', { str_em: 100, rougeL: 40 }),
  ]);
  const toc = run('toc', [
    result('q1', 'Paris and Lyon', { str_em: 100, rougeL: 25 }),
    result('q2', 'Berlin', { str_em: 50, rougeL: 30 }),
    result('q3', 'Rome, Milan', { str_em: 100, rougeL: 50 }),
  ]);

  it('pairs by question id and computes each metric’s delta, CI, p, Holm and power', () => {
    const c = compareRuns([rag, toc], { createdAt: 'fixed' });
    expect(comparisonSchema.parse(c)).toEqual(c);
    expect(c.baseline).toBe('rag');
    expect(c.metrics).toEqual(['str_em', 'rougeL']);
    const [strEm, rougeL] = c.rows;
    // str_em deltas 100, 0, 0: mean 33.3; one non-zero delta → p = 1 (exact, 2 flips).
    expect(strEm).toMatchObject({ run: 'toc', metric: 'str_em', n: 3, baselineMean: 50, runMean: 250 / 3, p: 1, pMethod: 'exact', answerChanged: 2 });
    expect(strEm.meanDelta).toBeCloseTo(100 / 3, 12);
    // rougeL deltas 5, 0, 10: non-zero 5, 10 → sums 15, 5, −5, −15 → p = 2/4.
    expect(rougeL.meanDelta).toBe(5);
    expect(rougeL.p).toBe(0.5);
    // Holm over the two rows: 0.5·2 = 1, then max(1, 1·1) = 1.
    expect(rougeL.pHolm).toBe(1);
    expect(strEm.pHolm).toBe(1);
    // sd of 5, 0, 10 = 5 → ((2.80159·5)/5)² = 7.85 → 8.
    expect(rougeL.sdDelta).toBe(5);
    expect(rougeL.questionsFor80Power).toBe(8);
    expect(c.questions.map((q) => [q.id, q.answerChanged])).toEqual([['q1', true], ['q2', false], ['q3', true]]);
  });

  it('takes another baseline by name and gives the opposite deltas', () => {
    const c = compareRuns([rag, toc], { baseline: 'toc' });
    expect(c.baseline).toBe('toc');
    expect(c.rows[1]).toMatchObject({ run: 'rag', metric: 'rougeL', meanDelta: -5 });
  });

  it('refuses runs of different datasets in one line naming both runs', () => {
    const other = run('ambig', [result('q1', 'x', { str_em: 0, rougeL: 0 })], { name: 'ambignq', split: 'dev' });
    expect(() => compareRuns([rag, other])).toThrowError(/cannot compare ambig with rag: they are runs of different datasets \(ambignq\/dev vs asqa\/dev\)/);
  });

  it('refuses runs with no question in common', () => {
    const other = run('other', [result('q9', 'x', { str_em: 0, rougeL: 0 })]);
    expect(() => compareRuns([rag, other])).toThrowError(/cannot compare other with rag: they have no question in common/);
  });

  it('pairs the common questions of partly overlapping runs and says how many', () => {
    const partial = run('partial', [
      result('q2', 'Berlin!', { str_em: 100, rougeL: 30 }),
      result('q3', 'Rome', { str_em: 100, rougeL: 40 }),
      result('q4', 'Oslo', { str_em: 0, rougeL: 10 }),
    ]);
    const c = compareRuns([rag, partial]);
    expect(c.rows[0]).toMatchObject({ n: 2, onlyInRun: 1, onlyInBaseline: 1, meanDelta: 25 });
    expect(c.notes.join('\n')).toContain('partial vs rag: 2 questions in common paired; 1 only in partial and 1 only in rag left out.');
    expect(c.questions.map((q) => q.id)).toEqual(['q1', 'q2', 'q3', 'q4']);
  });

  it('counts questions one run failed and leaves them out', () => {
    const failing = run('failing', [
      result('q1', '', {}, 'timeout'),
      result('q2', 'Berlin', { str_em: 50, rougeL: 30 }),
      result('q3', 'Rome', { str_em: 0, rougeL: 40 }),
    ]);
    const c = compareRuns([rag, failing]);
    expect(c.rows[0]).toMatchObject({ n: 2, failedInRun: 1, failedInBaseline: 0, meanDelta: -50 });
    expect(c.notes.join('\n')).toContain('1 failed question(s) left out (1 failed in failing, 0 in rag)');
    expect(c.runs[1].failed).toBe(1);
  });

  it('refuses a metric a run does not have', () => {
    expect(() => compareRuns([rag, toc], { metrics: ['d_f1'] })).toThrowError(/--metrics: rag, toc have no per-question 'd_f1'/);
  });

  it('adds per-DQ STR-EM hits from the gold', () => {
    const gold = new Map([['q1', [{ question: 'city?', shortAnswers: ['Paris'] }, { question: 'other city?', shortAnswers: ['Lyon'] }]]]);
    const c = compareRuns([rag, toc], { gold });
    expect(c.questions[0].answers.rag.hits).toEqual([true, false]);
    expect(c.questions[0].answers.toc.hits).toEqual([true, true]);
    expect(c.questions[1].answers.rag.hits).toBeUndefined();
  });

  it('carries each run’s usage, with cost_usd when metrics.json has it', () => {
    const withCost = { ...toc, metrics: { n: 3, metrics: {}, usage: { llm_calls: 9, prompt_tokens: 900, completion_tokens: 90, cache_hits: 0, wall_seconds: 30, cost_usd: 0.012 } } };
    const c = compareRuns([rag, withCost]);
    expect(c.runs[1].usage).toEqual({ llm_calls: 9, prompt_tokens: 900, completion_tokens: 90, cache_hits: 0, wall_seconds: 30, cost_usd: 0.012 });
    expect(c.runs[0].usage).toBeUndefined();
  });
});

describe('metricSafeNames', () => {
  it('keeps letters, digits, _ - . and numbers collisions', () => {
    expect(metricSafeNames(['toc.pruneThreshold=0.3', 'a b', 'a/b', 'rag-20'])).toEqual(['toc.pruneThreshold_0.3', 'a_b', 'a_b_2', 'rag-20']);
  });
});
