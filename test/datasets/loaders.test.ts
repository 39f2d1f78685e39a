import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectDataset, loadDataset, loadQaFeedback, sampleIndices } from '../../src/datasets';
import { quoteLargeIntegers } from '../../src/datasets/read';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'ambiqa-ds-'));
const write = (dir: string, name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const asqaEntry = (q: string, pairs: Array<[string, string[]]>) => ({
  ambiguous_question: q,
  qa_pairs: pairs.map(([question, short_answers]) => ({ question, short_answers, context: 'No context provided', wikipage: null })),
  wikipages: [],
  annotations: [{ long_answer: `About ${q}`, knowledge: [{ content: 'A passage.', wikipage: 'Page' }] }],
});

describe.skipIf(!hasSharedData('asqa', 'ASQA_dev.json'))('the real data files', () => {
  it('ASQA dev: 753 questions with DQs, short answers, two long answers and knowledge passages', () => {
    const ex = loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json'));
    expect(ex).toHaveLength(753);
    expect(ex.every((e) => e.dataset === 'asqa' && e.qaPairs.length >= 2 && e.longAnswers.length === 2)).toBe(true);
    const first = ex.find((e) => e.id === '-7013890438520559398')!;
    expect(first.question).toBe('Who has the highest goals in world football?');
    expect(first.qaPairs.map((q) => q.shortAnswers)).toEqual([['Daei', 'Ali Daei'], ['Bican', 'Josef Bican'], ['Sinclair', 'Christine Sinclair']]);
    // "No context provided" is not a context; real contexts are kept.
    expect(first.qaPairs[0].context).toBeUndefined();
    expect(first.qaPairs[2].context).toMatch(/Elisabetta Vignotto/);
    expect(first.passages.length).toBeGreaterThan(0);
  });
  it('ASQA dev as disambiguated questions: every answerable DQ, ids tied to their AQ', () => {
    const aqs = loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json'));
    const dqs = loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json'), { questions: 'disambiguated' });
    const answerable = aqs.reduce((n, e) => n + e.qaPairs.filter((p) => p.shortAnswers.length > 0).length, 0);
    expect(dqs).toHaveLength(answerable);
    const byId = new Map(aqs.map((e) => [e.id, e]));
    for (const dq of dqs) {
      const aq = byId.get(dq.sourceId!)!;
      expect(aq.qaPairs.map((p) => p.question)).toContain(dq.question);
      expect(dq.qaPairs).toHaveLength(1);
    }
    const mixed = loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json'), { questions: 'mixed' });
    expect(mixed).toHaveLength(aqs.length + aqs.filter((e) => e.qaPairs.some((p) => p.shortAnswers.length > 0)).length);
  });

  it('AmbigNQ dev_light: 2,002 questions; multipleQAs give qaPairs and every answer counts', () => {
    const ex = loadDataset('ambignq', sharedDataPath('ambignq', 'dev_light.json'));
    expect(ex).toHaveLength(2002);
    const multi = ex.find((e) => e.id === '8630912480840635425')!;
    expect(multi.qaPairs).toHaveLength(3);
    expect(multi.answers).toContain('old stadium');
    expect(multi.answers).toContain('mediocrity of the Cardinals,a then-21-year-old stadium,game attendance to dwindle');
    expect(multi.meta?.annotations).toHaveLength(2);
  });
  it('SituatedQA: one example per line, 64-bit ids kept exact and made unique', () => {
    const temp = loadDataset('situatedqa', sharedDataPath('situatedqa', 'temp.dev.jsonl'));
    expect(temp).toHaveLength(3423);
    expect(new Set(temp.map((e) => e.id)).size).toBe(3423);
    expect(temp[0].id).toBe('-7924170207595297549@2021');
    expect(temp[0].question).toBe('when did england last get to the semi final of a world cup as of 2021');
    expect(temp[0].meta).toMatchObject({ sourceId: '-7924170207595297549', date: '2021', dateType: 'sampled_year' });
    expect(temp.some((e) => e.id.includes('#2'))).toBe(true);
    const geo = loadDataset('situatedqa', sharedDataPath('situatedqa', 'geo.test.jsonl'));
    expect(geo).toHaveLength(506);
    expect(new Set(geo.map((e) => e.meta?.sourceId)).size).toBe(129);
  });
  it('adversarial HotpotQA: 308 dev and 30 train questions with four paragraphs and a rationale', () => {
    const dev = loadDataset('hotpotqa-adversarial', sharedDataPath('hotpotqa-adversarial', 'sim_dev.json'));
    expect(dev).toHaveLength(308);
    expect(dev.every((e) => e.passages.length === 4)).toBe(true);
    expect(dev[0].answers).toEqual(['Sochi, Russia']);
    expect(dev[0].passages.filter((p) => p.supporting).map((p) => p.title)).toEqual(['Ukraine at the 2014 Winter Olympics', 'Oksana Baiul']);
    expect(dev[0].rationale).toMatch(/^Ukraine competed/);
    expect(loadDataset('hotpotqa-adversarial', sharedDataPath('hotpotqa-adversarial', 'sim_train.json'))).toHaveLength(30);
  });
  it('FEVER: the 1,000 sampled claims by default, 9,999 with split "all", the demo file whole', () => {
    const path = sharedDataPath('fever', 'paper_test_processed.jsonl');
    const sampled = loadDataset('fever', path);
    expect(sampled).toHaveLength(1000);
    expect(loadDataset('fever', path, { split: 'sampled' })).toHaveLength(1000);
    const all = loadDataset('fever', path, { split: 'all' });
    expect(all).toHaveLength(9999);
    const first = all[0];
    expect(first).toMatchObject({ id: '91721', question: 'Australia is one of the ABC Islands.', label: 'REFUTES' });
    expect(first.passages[0].title).toBe('ABC islands (Lesser Antilles)');
    // train_subset.jsonl sits beside sampled_ids.json but the list is not its own: loaded whole.
    expect(loadDataset('fever', sharedDataPath('fever', 'train_subset.jsonl')).length).toBeGreaterThan(0);
  });
  it('qa-feedback: 500 ASQA train questions with passages, also readable as asqa demos', () => {
    const ex = loadQaFeedback(sharedDataPath('qa-feedback', 'dev.json'));
    expect(ex).toHaveLength(500);
    expect(ex[0]).toMatchObject({ id: 'qa-feedback-0', dataset: 'asqa', question: "When does the new bunk'd come out?", qaPairs: [] });
    expect(ex[0].passages[0].title).toBe("Why Don't We");
    expect(loadDataset('asqa', sharedDataPath('qa-feedback', 'dev.json'))).toHaveLength(500);
  });
  it('detects each format', () => {
    expect(detectDataset(sharedDataPath('asqa', 'ASQA_dev.json'))).toBe('asqa');
    expect(detectDataset(sharedDataPath('ambignq', 'dev_light.json'))).toBe('ambignq');
    expect(detectDataset(sharedDataPath('situatedqa', 'geo.dev.jsonl'))).toBe('situatedqa');
    expect(detectDataset(sharedDataPath('hotpotqa-adversarial', 'sim_dev.json'))).toBe('hotpotqa-adversarial');
    expect(detectDataset(sharedDataPath('fever', 'paper_test_processed.jsonl'))).toBe('fever');
    expect(detectDataset(sharedDataPath('fever', 'sampled_ids.json'))).toBe('fever-ids');
    expect(detectDataset(sharedDataPath('qa-feedback', 'dev.json'))).toBe('qa-feedback');
    expect(detectDataset(sharedDataPath('hotpotqa', 'dev_v1_simplified.json'))).toBe('hotpotqa');
  });
  it('says what a file looks like when it is given as another dataset', () => {
    expect(() => loadDataset('asqa', sharedDataPath('ambignq', 'dev_light.json'))).toThrow(/does not look like ASQA.*looks like AmbigNQ/s);
  });
});

describe('options and bad input', () => {
  it('splits, ids, seeded samples (in file order) and limits', () => {
    const dir = tmp();
    const entries = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`id${i}`, asqaEntry(`q${i}?`, [[`dq${i}`, [`a${i}`]]])]));
    const path = write(dir, 'asqa.json', JSON.stringify({ train: { t1: asqaEntry('t?', [['d', ['x']]]) }, dev: entries }));
    expect(loadDataset('asqa', path)).toHaveLength(10);
    expect(loadDataset('asqa', path, { split: 'train' }).map((e) => e.id)).toEqual(['t1']);
    expect(() => loadDataset('asqa', path, { split: 'test' })).toThrow(/no split "test" \(the file has "train", "dev"\)/);
    const s1 = loadDataset('asqa', path, { sample: 4, seed: 7 }).map((e) => e.id);
    expect(s1).toHaveLength(4);
    expect(loadDataset('asqa', path, { sample: 4, seed: 7 }).map((e) => e.id)).toEqual(s1);
    expect([...s1].sort((a, b) => Number(a.slice(2)) - Number(b.slice(2)))).toEqual(s1);
    expect(loadDataset('asqa', path, { limit: 3 }).map((e) => e.id)).toEqual(['id0', 'id1', 'id2']);
    expect(loadDataset('asqa', path, { ids: ['id5', 'id2'] }).map((e) => e.id)).toEqual(['id2', 'id5']);
    expect(() => loadDataset('asqa', path, { limit: 0 })).toThrow(/limit=0 must be a positive integer/);
    expect(sampleIndices(5, 9, 1)).toEqual([0, 1, 2, 3, 4]);
  });
  it('ASQA questions: ambiguous (default), disambiguated (each answerable DQ) or mixed (AQ then its first DQ)', () => {
    const dir = tmp();
    const withContext = asqaEntry('Who won?', [
      ['Who won in 2018?', ['France']],
      ['Who won in 1999?', []],
      ['Who won in 2014?', ['Germany', 'FRG']],
    ]);
    withContext.qa_pairs[2].context = 'Germany beat Argentina in 2014.';
    (withContext.qa_pairs[2] as { wikipage: string | null }).wikipage = 'World Cup 2014';
    const path = write(dir, 'asqa.json', JSON.stringify({ dev: { w: withContext, e: asqaEntry('When built?', [['When was it built?', ['1889']]]) } }));

    expect(loadDataset('asqa', path).map((e) => e.id)).toEqual(['w', 'e']);
    expect(loadDataset('asqa', path, { questions: 'ambiguous' }).map((e) => e.id)).toEqual(['w', 'e']);

    const dqs = loadDataset('asqa', path, { questions: 'disambiguated' });
    // The unanswerable DQ (no short answers) is skipped; k counts the file's pairs, so ids are stable.
    expect(dqs.map((e) => e.id)).toEqual(['w.dq1', 'w.dq3', 'e.dq1']);
    expect(dqs[1]).toEqual({
      id: 'w.dq3',
      dataset: 'asqa',
      question: 'Who won in 2014?',
      answers: ['Germany', 'FRG'],
      qaPairs: [{ question: 'Who won in 2014?', shortAnswers: ['Germany', 'FRG'], context: 'Germany beat Argentina in 2014.', wikipage: 'World Cup 2014' }],
      longAnswers: [],
      passages: [{ title: 'World Cup 2014', text: 'Germany beat Argentina in 2014.' }],
      sourceId: 'w',
      meta: { ambiguousQuestion: 'Who won?' },
    });
    expect(dqs[0].passages).toEqual([]); // "No context provided" is no passage

    const mixed = loadDataset('asqa', path, { questions: 'mixed' });
    expect(mixed.map((e) => [e.id, e.sourceId])).toEqual([
      ['w', undefined],
      ['w.dq1', 'w'],
      ['e', undefined],
      ['e.dq1', 'e'],
    ]);
    // Sampling and limits apply to the chosen questions.
    expect(loadDataset('asqa', path, { questions: 'mixed', limit: 3 })).toHaveLength(3);
  });

  it('says when the questions option does not apply', () => {
    const dir = tmp();
    const noDqs = write(dir, 'a.json', JSON.stringify({ dev: { x: asqaEntry('q?', [['d?', []]]) } }));
    expect(() => loadDataset('asqa', noDqs, { questions: 'disambiguated' })).toThrow(/questions "disambiguated" needs disambiguated questions with short answers \(qa_pairs\), and this file has none/);
    const ambignq = write(dir, 'ambig.json', JSON.stringify([{ id: '1', question: 'q?', annotations: [{ type: 'singleAnswer', answer: ['a'] }] }]));
    expect(() => loadDataset('ambignq', ambignq, { questions: 'mixed' })).toThrow(/questions=mixed applies to dataset asqa only, not ambignq/);
    expect(() => loadDataset('asqa', noDqs, { questions: 'some' as never })).toThrow(/questions=some is not one of ambiguous, disambiguated, mixed/);
  });

  it('accepts a question with no qa_pairs (the metrics report it)', () => {
    const path = write(tmp(), 'a.json', JSON.stringify({ dev: { x: asqaEntry('q?', []) } }));
    expect(loadDataset('asqa', path)[0].qaPairs).toEqual([]);
  });
  it('names the record and the field of an invalid ASQA question', () => {
    const bad = { dev: { good: asqaEntry('q?', [['d', ['a']]]), broken: { ambiguous_question: 'q?', qa_pairs: [{ question: 'd', short_answers: 'a' }] } } };
    const path = write(tmp(), 'bad.json', JSON.stringify(bad));
    expect(() => loadDataset('asqa', path)).toThrow(/question "broken": qa_pairs\[0\]\.short_answers/);
  });
  it('gives the line number of a malformed JSONL line', () => {
    const line = (o: object) => JSON.stringify(o);
    const ok = { id: 1, question: 'q', edited_question: 'q as of 2020', date: '2020', date_type: 'sampled_year', answer: ['a'], any_answer: ['a'] };
    const path = write(tmp(), 'temp.dev.jsonl', [line(ok), '', line({ ...ok, id: 2 }), '{"id": 3, "question": ', line({ ...ok, id: 4 })].join('\n'));
    expect(() => loadDataset('situatedqa', path)).toThrow(/line 4: not valid JSON/);
  });
  it('gives line and column of a JSON syntax error', () => {
    const path = write(tmp(), 'x.json', '{"dev": {\n  "a": {,}\n}}');
    expect(() => loadDataset('asqa', path)).toThrow(/not valid JSON.*line 2, column \d+/);
  });
  it('reports empty and missing files clearly', () => {
    const dir = tmp();
    expect(() => loadDataset('asqa', write(dir, 'empty.json', ''))).toThrow(/is empty/);
    expect(() => loadDataset('asqa', join(dir, 'nope.json'))).toThrow(/does not exist/);
    expect(() => loadDataset('asqa', dir)).toThrow(/is a folder/);
  });
  it('rejects an unknown FEVER label with its line', () => {
    const path = write(tmp(), 'f.jsonl', `${JSON.stringify({ id: 5, question: 'c', label: 'MAYBE' })}\n`);
    expect(() => loadDataset('fever', path, { split: 'all' })).toThrow(/line 1: label/);
  });
  it('keeps integers beyond 2^53 exact and leaves strings and floats alone', () => {
    expect(JSON.parse(quoteLargeIntegers('{"id": -7924170207595297549, "x": 1.5e300, "s": "12345678901234567890", "n": 42}'))).toEqual({
      id: '-7924170207595297549',
      x: 1.5e300,
      s: '12345678901234567890',
      n: 42,
    });
  });
});
