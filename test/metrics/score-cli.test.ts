import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/commands/score';
import { main } from '../../src/cli/main';
import { examplesDir } from '../../src/config/paths';
import { writeTinyBert } from '../helpers/tiny-onnx';

// `ambiqa score` end to end on the example ASQA file that ships with the repository (six
// questions), so it runs on a fresh clone too.
const asqaMini = join(examplesDir, 'asqa-mini.json');
let dir: string;
let out: string[];
let err: string[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-score-'));
  out = [];
  err = [];
  vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  vi.spyOn(console, 'warn').mockImplementation((...a) => void err.push(a.join(' ')));
});
afterEach(() => vi.restoreAllMocks());

const jsonl = (name: string, lines: Array<object | string>): string => {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return path;
};

describe('ambiqa score --dataset asqa', () => {
  it('writes the issue #4 layout, reports every input problem, and scores missing questions as empty', async () => {
    const preds = jsonl('preds.jsonl', [
      { id: 'demo-worldcup', output: 'Argentina won the 2022 men’s World Cup and Spain the 2023 women’s.' },
      { id: 'demo-titanic', output: 'Titanic came out in 1997.' },
      { id: 'demo-titanic', output: 'A duplicate that must not be scored: 1953.' },
      '{"id": "demo-eiffel", "output": ',
      { id: 'demo-netherlands', output: '' },
      { id: 'not-a-question', output: 'x' },
      { id: 'demo-always-love-you', output: 'Dolly Parton wrote it; Whitney Houston covered it.' },
      { id: 'demo-longest-river', output: 'The Nile, or the Amazon, or the Missouri River.' },
    ]);
    const outPath = join(dir, 'sub', 'scores.json');
    // `--reader none` keeps this test off the embedded model: the default metrics less D-F1 and DR
    // (the default reader is exercised in reader-embedded.test.ts).
    expect(await run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--out', outPath, '--reader', 'none'])).toBe(0);
    const r = JSON.parse(readFileSync(outPath, 'utf8'));
    expect(r.dataset).toBe('asqa');
    expect(r.n).toBe(6);
    expect(Object.keys(r.metrics)).toEqual(['str_em', 'str_hit', 'rougeL', 'rougeLsum']);
    expect(r.d_f1_reader).toBeUndefined();
    const row = (id: string) => r.per_example.find((p: { id: string }) => p.id === id);
    expect(row('demo-worldcup').dq_hits).toEqual([true, true, false]);
    expect(row('demo-titanic').dq_hits).toEqual([true, false]); // the duplicate line's 1953 is ignored
    expect(row('demo-eiffel')).toMatchObject({ missing: true, str_em: 0, dq_hits: [false, false] });
    expect(row('demo-netherlands').str_em).toBe(0);
    expect(row('demo-longest-river').str_em).toBe(100);
    // STR-EM = mean over questions of per-question means: (2/3 + 1/2 + 0 + 0 + 1 + 1) / 6.
    expect(r.metrics.str_em).toBeCloseTo((100 * (2 / 3 + 1 / 2 + 0 + 0 + 1 + 1)) / 6, 3);
    expect(r.metrics.str_hit).toBeCloseTo(100 / 3, 3);
    expect(r.ci95.str_em[0]).toBeLessThanOrEqual(r.metrics.str_em);
    expect(r.issues.malformed_lines).toEqual([{ line: 4, message: expect.stringMatching(/not valid JSON/) }]);
    expect(r.issues.unknown_ids).toEqual(['not-a-question']);
    expect(r.issues.duplicate_ids).toEqual([{ id: 'demo-titanic', lines: [2, 3] }]);
    expect(r.issues.missing_ids).toEqual(['demo-eiffel']);
    expect(r.issues.empty_outputs).toEqual(['demo-netherlands']);
    expect(r.sentence_splitter).toBe('punkt-english (nltk 3.8)');
    expect(err.join('\n')).toMatch(/1 question\(s\) without a prediction, scored as empty outputs/);
    expect(out.join('\n')).toMatch(/str_em/);
    // --strict turns the reported problems into exit status 4 (some predictions failed; docs/cli.md).
    expect(await run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--strict', '--reader', 'none'])).toBe(4);
  });

  it('counts a question without qa_pairs out of STR-EM but still scores its ROUGE', async () => {
    const data = JSON.parse(readFileSync(asqaMini, 'utf8'));
    data.dev['demo-titanic'].qa_pairs = [];
    const dataPath = join(dir, 'asqa.json');
    writeFileSync(dataPath, JSON.stringify(data));
    const preds = jsonl('p.jsonl', Object.keys(data.dev).map((id) => ({ id, output: 'The Nile.' })));
    const outPath = join(dir, 's.json');
    expect(await run(['--dataset', 'asqa', '--data', dataPath, '--predictions', preds, '--out', outPath, '--metrics', 'str_em,rougeL'])).toBe(0);
    const r = JSON.parse(readFileSync(outPath, 'utf8'));
    expect(r.issues.no_qa_pairs).toEqual(['demo-titanic']);
    expect(r.counts).toEqual({ str_em: 5, rougeL: 6 });
  });

  it('computes D-F1 and DR with the configured reader and names it', async () => {
    const model = join(dir, 'tiny-reader');
    writeTinyBert({ dir: model, head: 'question-answering', words: ['argentina', 'spain', 'won'], hidden: 2, seed: 3 });
    const preds = jsonl('p.jsonl', [{ id: 'demo-worldcup', output: 'Argentina won. Spain won.' }]);
    const outPath = join(dir, 's.json');
    expect(await run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--out', outPath, '--metrics', 'd_f1,dr', '--reader', `qa-onnx:${model}`])).toBe(0);
    const r = JSON.parse(readFileSync(outPath, 'utf8'));
    expect(r.d_f1_reader).toBe('qa-onnx:tiny-reader');
    expect(Object.keys(r.metrics)).toEqual(['d_f1', 'dr']);
    expect(r.per_example.find((p: { id: string }) => p.id === 'demo-worldcup').reader_spans).toHaveLength(3);
  });

  it('refuses d_f1 without a reader, a reader that cannot be loaded, a dataset file given as predictions, and an empty predictions file', async () => {
    const preds = jsonl('p.jsonl', [{ id: 'demo-worldcup', output: 'x' }]);
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--metrics', 'd_f1', '--reader', 'none'])).rejects.toThrow(/--reader none: d_f1 and dr need a reader/);
    // The reader is fixed independently of the system under test: the old "the run's model" spec is refused.
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--reader', 'llm'])).rejects.toThrow(/--reader: "llm" is no longer a reader/);
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--reader', 'embedded:' + join(dir, 'missing.gguf')])).rejects.toThrow(
      /--reader: embedded model file not found: .*missing\.gguf/,
    );
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--reader', 'qa-onnx:' + join(dir, 'no-model')])).rejects.toThrow(/--reader: .*no-model/);
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--reader', 'bogus'])).rejects.toThrow(/--reader: "bogus" is not a reader/);
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', asqaMini])).rejects.toThrow(/looks like a dataset file/);
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '\n');
    await expect(run(['--dataset', 'asqa', '--data', asqaMini, '--predictions', empty])).rejects.toThrow(/has no predictions/);
  });

  it('says so when the predictions belong to another dataset, without a stack trace', async () => {
    const preds = jsonl('situated.jsonl', [
      { id: '-7924170207595297549@2021', answer: '2018' },
      { id: '9188546442463987107@maryland', answer: '10 grams or less' },
    ]);
    expect(await main(['score', '--dataset', 'asqa', '--data', asqaMini, '--predictions', preds, '--reader', 'none'])).toBe(1);
    const message = err.join('\n');
    expect(message).toMatch(/none of the 2 prediction ids occur in .*asqa-mini\.json/);
    expect(message).toMatch(/look like situatedqa ids/);
    expect(message).not.toMatch(/\n\s+at /);
  });
});

describe('ambiqa score on short-answer datasets', () => {
  it('scores hotpotqa-adversarial answers with EM/F1 and the AUC from consistency', async () => {
    const data = [
      { qas_id: 'a', question: 'q1', answer: 'Sochi, Russia', paragraphs: [{ title: 't', context: 'c', is_supp: true }], rationale: [] },
      { qas_id: 'b', question: 'q2', answer: '1991', paragraphs: [{ title: 't', context: 'c', is_supp: true }], rationale: [] },
    ];
    const dataPath = join(dir, 'sim_dev.json');
    writeFileSync(dataPath, JSON.stringify(data));
    const preds = jsonl('p.jsonl', [
      { id: 'a', answer: 'Sochi', consistency: 0.4 },
      { id: 'b', answer: '1991', consistency: 1 },
    ]);
    const outPath = join(dir, 's.json');
    expect(await run(['--dataset', 'hotpotqa-adversarial', '--data', dataPath, '--predictions', preds, '--out', outPath, '--metrics', 'em,f1,auc'])).toBe(0);
    const r = JSON.parse(readFileSync(outPath, 'utf8'));
    expect(r.metrics.em).toBe(50);
    expect(r.metrics.f1).toBeCloseTo(((200 / 3) + 100) / 2, 3);
    // Ranked: b (correct) then a: N = 2 → one level at coverage 1 → accuracy 50.
    expect(r.metrics.auc).toBe(50);
  });

  it('scores FEVER labels and reports the unrecognised ones', async () => {
    const dataPath = join(dir, 'fever.jsonl');
    writeFileSync(dataPath, [{ id: 1, question: 'c1', label: 'SUPPORTS' }, { id: 2, question: 'c2', label: 'REFUTES' }, { id: 3, question: 'c3', label: 'NOT ENOUGH INFO' }].map((o) => JSON.stringify(o)).join('\n'));
    const preds = jsonl('p.jsonl', [
      { id: 1, answer: 'SUPPORTS' },
      { id: 2, answer: 'it is false' },
      { id: 3, label: 'not enough info' },
    ]);
    const outPath = join(dir, 's.json');
    expect(await run(['--dataset', 'fever', '--data', dataPath, '--predictions', preds, '--out', outPath])).toBe(0);
    const r = JSON.parse(readFileSync(outPath, 'utf8'));
    expect(r.metrics.accuracy).toBeCloseTo(200 / 3, 3);
    expect(r.issues.unrecognised_labels).toEqual(['2']);
  });

  it('prints its help', async () => {
    expect(await run(['--help'])).toBe(0);
    expect(out.join('\n')).toMatch(/--reader <reader>/);
  });
});
