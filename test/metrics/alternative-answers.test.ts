import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAlternativeAnswers, loadDataset } from '../../src/datasets';
import type { Example } from '../../src/datasets/types';
import { createComposer } from '../../src/experiments/compose';
import { resolveExperimentConfig } from '../../src/experiments/config';
import { accuracyCoverageAuc } from '../../src/metrics/calibration';
import { aggregate, scoreExample } from '../../src/metrics/example';
import { describeError } from '../../src/errors';
import { labelJudgments } from '../../src/metrics/judge-labels';
import { correctness } from '../../src/plots/correctness';
import { scoresOf, type ExampleResult } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import { hasSharedData, sharedDataPath } from '../helpers/data';
import { methodCatalog } from '../../src/pipelines/registry';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'ambiqa-alt-'));
const record = (qas_id: string, question: string, answer: string) => ({
  qas_id,
  question,
  answer,
  paragraphs: [{ title: 't', context: 'c', is_supp: true }],
  rationale: [{ title: 't', sentence: 's' }],
});
/** A two-question sim_dev.json and, unless `alternatives` is null, an alt_answers.jsonl beside it. */
function dataDir(alternatives: string | null = '{"qas_id": "q1", "answer": "In Sochi, Russia"}\n{"qas_id": "q1", "answer": "Sochi"}\n{"qas_id": "q1", "answer": "Sochi"}\n'): string {
  const dir = tmp();
  writeFileSync(join(dir, 'sim_dev.json'), JSON.stringify([record('q1', 'Where?', 'Sochi, Russia'), record('q2', 'Who?', 'Joel Coen')]));
  if (alternatives !== null) writeFileSync(join(dir, 'alt_answers.jsonl'), alternatives);
  return dir;
}
const oneLine = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message;
  }
  throw new Error('expected an error');
};

describe('the alternative-answers file', () => {
  it('attaches each question its alternatives (file order, duplicates once), an empty list to the others', () => {
    const dir = dataDir();
    const [q1, q2] = loadDataset('hotpotqa-adversarial', join(dir, 'sim_dev.json'), { alternatives: join(dir, 'alt_answers.jsonl') });
    expect(q1.answers).toEqual(['Sochi, Russia']);
    expect(q1.alternativeAnswers).toEqual(['In Sochi, Russia', 'Sochi']);
    expect(q2.alternativeAnswers).toEqual([]);
    // Without the option nothing is read: the examples carry no list at all.
    expect(loadDataset('hotpotqa-adversarial', join(dir, 'sim_dev.json'))[0].alternativeAnswers).toBeUndefined();
  });

  it('missing or malformed: one line naming the file (and the first bad line)', () => {
    const dir = dataDir(null);
    const missing = join(dir, 'alt_answers.jsonl');
    expect(oneLine(() => loadDataset('hotpotqa-adversarial', join(dir, 'sim_dev.json'), { alternatives: missing }))).toBe(`alternative-answers file ${missing} does not exist`);
    const bad = join(dataDir('{"qas_id": "q1", "answer": "x"}\n{"qas_id": "q2"}\n{"qas_id": 3, "answer": ""}\nnot json\n'), 'alt_answers.jsonl');
    const message = oneLine(() => loadAlternativeAnswers(bad));
    expect(message).toMatch(new RegExp(`^alternative-answers file ${bad} line 2: answer: .+ \\(and 2 more bad lines\\)$`));
    expect(oneLine(() => loadAlternativeAnswers(join(dataDir('\n\n'), 'alt_answers.jsonl')))).toMatch(/holds no answers$/);
    // Read before the (larger) dataset file: a bad alternatives file is reported even when the dataset is missing too.
    expect(() => loadDataset('hotpotqa-adversarial', join(dir, 'nope.json'), { alternatives: bad })).toThrow(/alternative-answers file .* line 2/);
    expect(() => loadDataset('fever', join(dir, 'sim_dev.json'), { alternatives: bad })).toThrow(/option alternatives applies to dataset hotpotqa-adversarial only/);
  });

  it.skipIf(!hasSharedData('hotpotqa-adversarial', 'alt_answers.jsonl'))('shared data: 172 lines give 120 of the 308 questions alternatives', () => {
    const path = sharedDataPath('hotpotqa-adversarial', 'alt_answers.jsonl');
    const dev = loadDataset('hotpotqa-adversarial', sharedDataPath('hotpotqa-adversarial', 'sim_dev.json'), { alternatives: path });
    const withAlternatives = dev.filter((e) => e.alternativeAnswers!.length > 0);
    expect(dev).toHaveLength(308);
    expect(withAlternatives).toHaveLength(120);
    expect(loadAlternativeAnswers(path).size).toBe(120); // every listed id is a dev question
    expect(dev.find((e) => e.id === '5ab52a255542996a3a96a048')!.alternativeAnswers).toContain('In Sochi, Russia');
  });
});

describe('em_alt and f1_alt', () => {
  const example: Example = {
    id: 'q1',
    dataset: 'hotpotqa-adversarial',
    question: 'Where?',
    answers: ['Sochi, Russia'],
    alternativeAnswers: ['In Sochi, Russia', 'Sochi'],
    qaPairs: [],
    longAnswers: [],
    passages: [],
  };

  it('count an alternative as correct; em and f1 still score the gold answer alone', async () => {
    const s = await scoreExample('hotpotqa-adversarial', example, { answer: 'sochi' }, ['em', 'f1', 'em_alt', 'f1_alt']);
    expect(s.metrics).toMatchObject({ em: 0, em_alt: 100, f1_alt: 100 });
    expect(s.metrics.f1).toBeCloseTo(100 * (2 / 3), 10); // "sochi" against "sochi russia"
    const wrong = await scoreExample('hotpotqa-adversarial', example, { answer: 'Moscow' }, ['em', 'em_alt']);
    expect(wrong.metrics).toEqual({ em: 0, em_alt: 0 });
    const gold = await scoreExample('hotpotqa-adversarial', example, { answer: 'Sochi, Russia.' }, ['em', 'em_alt']);
    expect(gold.metrics).toEqual({ em: 100, em_alt: 100 });
  });

  it('are missing, with the reason, when no alternatives file was loaded (never the gold-only EM under their name)', async () => {
    const { alternativeAnswers: _, ...plain } = example;
    const s = await scoreExample('hotpotqa-adversarial', plain, { answer: 'Sochi, Russia' }, ['em', 'em_alt', 'f1_alt']);
    expect(s.metrics).toEqual({ em: 100 });
    expect(s.notes).toEqual([
      'em_alt: no alternative-answers file was loaded (dataset.alternatives)',
      'f1_alt: no alternative-answers file was loaded (dataset.alternatives)',
    ]);
  });
});

describe('the two AUCs', () => {
  // Three predictions; consistency and answer log-probability rank them in opposite orders.
  const rows = [
    { metrics: { em: 0, em_alt: 100, consistency: 100, answer_logprob: -3 } },
    { metrics: { em: 0, em_alt: 0, consistency: 60, answer_logprob: -2 } },
    { metrics: { em: 100, em_alt: 100, consistency: 20, answer_logprob: -0.1 } },
  ];

  it('auc ranks by consistency and auc_logprob by answer log-probability, both on em_alt where every row has it', () => {
    const m = aggregate(rows).metrics;
    expect(m.auc.mean).toBeCloseTo(accuracyCoverageAuc([100, 60, 20], [1, 0, 1])!, 12);
    expect(m.auc_logprob.mean).toBeCloseTo(accuracyCoverageAuc([-3, -2, -0.1], [1, 0, 1])!, 12);
    // S = 2 levels: keep 1, then 3. By consistency: 1, 2/3; by log-probability: 1, 2/3 as well, but
    // on EM alone the orders differ: 0 then 1/3, against 1 then 1/3.
    expect(m.auc.mean).toBeCloseTo(100 * (1 + 2 / 3) / 2, 12);
    const onEm = aggregate(rows.map((r) => ({ metrics: { em: r.metrics.em, consistency: r.metrics.consistency, answer_logprob: r.metrics.answer_logprob } }))).metrics;
    expect(onEm.auc.mean).toBeCloseTo(100 * (0 + 1 / 3) / 2, 12);
    expect(onEm.auc_logprob.mean).toBeCloseTo(100 * (1 + 1 / 3) / 2, 12);
    expect(m.auc.n).toBe(3);
  });

  it('each is computed only from predictions that carry its confidence', () => {
    const m = aggregate([rows[0], { metrics: { em: 100, em_alt: 100, consistency: 40 } }]).metrics;
    expect(m.auc.n).toBe(2);
    expect(m.auc_logprob.n).toBe(1);
    expect(aggregate([{ metrics: { em: 100 } }]).metrics.auc_logprob).toBeUndefined();
  });

  it('a prediction keeps its answer log-probability beside its consistency', async () => {
    const example: Example = { id: 'q', dataset: 'hotpotqa-adversarial', question: 'q', answers: ['a'], qaPairs: [], longAnswers: [], passages: [] };
    const s = await scoreExample('hotpotqa-adversarial', example, { answer: 'a', consistency: 0.4, answerLogprob: -1.5 }, ['auc', 'auc_logprob']);
    expect(s.metrics).toEqual({ consistency: 40, answer_logprob: -1.5, em: 100 });
    const none = await scoreExample('hotpotqa-adversarial', example, { answer: 'a', consistency: 0.4 }, ['auc_logprob']);
    expect(none.notes).toEqual(['auc_logprob: the prediction has no answer log-probability']);
  });
});

describe('a run that counts alternative answers', () => {
  const { registry } = createComposer({ notify: () => undefined });
  const config = (dir: string, extra: Record<string, unknown> = {}) =>
    resolveExperimentConfig(
      {
        dataset: { name: 'hotpotqa-adversarial', path: join(dir, 'sim_dev.json'), ...extra },
        pipeline: { name: 'closed-book', options: { nShots: 0 } },
        llm: { provider: 'scripted', reply: 'Sochi' },
        metrics: ['em', 'em_alt'],
      },
      registry,
      { source: 'test.yaml' },
    );

  it('reads alt_answers.jsonl beside the dataset, or dataset.alternatives', () => {
    const dir = dataDir();
    expect(config(dir).dataset.alternatives).toBe(join(dir, 'alt_answers.jsonl'));
    const other = join(tmp(), 'mine.jsonl');
    writeFileSync(other, '{"qas_id": "q2", "answer": "Coen"}\n');
    expect(config(dir, { alternatives: other }).dataset.alternatives).toBe(other);
  });

  it('is refused before any model call when the file is missing, naming the option and the file', () => {
    const dir = dataDir(null);
    let message = '';
    try {
      config(dir);
    } catch (error) {
      message = describeError(error);
    }
    expect(message).toContain(`dataset.alternatives: alternative-answers file not found: ${join(dir, 'alt_answers.jsonl')}`);
  });

  it('is refused before any model call when the file is malformed: loading the dataset is the first step', async () => {
    const dir = dataDir('{"qas_id": "q1"}\n');
    const logDir = tmp();
    mkdirSync(logDir, { recursive: true });
    const callLog = join(logDir, 'calls.jsonl');
    const resolved = resolveExperimentConfig(
      {
        dataset: { name: 'hotpotqa-adversarial', path: join(dir, 'sim_dev.json') },
        pipeline: { name: 'closed-book', options: { nShots: 0 } },
        llm: { provider: 'scripted', reply: 'Sochi', callLog },
        metrics: ['em_alt'],
      },
      registry,
      { source: 'test.yaml' },
    );
    const composer = createComposer({ notify: () => undefined });
    await expect(composer.components(resolved)).rejects.toThrow(/^alternative-answers file .*alt_answers\.jsonl line 1: answer: /);
    expect(() => loadAlternativeAnswers(join(dir, 'alt_answers.jsonl'))).toThrow();
  });

  it('does not need the file when no metric counts alternatives', () => {
    const dir = dataDir(null);
    const c = resolveExperimentConfig(
      { dataset: { name: 'hotpotqa-adversarial', path: join(dir, 'sim_dev.json') }, pipeline: { name: 'closed-book', options: { nShots: 0 } }, llm: { provider: 'scripted' }, metrics: ['em'] },
      registry,
      { source: 'test.yaml' },
    );
    expect(c.dataset.alternatives).toBeUndefined();
  });
});

describe('what the VE figures and judge diagnostics count as correct', () => {
  it('the figures take em_alt before em; the consistency judge’s silver label counts the alternatives', () => {
    const results = [
      { id: 'a', output: 'x', scores: scoresOf({ em: 0, em_alt: 100 }) },
      { id: 'b', output: 'y', scores: scoresOf({ em: 0, em_alt: 0 }) },
    ] as unknown as ExampleResult[];
    expect([...correctness(results)]).toEqual([
      ['a', true],
      ['b', false],
    ]);
    const example: Example = { id: 'q1', dataset: 'hotpotqa-adversarial', question: 'Where?', answers: ['Sochi, Russia'], alternativeAnswers: ['Sochi'], qaPairs: [], longAnswers: [], passages: [] };
    const trace = { answer: 'Sochi', decisions: { kind: 'verify-edit', consistency: 0.4, finalAnswer: 'Sochi' } } as unknown as Trace;
    expect(labelJudgments(trace, example, methodCatalog()).map((j) => j.label)).toEqual([true]);
    const { alternativeAnswers: _, ...goldOnly } = example;
    expect(labelJudgments(trace, goldOnly, methodCatalog()).map((j) => j.label)).toEqual([false]);
  });
});
