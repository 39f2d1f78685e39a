import { describe, expect, it } from 'vitest';
import { buildDemoPool, demoFromExample, FixedDemoSelector, KnnDemoSelector } from '../../src/pipelines/demos';
import type { Example } from '../../src/datasets/types';
import type { Demo } from '../../src/pipelines/types';
import { FakeEmbedder } from './fakes';

const pool: Demo[] = [
  { id: 'a', question: 'Who won the world cup in football?', qaPairs: [{ question: 'Who won in 2018?', answer: 'France' }] },
  { id: 'b', question: 'Who won the football world cup final?', qaPairs: [{ question: 'Who won in 2014?', answer: 'Germany' }] },
  { id: 'c', question: 'When was the Eiffel tower built?', qaPairs: [{ question: 'When was it built?', answer: '1889' }] },
  { id: 'd', question: 'Who sang Hallelujah first?', answer: 'Leonard Cohen' },
];

describe('demo selection', () => {
  it('returns nearest neighbours by question embedding, best first', async () => {
    const s = new KnnDemoSelector(pool, new FakeEmbedder());
    const demos = await s.select({ id: 'q', question: 'Who won the football world cup?' }, 2);
    expect(demos.map((d) => d.id).sort()).toEqual(['a', 'b']);
    const eiffel = await s.select({ id: 'q', question: 'When was the Eiffel tower finished?' }, 1);
    expect(eiffel.map((d) => d.id)).toEqual(['c']);
  });

  it('never returns the question itself (by id or by text)', async () => {
    const s = new KnnDemoSelector(pool, new FakeEmbedder());
    expect((await s.select({ id: 'a', question: 'x' }, 4)).map((d) => d.id)).not.toContain('a');
    expect((await s.select({ id: 'zz', question: 'who won the world cup in football' }, 4)).map((d) => d.id)).not.toContain('a');
  });

  it('never returns the ambiguous question a disambiguated question was derived from', async () => {
    // Demo "a" lists its DQs and their answers; a DQ of "a" asked as a question must not see it.
    for (const s of [new KnnDemoSelector(pool, new FakeEmbedder()), new FixedDemoSelector(pool)]) {
      const dq = { id: 'a.dq1', question: 'Who won the 2018 football world cup?', sourceId: 'a' };
      expect((await s.select(dq, 4)).map((d) => d.id)).not.toContain('a');
      // Without the source id the same question would get it (the filter is what excludes it).
      expect((await s.select({ id: 'a.dq1', question: dq.question }, 4)).map((d) => d.id)).toContain('a');
    }
  });

  it('drops demos whose answers overlap the candidate answers (token F1 > 0.8)', async () => {
    const s = new KnnDemoSelector(pool, new FakeEmbedder());
    const q = { id: 'q', question: 'Who won the football world cup?' };
    const demos = await s.select(q, 4, { excludeAnswers: ['france'] });
    expect(demos.map((d) => d.id)).not.toContain('a');
    expect(demos).toHaveLength(3);
    // "Leonard Cohen" vs "Cohen": F1 = 0.67, not above 0.8 — kept.
    expect((await s.select(q, 4, { excludeAnswers: ['Cohen'] })).map((d) => d.id)).toContain('d');
    expect((await s.select(q, 4, { excludeAnswers: ['Cohen'], overlapF1: 0.5 })).map((d) => d.id)).not.toContain('d');
  });

  it('returns fewer demos when the pool runs out, and none for k = 0', async () => {
    const s = new FixedDemoSelector(pool);
    expect(await s.select({ id: 'q', question: 'x' }, 10)).toHaveLength(4);
    expect(await s.select({ id: 'q', question: 'x' }, 0)).toEqual([]);
    await expect(s.select({ id: 'q', question: 'x' }, -1)).rejects.toThrow(/nShots/);
  });

  it('embeds the pool once', async () => {
    const e = new FakeEmbedder();
    const s = new KnnDemoSelector(pool, e);
    await s.select({ id: 'q', question: 'one' }, 1);
    await s.select({ id: 'q', question: 'two' }, 1);
    expect(e.calls).toBe(3); // pool once + one query each
  });

  it('builds demos from dataset examples', () => {
    const asqa: Example = {
      id: 'x',
      dataset: 'asqa',
      question: 'Who played Ron?',
      answers: ['Rupert Grint'],
      qaPairs: [
        { question: 'Who played Ron in the films?', shortAnswers: ['Rupert Grint', 'Grint'] },
        { question: 'Who played Ron on stage?', shortAnswers: [] },
      ],
      longAnswers: ['Rupert Grint played Ron.'],
      passages: [],
    };
    expect(demoFromExample(asqa)).toEqual({
      id: 'x',
      question: 'Who played Ron?',
      qaPairs: [{ question: 'Who played Ron in the films?', answer: 'Rupert Grint' }],
      longAnswer: 'Rupert Grint played Ron.',
    });
    const hotpot: Example = { id: 'h', dataset: 'hotpotqa-adversarial', question: 'Q?', answers: ['1991'], qaPairs: [], longAnswers: [], passages: [], rationale: 'R.' };
    expect(demoFromExample(hotpot)).toEqual({ id: 'h', question: 'Q?', answer: '1991', rationale: 'R.' });
    const fever: Example = { id: 'f', dataset: 'fever', question: 'C.', answers: [], qaPairs: [], longAnswers: [], passages: [], label: 'REFUTES' };
    expect(demoFromExample(fever).answer).toBe('REFUTES');
    expect(buildDemoPool([{ ...hotpot, answers: [] , rationale: undefined }])).toEqual([]);
  });
});
