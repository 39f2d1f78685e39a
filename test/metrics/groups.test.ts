import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets/index';
import { availableGroupFields, checkGroupBy, exampleGroups, NO_GROUP } from '../../src/datasets/groups';
import type { Example } from '../../src/datasets/types';
import { aggregateResults } from '../../src/experiments/bindings';
import { bootstrapMean } from '../../src/metrics/bootstrap';
import { compareRuns } from '../../src/metrics/compare';
import { groupMetrics, groupPairedRows, rowGroup } from '../../src/metrics/groups';
import { comparisonSchema } from '../../src/run-files/comparison';
import { scoresOf, type ExampleResult } from '../../src/run-files';
import { groupComparisonMetrics, groupMetricsForMlflow } from '../../src/tracking/group-metrics';
import { keyProblem } from '../../src/tracking/limits';

const usage = { llmCalls: 1, promptTokens: 10, completionTokens: 5, cacheHits: 0, seconds: 1, retrievals: 0, parseFailures: 0 };

function row(id: string, metrics: Record<string, number>, extra: Partial<ExampleResult> = {}): ExampleResult {
  return { format: 3, id, question: `${id}?`, output: 'o', scores: scoresOf(metrics), usage, ...extra };
}

function example(id: string, extra: Partial<Example> = {}): Example {
  return { id, dataset: 'asqa', question: `${id}?`, answers: ['a'], qaPairs: [], longAnswers: [], passages: [], ...extra };
}

describe('group fields of examples', () => {
  it('gives ASQA kind from sourceId and keeps scalar meta fields, (none) where a question lacks one', () => {
    const aq = example('q1');
    const dq = example('q1.dq1', { sourceId: 'q1', meta: { ambiguousQuestion: 'q1?' } });
    expect(exampleGroups(aq, ['kind', 'ambiguousQuestion'])).toEqual({ kind: 'ambiguous', ambiguousQuestion: NO_GROUP });
    expect(exampleGroups(dq, ['kind', 'ambiguousQuestion'])).toEqual({ kind: 'disambiguated', ambiguousQuestion: 'q1?' });
    const situated = example('s1', { dataset: 'situatedqa', meta: { date: 2018, dateType: null, anyAnswer: ['x'], location: undefined } });
    expect(exampleGroups(situated, ['date', 'dateType'])).toEqual({ date: '2018', dateType: NO_GROUP });
    // A list is not a group: anyAnswer is not offered.
    expect(availableGroupFields([situated])).toEqual(['date', 'dateType']);
    expect(availableGroupFields([dq, example('f', { dataset: 'fever', label: 'SUPPORTS' })])).toEqual(['kind', 'ambiguousQuestion', 'label']);
  });

  it('keeps a record’s other scalar fields, so a run can group by a field of the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-group-fields-'));
    const hotpot = join(dir, 'sim_dev.json');
    const paragraphs = [{ title: 'T', context: 'c', is_supp: true }];
    writeFileSync(hotpot, JSON.stringify([
      { qas_id: 'h1', question: 'q?', answer: 'a', paragraphs, level: 'hard', hops: 2, tags: ['x'] },
      { qas_id: 'h2', question: 'q?', answer: 'a', paragraphs },
    ]));
    const examples = loadDataset('hotpotqa-adversarial', hotpot);
    expect(examples[0].meta).toEqual({ level: 'hard', hops: 2 });
    expect(examples[1].meta).toBeUndefined();
    expect(availableGroupFields(examples)).toEqual(['hops', 'level']);
    expect(examples.map((e) => exampleGroups(e, ['level']).level)).toEqual(['hard', NO_GROUP]);

    const asqa = join(dir, 'asqa.json');
    const entry = (q: string) => ({ ambiguous_question: q, qa_pairs: [{ question: `${q} (1)`, short_answers: ['a'] }], annotations: [{ long_answer: 'a' }] });
    writeFileSync(asqa, JSON.stringify({ dev: { a1: { ...entry('A?'), topic: 'sport' }, a2: entry('B?') } }));
    const mixed = loadDataset('asqa', asqa, { questions: 'mixed' });
    // A DQ carries its AQ's fields: topic is the same for both kinds.
    expect(mixed.map((e) => [e.id, exampleGroups(e, ['kind', 'topic'])])).toEqual([
      ['a1', { kind: 'ambiguous', topic: 'sport' }],
      ['a1.dq1', { kind: 'disambiguated', topic: 'sport' }],
      ['a2', { kind: 'ambiguous', topic: NO_GROUP }],
      ['a2.dq1', { kind: 'disambiguated', topic: NO_GROUP }],
    ]);
  });

  it('refuses an unknown field in one line naming groupBy and listing the available fields', () => {
    const examples = [example('q1'), example('q1.dq1', { sourceId: 'q1', meta: { ambiguousQuestion: 'q1?' } })];
    expect(() => checkGroupBy(['kind'], examples)).not.toThrow();
    expect(() => checkGroupBy(['kind', 'level'], examples)).toThrowError(/^groupBy: 'level' is not a field of the asqa questions of this run; available: kind, ambiguousQuestion$/);
  });
});

describe('groupMetrics', () => {
  const rows = [
    row('q1', { str_em: 50, rougeL: 30 }, { groups: { kind: 'ambiguous' } }),
    row('q2', { str_em: 0, rougeL: 10 }, { groups: { kind: 'ambiguous' } }),
    row('q3', { str_em: 100, rougeL: 20 }, { groups: { kind: 'ambiguous' } }),
    row('q1.dq1', { str_em: 100 }, { groups: { kind: 'disambiguated' } }),
    row('q2.dq1', { str_em: 0 }, { groups: { kind: 'disambiguated' } }),
  ];

  it('aggregates each group over its own questions with a bootstrap CI', () => {
    const groups = groupMetrics(rows, ['kind'], aggregateResults);
    expect(Object.keys(groups.kind)).toEqual(['ambiguous', 'disambiguated']);
    expect(groups.kind.ambiguous.str_em).toEqual(bootstrapMean([50, 0, 100]));
    expect(groups.kind.ambiguous.str_em.mean).toBe(50);
    expect(groups.kind.ambiguous.str_em.n).toBe(3);
    expect(groups.kind.ambiguous.rougeL.mean).toBe(20);
    expect(groups.kind.disambiguated.str_em).toMatchObject({ mean: 50, n: 2 });
    // ROUGE-L is undefined for a DQ (no long answer): the group has no rougeL at all.
    expect(groups.kind.disambiguated.rougeL).toBeUndefined();
    // The whole run's str_em differs from both groups' (5 questions, mean 50 but another CI).
    const all = aggregateResults(rows).str_em;
    expect(all.n).toBe(5);
    expect([all.ciLow, all.ciHigh]).not.toEqual([groups.kind.ambiguous.str_em.ciLow, groups.kind.ambiguous.str_em.ciHigh]);
  });

  it('derives kind and label from rows recorded without groups; refuses a field no row has', () => {
    const old = [
      row('q1', { str_em: 50 }, { target: { answers: [], qaPairs: [], longAnswers: [] } }),
      row('q1.dq1', { str_em: 100 }, { target: { answers: [], qaPairs: [], longAnswers: [], sourceId: 'q1' } }),
      // Format 1/2 rows carry no target: a DQ is known by its id.
      row('q2.dq3', { str_em: 0 }),
    ];
    expect(old.map((r) => rowGroup(r, 'kind', 'asqa'))).toEqual(['ambiguous', 'disambiguated', 'disambiguated']);
    const groups = groupMetrics(old, ['kind'], aggregateResults, 'asqa');
    expect(groups.kind.disambiguated.str_em).toMatchObject({ mean: 50, n: 2 });
    expect(rowGroup(row('c', { accuracy: 100 }, { target: { answers: [], qaPairs: [], longAnswers: [], label: 'REFUTES' } }), 'label', 'fever')).toBe('REFUTES');
    expect(() => groupMetrics(old, ['date'], aggregateResults, 'asqa', '--group-by (run r)')).toThrowError(
      /^--group-by \(run r\): the rows carry no 'date' group \(recorded without groupBy: \[date\]\) and it cannot be derived from them; available: kind$/,
    );
  });

  it('logs each group to MLflow under safe keys', () => {
    const keys = groupMetricsForMlflow({
      kind: groupMetrics(rows, ['kind'], aggregateResults).kind,
      date: { '1.5': { str_em: { mean: 1, ciLow: 0, ciHigh: 2, n: 3 } }, '1_5': { str_em: { mean: 2, ciLow: NaN, ciHigh: NaN, n: 1 } }, [NO_GROUP]: { str_em: { mean: 3, ciLow: 3, ciHigh: 3, n: 1 } } },
    });
    expect(keys['group.kind.ambiguous.str_em']).toBe(50);
    expect(keys['group.kind.ambiguous.rougeL']).toBe(20);
    expect(keys['group.kind.disambiguated.n']).toBe(2);
    expect(keys['group.date.1_5.str_em']).toBe(1);
    // `1_5` collides with `1.5` made safe: it is told apart, and its NaN bounds are left out.
    expect(keys['group.date.1_5_2.str_em']).toBe(2);
    expect(keys['group.date.1_5_2.str_em_ci_low']).toBeUndefined();
    expect(keys['group.date._none_.str_em']).toBe(3);
    for (const key of Object.keys(keys)) expect(keyProblem(key)).toBeUndefined();
  });
});

describe('per-group paired deltas', () => {
  // Group a: 6 deltas of +10 (exact sign-flip p = 2/64); b: 5 of +10 (p = 2/32); c: +10, −10 (p = 1).
  const ids = { a: ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'], b: ['b1', 'b2', 'b3', 'b4', 'b5'], c: ['c1', 'c2'] };
  const base = Object.entries(ids).flatMap(([g, list]) => list.map((id) => row(id, { str_em: 50 }, { groups: { topic: g } })));
  const better = Object.entries(ids).flatMap(([g, list]) => list.map((id, i) => row(id, { str_em: g === 'c' && i === 1 ? 40 : 60 }, { groups: { topic: g } })));

  it('gives each group its delta and sign-flip p, Holm-adjusted across the groups of the field', () => {
    const rows = groupPairedRows([{ name: 'A', results: base }, { name: 'B', results: better }], { name: 'A', results: base }, ['str_em'], ['topic']);
    expect(rows.map((r) => [r.value, r.n, r.meanDelta])).toEqual([['a', 6, 10], ['b', 5, 10], ['c', 2, 0]]);
    expect(rows.map((r) => r.p)).toEqual([2 / 64, 2 / 32, 1]);
    // Holm: 3 × 1/32 = 0.09375, then max(0.09375, 2 × 1/16) = 0.125, then max(0.125, 1 × 1) = 1.
    expect(rows.map((r) => r.pHolm)).toEqual([0.09375, 0.125, 1]);
    expect(rows[0]).toMatchObject({ ciLow: 10, ciHigh: 10, baselineMean: 50, runMean: 60, pMethod: 'exact' });
  });

  it('averages a question over its trials before pairing', () => {
    const trials = [...better.filter((r) => r.id !== 'a1'), row('a1', { str_em: 100 }, { groups: { topic: 'a' } }), row('a1', { str_em: 20 }, { groups: { topic: 'a' }, trial: 1 })];
    const [a] = groupPairedRows([{ name: 'A', results: base }, { name: 'B', results: trials }], { name: 'A', results: base }, ['str_em'], ['topic']);
    // a1's mean over its trials is 60: the same +10 as before, on 6 questions (not 7 rows).
    expect(a).toMatchObject({ n: 6, meanDelta: 10 });
  });

  it('are part of a comparison (recorded groups by default, --group-by kind derived) and of its MLflow metrics', () => {
    const runOf = (name: string, results: ExampleResult[]) => ({ name, dir: `/runs/${name}`, config: { dataset: { name: 'asqa' } }, results });
    const c = compareRuns([runOf('A', base), runOf('B', better)], { createdAt: 'fixed' });
    expect(comparisonSchema.parse(c)).toEqual(c);
    expect(c.groupBy).toEqual(['topic']);
    expect(c.groups!.map((g) => g.pHolm)).toEqual([0.09375, 0.125, 1]);
    const metrics = groupComparisonMetrics({ ...c, runs: c.runs.map((r) => ({ ...r, key: r.name })) });
    expect(metrics['group.topic.a.delta.str_em.B']).toBe(10);
    expect(metrics['group.topic.b.p_holm.str_em.B']).toBe(0.125);

    // Runs recorded without groupBy: kind from the rows; a field that cannot be derived is refused.
    const strip = (rows: ExampleResult[]) => rows.map(({ groups: _g, ...r }) => ({ ...r, id: r.id.startsWith('a') ? `${r.id}.dq1` : r.id }));
    const plain = compareRuns([runOf('A', strip(base)), runOf('B', strip(better))], { groupBy: ['kind'] });
    expect(plain.groups!.map((g) => [g.value, g.n, g.meanDelta])).toEqual([['ambiguous', 7, 50 / 7], ['disambiguated', 6, 10]]);
    expect(compareRuns([runOf('A', strip(base)), runOf('B', strip(better))]).groups).toBeUndefined();
    expect(() => compareRuns([runOf('A', strip(base)), runOf('B', strip(better))], { groupBy: ['topic'] })).toThrowError(/--group-by topic \(run A\): the rows carry no 'topic' group/);
  });
});
