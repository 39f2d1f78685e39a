import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { projectRoot } from '../../src/config/paths';
import { datasetNames, defaultDatasetFiles, detectDataset, loadDataset } from '../../src/datasets';
import { saveCorpus } from '../../src/retrieval/corpus';
import { scoreExample } from '../../src/metrics/example';
import { defaultMetrics, metricsFor } from '../../src/metrics/registry';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-2wiki-'));
const write = (name: string, value: unknown): string => {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};

// Two records in the official release layout: a compositional question and a comparison.
const records = [
  {
    _id: 'a1',
    type: 'compositional',
    question: 'Who is the spouse of the director of film Alive (1993 Film)?',
    context: [
      ['Alive (1993 film)', ['Alive is a 1993 American survival drama film.', 'It was directed by Frank Marshall.']],
      ['Frank Marshall (producer)', ['Frank Marshall is married to Kathleen Kennedy.']],
      ['Noise', ['Something else entirely.']],
    ],
    supporting_facts: [
      ['Alive (1993 film)', 1],
      ['Frank Marshall (producer)', 0],
    ],
    evidences: [
      ['Alive', 'director', 'Frank Marshall'],
      ['Frank Marshall', 'spouse', 'Kathleen Kennedy'],
    ],
    answer: 'Kathleen Kennedy',
  },
  {
    _id: 'b2',
    type: 'comparison',
    question: 'Which film came out first, X or Y?',
    context: [
      ['X', ['X is a 1990 film.']],
      ['Y', ['Y is a 1985 film.']],
    ],
    supporting_facts: [
      ['X', 0],
      ['Y', 0],
      ['Y', 7], // names a sentence the context lacks: skipped
    ],
    evidences: [],
    answer: 'Y',
  },
];

describe('2WikiMultihopQA', () => {
  it('is a registered dataset with its official default file and the short-answer metrics', () => {
    expect(datasetNames).toContain('2wikimultihop');
    expect(defaultDatasetFiles['2wikimultihop']).toBe('2wikimultihop/dev.json');
    expect(metricsFor('2wikimultihop')).toEqual(['em', 'f1', 'auc', 'auc_logprob']);
    expect(defaultMetrics('2wikimultihop')).toEqual(['em', 'f1']);
  });

  it('loads question, answer, paragraphs (supporting ones marked), the supporting sentences as rationale, type and evidences', () => {
    const path = write('dev.json', records);
    expect(detectDataset(path)).toBe('2wikimultihop');
    const [a, b] = loadDataset('2wikimultihop', path);
    expect(a).toMatchObject({
      id: 'a1',
      dataset: '2wikimultihop',
      question: 'Who is the spouse of the director of film Alive (1993 Film)?',
      answers: ['Kathleen Kennedy'],
      qaPairs: [],
      rationale: 'It was directed by Frank Marshall. Frank Marshall is married to Kathleen Kennedy.',
      meta: { type: 'compositional', evidences: records[0].evidences },
    });
    expect(a.passages).toEqual([
      { title: 'Alive (1993 film)', text: 'Alive is a 1993 American survival drama film. It was directed by Frank Marshall.', supporting: true },
      { title: 'Frank Marshall (producer)', text: 'Frank Marshall is married to Kathleen Kennedy.', supporting: true },
      { title: 'Noise', text: 'Something else entirely.', supporting: false },
    ]);
    expect(b.rationale).toBe('X is a 1990 film. Y is a 1985 film.');
  });

  it('scores answers with EM/F1 through the metric registry', async () => {
    const [a] = loadDataset('2wikimultihop', write('dev2.json', records));
    const s = await scoreExample('2wikimultihop', a, { answer: 'Kathleen Kennedy.' }, defaultMetrics('2wikimultihop'));
    expect(s.metrics).toEqual({ em: 100, f1: 100 });
  });

  it('pools its paragraphs into a corpus, each recorded as its question’s own', () => {
    const built = buildCorpus([{ kind: '2wikimultihop', path: write('dev3.json', records) }]);
    expect(built.passages).toHaveLength(5);
    expect(built.passages.filter((p) => p.annotatedFor?.includes('2wikimultihop:a1')).map((p) => p.title)).toEqual(['Alive (1993 film)', 'Frank Marshall (producer)', 'Noise']);
  });

  it('names the record and the field of a bad record, a duplicate id, and a file of another dataset', () => {
    const bad = write('bad.json', [{ ...records[0], context: 'not a list' }]);
    expect(() => loadDataset('2wikimultihop', bad)).toThrow(/record 0 \(_id a1\).*context/s);
    const dup = write('dup.json', [records[0], records[0]]);
    expect(() => loadDataset('2wikimultihop', dup)).toThrow(/record 1: _id a1 occurs twice/);
    const hotpot = write('sim_dev.json', [{ qas_id: 'h', question: 'q', answer: 'a', paragraphs: [{ title: 't', context: 'c', is_supp: true }] }]);
    expect(() => loadDataset('2wikimultihop', hotpot)).toThrow(/does not look like 2WikiMultihopQA.*adversarial HotpotQA/s);
  });

  it('runs Verify-and-Edit with experiments/ve-2wiki.yaml (scripted model), scored with EM/F1', async () => {
    const data = write('ve-dev.json', records);
    const corpus = join(dir, 've-corpus.jsonl');
    saveCorpus(corpus, buildCorpus([{ kind: '2wikimultihop', path: data }]).passages);
    const saved = process.env.AMBIQA_ARTIFACTS_DIR;
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    try {
      const set = (s: string) => ['--set', s];
      const code = await runCommand([
        join(projectRoot, 'experiments', 've-2wiki.yaml'),
        ...set(`dataset.path=${data}`),
        ...set(`dataset.demos=${data}`),
        ...set('pipeline.options.nShots=1'),
        ...set('llm={"provider":"scripted","reply":"Frank Marshall directed it. So the answer is Kathleen Kennedy."}'),
        ...set(`retriever.corpus=${corpus}`),
        ...set('tracking.enabled=false'),
      ]);
      expect(code).toBe(0);
      const metrics = JSON.parse(readFileSync(join(dir, 'artifacts', 'runs', 've-2wiki', 'metrics.json'), 'utf8'));
      // Every sample answers "Kathleen Kennedy": right for a1, wrong for b2.
      expect(metrics.metrics.em.mean).toBe(50);
      expect(metrics.n).toBe(2);
    } finally {
      if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
      else process.env.AMBIQA_ARTIFACTS_DIR = saved;
    }
  });

  it.skipIf(!hasSharedData('2wikimultihop', 'train_subset.json'))('reads the shared few-shot subset (Verify-and-Edit’s six demos)', () => {
    const path = sharedDataPath('2wikimultihop', 'train_subset.json');
    expect(detectDataset(path)).toBe('2wikimultihop');
    const examples = loadDataset('2wikimultihop', path);
    expect(examples).toHaveLength(6);
    expect(examples.every((e) => e.answers.length === 1 && e.passages.length === 10 && e.passages.some((p) => p.supporting) && e.rationale)).toBe(true);
    const alive = examples.find((e) => e.id === '2c1df6880bda11eba7f7acde48001122')!;
    expect(alive.answers).toEqual(['Kathleen Kennedy']);
    expect(alive.meta?.type).toBe('compositional');
  });
});
