import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createScorer, storedSignals } from '../../src/experiments/bindings';
import { selfConsistencyDecisionsSchema } from '../../src/pipelines/baselines/decisions';
import { createPipeline, methodCatalog } from '../../src/pipelines/registry';
import { createMethodCatalog } from '../../src/plots/methods';
import { scoreValues } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import { hotpotExample, scriptedLlm } from '../pipelines/fakes';
import { veTrace } from '../plots/fixtures';

const example = { ...hotpotExample('h', 'Which river flows through Paris?'), answers: ['Seine'] };

describe('pipelines hand their signals over (PipelineOutput.confidence / answerLogprob)', () => {
  it('CoT-SC hands over its vote share; a baseline without one hands over nothing', async () => {
    const answers = ['Seine', 'the Seine', 'Loire', 'Seine.', 'Rhone'];
    const sc = await createPipeline('cot-sc', { nShots: 0 }).answer(example, {
      llm: scriptedLlm({ 'cot-sc.sample': (_r, i) => `Because. So the answer is: ${answers[i]}` }).llm,
    });
    expect(sc.confidence).toBeCloseTo(0.6, 12);
    expect(sc.confidence).toBe(selfConsistencyDecisionsSchema.parse(sc.trace.decisions).consistency);
    expect(sc.answerLogprob).toBeUndefined();
    const cot = await createPipeline('cot', { nShots: 0 }).answer(example, { llm: scriptedLlm({ 'cot.answer': 'Because. So the answer is: Seine' }).llm });
    expect(cot.confidence).toBeUndefined();
  });

  it('the scorer ranks by the signals of the output, not by a registry reading the trace', async () => {
    const scorer = createScorer('hotpotqa-adversarial', ['em', 'auc', 'auc_logprob']);
    const scored = scoreValues({ scores: await scorer.score(example, { output: 'Seine', answer: 'Seine', confidence: 0.6, answerLogprob: -0.5 }) });
    expect(scored).toMatchObject({ em: 100, consistency: 60, answer_logprob: -0.5 });
    // An output whose method handed nothing over has no ranking, whatever its trace holds.
    const withTraceOnly = scoreValues({ scores: await scorer.score(example, { output: 'Seine', answer: 'Seine', trace: veTrace('h', { votes: 4 }) } as Parameters<typeof scorer.score>[1]) });
    expect(withTraceOnly.em).toBe(100);
    expect(withTraceOnly.consistency).toBeUndefined();
    expect(withTraceOnly.answer_logprob).toBeUndefined();
  });
});

describe('stored rows (ambiqa score)', () => {
  const trace: Trace = veTrace('h', { votes: 4 });
  it('a row keeps its own signals; a row written before them reads them back from its trace through the catalog', () => {
    expect(storedSignals({ confidence: 0.2, answerLogprob: -1 }, trace, methodCatalog())).toEqual({ confidence: 0.2, answerLogprob: -1 });
    expect(storedSignals({}, trace, methodCatalog())).toEqual({ confidence: 0.8 });
    // A catalog without the method knows nothing of its trace; nor is there anything without a trace.
    expect(storedSignals({}, trace, createMethodCatalog([]))).toEqual({});
    expect(storedSignals({}, undefined, methodCatalog())).toEqual({});
  });
});

describe('the method catalog (methodCatalog(), createMethodCatalog)', () => {
  it('holds every built-in method by decisions kind, its analysis, figures and decisions schema', () => {
    const catalog = methodCatalog();
    expect(catalog.kinds).toEqual(['baseline', 'cot-sc', 'toc', 'verify-edit', 'diva', 'combo']);
    expect(catalog.analysis('verify-edit')?.kind).toBe('verify-edit');
    expect(catalog.figures('toc')?.forRun).toBeTypeOf('function');
    expect(catalog.analysis('baseline')).toBeUndefined();
    expect(catalog.decisionsSchema('baseline')?.safeParse({ kind: 'baseline', passageIds: [] }).success).toBe(true);
    expect(catalog.judges.map((j) => j.purpose)).toContain('toc.verify');
    expect(catalog.analysis('nobody')).toBeUndefined();
  });

  it('a kind described again keeps its place and takes the later parts it has', () => {
    const first = { statistics: () => ({ decision_a: 1 }), judges: [{ purpose: 'x.first', silverLabel: 'first' }] };
    const later = { statistics: () => ({ decision_a: 2 }), judges: [{ purpose: 'x.later', silverLabel: 'later' }] };
    const schema = z.object({ kind: z.literal('x') });
    const catalog = createMethodCatalog([
      { kind: 'x', analysis: first, decisionsSchema: schema },
      { kind: 'y', figures: { forRun: () => ({ figures: [] }) } },
      { kind: 'x', analysis: later },
    ]);
    expect(catalog.kinds).toEqual(['x', 'y']);
    expect(catalog.analysis('x')?.statistics?.([])).toEqual({ decision_a: 2 });
    expect(catalog.judges).toEqual([{ purpose: 'x.later', silverLabel: 'later' }]);
    expect(catalog.decisionsSchema('x')).toBe(schema);
    expect(catalog.figures('x')).toBeUndefined();
    expect(catalog.figures('y')?.kind).toBe('y');
  });
});
