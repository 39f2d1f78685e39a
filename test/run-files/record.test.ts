import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets/index';
import { AmbiqaError } from '../../src/errors';
import { runInProcess, scoreRun } from '../../src/experiments/session';
import { useIsolatedSession } from '../helpers/session-env';
import type { ExperimentInput } from '../../src/experiments/config';
import { exampleOfRecord, questionRecord, targetOf } from '../../src/experiments/record';
import type { Example } from '../../src/datasets/types';
import { escapeHtml } from '../../src/plots/export';
import { methodCatalog } from '../../src/pipelines/registry';
import { buildReport, loadRun } from '../../src/report/index';
import { readResults, readRunJson, RUN_FORMAT, scoreValues, type ExampleResult } from '../../src/run-files';

/**
 * Issue 45, point 2: each results row carries its question's target, so a report, `score` and
 * figures read rows, never the dataset file. A `questions: disambiguated` run shows each DQ's gold;
 * a run folder copied where its dataset is not shows its gold too; a format-2 folder from before
 * still reads and reports.
 */
const root = resolve(__dirname, '../..');
const methods = methodCatalog();
const fixture = join(root, 'test/run-files/fixtures/format-2-asqa');
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-record-'));

useIsolatedSession(dir);

/** The report's table row of one question. */
function rowOf(html: string, id: string): string {
  const start = html.indexOf(`<tr id="ex-${escapeHtml(id)}"`);
  expect(start, `row of ${id}`).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</tr>', start));
}

/** What the gold cell shows for a question's interpretations: `• question → answer | answer`. */
const goldLine = (q: { question: string; shortAnswers: string[] }) => `• ${escapeHtml(q.question)} → ${escapeHtml(q.shortAnswers.join(' | '))}`;

describe('a run whose rows carry their target (format 3)', () => {
  // The dataset is a copy that the test removes: nothing after the run may need it.
  const dataPath = join(dir, 'asqa-dqs.json');
  copyFileSync(join(root, 'examples/asqa-mini.json'), dataPath);
  const examples = loadDataset('asqa', dataPath, { questions: 'disambiguated' });
  const config: ExperimentInput = {
    dataset: { name: 'asqa', path: dataPath, questions: 'disambiguated' },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', reply: 'Argentina won it in 1997.', model: 'scripted-record', cache: join(dir, 'llm-cache.sqlite') },
    metrics: ['str_em', 'rougeL'],
    tracking: { enabled: false },
    concurrency: 1,
  };
  let runDir = '';
  let rows: ExampleResult[] = [];

  it('writes rows and metrics.json in format 3, each row with its DQ as its target and its scores with metadata', async () => {
    const done = await runInProcess(config, { name: 'dqs' });
    expect(done.status).toBe('FINISHED');
    runDir = done.dir;
    expect(examples.length).toBeGreaterThan(6);
    const lines = readFileSync(join(runDir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.format)).toEqual(examples.map(() => 3));
    expect(RUN_FORMAT).toBe(3);
    expect((JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')) as { format: number }).format).toBe(3);
    expect(readRunJson(join(runDir, 'metrics.json'), 'metrics')!.n).toBe(examples.length);

    rows = readResults(join(runDir, 'results.jsonl'));
    expect(rows.map((r) => r.id)).toEqual(examples.map((e) => e.id));
    for (const [i, r] of rows.entries()) {
      const e = examples[i]!;
      expect(r.id).toMatch(/\.dq\d+$/);
      expect(r.target).toEqual({ answers: e.answers, qaPairs: e.qaPairs.map((q) => ({ question: q.question, shortAnswers: q.shortAnswers })), longAnswers: e.longAnswers, sourceId: e.sourceId });
      expect(r.target!.qaPairs).toHaveLength(1);
      // STR-EM keeps its per-DQ hits beside the value; ROUGE-L has no reference for a DQ and says so.
      expect(r.scores.str_em!.metadata?.dq_hits).toEqual([r.scores.str_em!.value === 100]);
      expect(r.scores.rougeL).toMatchObject({ value: null, reason: expect.any(String) });
      expect(scoreValues(r)).not.toHaveProperty('rougeL');
    }
    // The reply names Argentina and 1997: the 2022 men's World Cup DQ and the 1997 Titanic DQ are hits.
    const hits = rows.filter((r) => scoreValues(r).str_em === 100).map((r) => r.id);
    expect(hits).toContain('demo-worldcup.dq1');
    expect(hits.length).toBeLessThan(rows.length);
  });

  it('shows each DQ its own gold in the report', () => {
    const report = buildReport(runDir, { methods });
    expect(report.notes.filter((n) => n.startsWith('gold answers not shown'))).toEqual([]);
    for (const e of examples) expect(rowOf(report.html, e.id)).toContain(goldLine(e.qaPairs[0]!));
  });

  it('copied to another machine without the dataset file: the report shows the gold and `score` re-scores from the rows', async () => {
    const copy = join(dir, 'elsewhere', 'dqs');
    cpSync(runDir, copy, { recursive: true });
    rmSync(dataPath);
    const report = buildReport(copy, { methods });
    expect(report.notes.filter((n) => n.startsWith('gold answers not shown'))).toEqual([]);
    for (const e of examples) expect(rowOf(report.html, e.id)).toContain(goldLine(e.qaPairs[0]!));

    const scored = await scoreRun(copy, { metrics: ['str_em', 'str_hit'] });
    expect(scored.perQuestion.size).toBe(rows.length);
    for (const r of rows) {
      expect(scored.perQuestion.get(r.id)!.str_em).toBe(scoreValues(r).str_em);
      expect(scored.perQuestion.get(r.id)!.str_hit).toBe(scoreValues(r).str_em);
    }
  });
});

describe('a format-2 run folder from before (test/run-files/fixtures/format-2-asqa)', () => {
  it('reads: its rows migrate to format 3 with their numbers as scores and no target', () => {
    const run = loadRun(fixture);
    expect(run.results).toHaveLength(6);
    const raw = readFileSync(join(fixture, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; metrics: Record<string, number> });
    for (const [i, r] of run.results.entries()) {
      expect(r.format).toBe(3);
      expect(r.target).toBeUndefined();
      expect(scoreValues(r)).toEqual(raw[i]!.metrics);
    }
    expect(run.metrics!.metrics.rougeL!.n).toBe(6);
    expect(run.traces).toHaveLength(6);
  });

  it('reports, with the gold of its dataset file (the fallback for rows without a target), and re-scores', async () => {
    const report = buildReport(fixture, { methods });
    expect(report.notes.filter((n) => n.startsWith('gold answers not shown'))).toEqual([]);
    const examples = loadDataset('asqa', join(root, 'examples/asqa-mini.json'));
    for (const e of examples) expect(rowOf(report.html, e.id)).toContain(goldLine(e.qaPairs[0]!));

    const scored = await scoreRun(fixture, { metrics: ['str_em', 'rougeL'] });
    for (const r of loadRun(fixture).results) {
      expect(scored.perQuestion.get(r.id)!.str_em).toBe(scoreValues(r).str_em);
      expect(scored.perQuestion.get(r.id)!.rougeL).toBeCloseTo(scoreValues(r).rougeL!, 10);
    }
  });

  it('without its dataset file: reads and reports, and the note says why the gold is missing', () => {
    const copy = join(dir, 'format-2-elsewhere');
    cpSync(fixture, copy, { recursive: true });
    const configPath = join(copy, 'config.yaml');
    writeFileSync(configPath, readFileSync(configPath, 'utf8').replace('path: examples/asqa-mini.json', `path: ${join(dir, 'gone.json')}`));
    const report = buildReport(copy, { methods });
    expect(report.notes).toContain(`gold answers not shown: dataset file ${join(dir, 'gone.json')} not found (pass --data <file>)`);
    expect(report.html).toContain('The answer is 1995 in Paris.');
  });
});

describe('questionRecord: the one function that builds a row', () => {
  const example: Example = {
    id: 'q7',
    dataset: 'hotpotqa-adversarial',
    question: 'Where were the 2014 Winter Olympics held?',
    answers: ['Sochi, Russia'],
    alternativeAnswers: ['Sochi'],
    qaPairs: [],
    longAnswers: [],
    passages: [{ title: 'Sochi', text: 'A long passage the target leaves to the dataset.' }],
  };
  const scores = { em: { value: 0 }, em_alt: { value: 100 }, f1: { value: 66.7, metadata: { best: 'Sochi, Russia' } } };

  it('an answered question: target, output, every score whole, usage from the trace, judgments when there are some', () => {
    const summary = { llmCalls: 2, cacheHits: 0, seconds: 0.5, retrievals: 1, parseFailures: 0 };
    const row = questionRecord(example, 7, { answered: { output: 'Sochi', answer: 'Sochi', trace: { summary } } }, scores, [{ purpose: 've.consistency', p: 0.8, label: true }]);
    expect(row).toEqual({
      format: 3,
      id: 'q7',
      index: 7,
      question: example.question,
      target: { answers: ['Sochi, Russia'], qaPairs: [], longAnswers: [], alternativeAnswers: ['Sochi'] },
      output: 'Sochi',
      answer: 'Sochi',
      scores,
      usage: summary,
      judgments: [{ purpose: 've.consistency', p: 0.8, label: true }],
    });
    // What `score` re-scores from: the example back, without its passages (no metric reads them).
    const { passages: _p, ...gold } = example;
    expect(exampleOfRecord(row, 'hotpotqa-adversarial')).toEqual({ ...gold, passages: [] });
  });

  it('a failed question: its target and scores still, an empty output, no usage, the error', () => {
    const row = questionRecord(example, 3, { error: 'HTTP 500' }, { em: { value: 0 } });
    expect(row).toMatchObject({ format: 3, id: 'q7', index: 3, output: '', error: 'HTTP 500', scores: { em: { value: 0 } }, usage: { llmCalls: 0 } });
    expect(row.target).toEqual(targetOf(example));
    expect(row).not.toHaveProperty('judgments');
    const migrated = { ...row, target: undefined };
    expect(exampleOfRecord(migrated, 'hotpotqa-adversarial')).toBeUndefined();
  });
});

describe('results lines of another format', () => {
  it('a line of a later format is refused, naming the file, the line and the field', () => {
    const path = join(dir, 'later.jsonl');
    writeFileSync(path, JSON.stringify({ format: 4, id: 'q', question: 'q?', output: '', scores: {}, usage: { llmCalls: 0 } }) + '\n');
    expect(() => readResults(path)).toThrow(AmbiqaError);
    expect(() => readResults(path)).toThrow(`${path}: record 1 is not a question result: format: format 4 is not one this version of ambiqa reads (rows of formats 1 to 3)`);
  });

  it('a format-3 line without scores is refused, naming the field', () => {
    const path = join(dir, 'no-scores.jsonl');
    writeFileSync(path, JSON.stringify({ format: 3, id: 'q', question: 'q?', output: '', usage: { llmCalls: 0, cacheHits: 0, seconds: 0, retrievals: 0, parseFailures: 0 } }) + '\n');
    expect(() => readResults(path)).toThrow(`${path}: record 1 is not a question result: scores:`);
  });
});
