import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { corpusFromPassages, loadCorpus, passageId, saveCorpus, windowText } from '../../src/retrieval/corpus';
import {
  buildCorpus,
  defaultSources,
  feverTitle,
  readAsqa,
  readFever,
  readHotpotAdversarial,
  readQaFeedback,
} from '../../src/retrieval/corpus-builder';
import { formatPassage } from '../../src/retrieval/types';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-corpus-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, content: string) => {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
};
const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');

describe('windowText', () => {
  it('keeps texts up to 1.5x the target whole', () => {
    expect(windowText(words(150))).toHaveLength(1);
    expect(windowText('  a   b\n c ')).toEqual(['a b c']);
    expect(windowText('   ')).toEqual([]);
  });
  it('cuts longer texts into near-equal windows of about 100 words, losing no word', () => {
    const windows = windowText(words(420));
    expect(windows).toHaveLength(4);
    expect(windows.map((w) => w.split(' ').length)).toEqual([105, 105, 105, 105]);
    expect(windows.join(' ')).toBe(words(420));
  });
});

describe('passage ids', () => {
  it('depend on source and content only', () => {
    expect(passageId('asqa', 'T', undefined, 'x')).toBe(passageId('asqa', 'T', undefined, 'x'));
    expect(passageId('asqa', 'T', undefined, 'x')).not.toBe(passageId('fever', 'T', undefined, 'x'));
    expect(passageId('asqa', 'T', undefined, 'x')).not.toBe(passageId('asqa', 'T', undefined, 'y'));
    expect(passageId('asqa', 'T', undefined, 'x')).toMatch(/^asqa:[0-9a-f]{16}$/);
  });
});

describe('source readers', () => {
  it('ASQA: contexts titled by wikipage and knowledge snippets; "No context provided" skipped', () => {
    const path = file(
      'asqa.json',
      JSON.stringify({
        dev: {
          q1: {
            ambiguous_question: 'Who?',
            wikipages: [{ title: 'Page A' }],
            qa_pairs: [
              { question: 'a', short_answers: ['x'], context: 'No context provided', wikipage: null },
              { question: 'b', short_answers: ['y'], context: 'Context about B.', wikipage: 'Page B' },
            ],
            annotations: [{ long_answer: '', knowledge: [{ content: 'Knowledge C.', wikipage: 'Page C' }, { content: 'No page.', wikipage: null }] }],
          },
        },
      }),
    );
    expect(readAsqa(path).map((d) => [d.title, d.text])).toEqual([
      ['Page B', 'Context about B.'],
      ['Page C', 'Knowledge C.'],
      ['Page A', 'No page.'],
    ]);
  });

  it('qa-feedback: splits "wikipage: … text: …" passages and drops the title echo', () => {
    const text = 'question: Q? context: wikipage: Law &amp; Order text: Law & Order\n\nBody one. | wikipage: Other text: Other\n\nBody two.';
    const path = file('qaf.json', JSON.stringify([{ text, answer: '', passages: '', question: 'Q?' }]));
    expect(readQaFeedback(path).map((d) => [d.title, d.text])).toEqual([
      ['Law & Order', 'Body one.'],
      ['Other', 'Body two.'],
    ]);
  });

  it('adversarial HotpotQA: every paragraph, adversarial ones titled "added"', () => {
    const path = file('hp.json', JSON.stringify([{ paragraphs: [{ title: 'added', context: 'Fake.' }, { title: 'Real', context: 'True.' }] }]));
    expect(readHotpotAdversarial(path).map((d) => d.title)).toEqual(['added', 'Real']);
  });

  it('FEVER: evidence sentences grouped by page in line order, PTB brackets undone', () => {
    const rows = [
      { id: 1, evidence: [[[0, 0, 'Psych_-LRB-season_2-RRB-', 3]]], pars: ['Third line -LRB-x-RRB- .'] },
      { id: 2, evidence: [[[0, 0, 'Psych_-LRB-season_2-RRB-', 0]], [[0, 0, 'Other', 1]]], pars: ['First line .', 'Other line .'] },
      { id: 3, evidence: [[[0, null, null, null]]], pars: [] },
    ];
    const path = file('fever.jsonl', rows.map((r) => JSON.stringify(r)).join('\n'));
    expect(readFever(path).map((d) => [d.title, d.text])).toEqual([
      ['Psych (season 2)', 'First line . Third line (x) .'],
      ['Other', 'Other line .'],
    ]);
    expect(feverTitle('ABC_islands_-LRB-Lesser_Antilles-RRB-')).toBe('ABC islands (Lesser Antilles)');
  });

  it('names the file when a source is not in its format', () => {
    const path = file('bad-hp.json', JSON.stringify({ not: 'a list' }));
    expect(() => readHotpotAdversarial(path)).toThrow(new RegExp(`${path}: not in the adversarial HotpotQA layout`));
  });
});

describe('buildCorpus', () => {
  it('windows, de-duplicates across sources and keeps ids stable between builds', () => {
    const user = file(
      'user.jsonl',
      [
        JSON.stringify({ title: 'Dup', text: 'Same text.' }),
        JSON.stringify({ title: 'Dup', text: 'Same   text.' }),
        JSON.stringify({ id: 'long', title: 'Long', section: 'History', text: words(300) }),
      ].join('\n'),
    );
    const a = buildCorpus([{ kind: 'jsonl', path: user }]);
    expect(a.passages.map((p) => p.id)).toEqual([a.passages[0].id, 'long#0', 'long#1', 'long#2']);
    expect(a.stats[0]).toMatchObject({ documents: 3, passages: 4, duplicates: 1 });
    expect(formatPassage(a.passages[1])).toBe(`Long | History; ${words(300).split(' ').slice(0, 100).join(' ')}`);
    const b = buildCorpus([{ kind: 'jsonl', path: user }]);
    expect(b.passages.map((p) => p.id)).toEqual(a.passages.map((p) => p.id));
  });

  it('pools the shared evaluation data into thousands of passages', () => {
    if (!hasSharedData('asqa', 'ASQA_dev.json')) return;
    const built = buildCorpus(defaultSources());
    const kinds = new Set(built.stats.map((s) => s.kind));
    expect(kinds).toEqual(new Set(['asqa', 'qa-feedback', 'hotpotqa-adversarial', 'fever']));
    expect(built.passages.length).toBeGreaterThan(5000);
    expect(new Set(built.passages.map((p) => p.id)).size).toBe(built.passages.length);
    for (const p of built.passages) expect(p.text.split(' ').length).toBeLessThanOrEqual(150);
    // An ASQA gold context is in the pool, under its page title.
    const asqa = JSON.parse(readFileSync(sharedDataPath('asqa', 'ASQA_dev.json'), 'utf8')).dev;
    const pair = Object.values<any>(asqa)
      .flatMap((ex) => ex.qa_pairs)
      .find((qa: any) => qa.wikipage && qa.context && qa.context !== 'No context provided' && qa.context.split(/\s+/).length < 140);
    expect(built.passages.some((p) => p.title === pair.wikipage.trim() && p.text === pair.context.replace(/\s+/g, ' ').trim())).toBe(true);
  });
});

describe('corpus files', () => {
  it('round-trips through save and load with the same hash', () => {
    const passages = [
      { id: 'a', title: 'A', text: 'alpha', source: 'user' },
      { id: 'b', title: 'B', section: 'S', text: 'beta' },
    ];
    const path = join(tmp, 'rt.jsonl');
    const saved = saveCorpus(path, passages);
    const loaded = loadCorpus(path);
    expect(loaded.passages).toEqual(passages);
    expect(loaded.hash).toBe(saved.hash);
    expect(loaded.hash).toBe(corpusFromPassages(passages).hash);
    expect(loaded.byId('b')?.section).toBe('S');
  });

  it('gives a user passage without id a content-derived one', () => {
    const path = file('noid.jsonl', `${JSON.stringify({ title: 'T', text: 'x' })}\n`);
    expect(loadCorpus(path).passages[0].id).toBe(passageId('user', 'T', undefined, 'x'));
  });

  it('names the file and line of a passage without text', () => {
    const path = file('notext.jsonl', `${JSON.stringify({ title: 'ok', text: 'fine' })}\n${JSON.stringify({ title: 'no text here' })}\n`);
    expect(() => loadCorpus(path)).toThrow(`${path}:2: passage has no "text"`);
    const blank = file('blank.jsonl', `${JSON.stringify({ title: 'x', text: '   ' })}\n`);
    expect(() => loadCorpus(blank)).toThrow(`${blank}:1: passage has no "text"`);
  });

  it('names the file and line of invalid JSON and of a duplicate id', () => {
    const bad = file('bad.jsonl', `${JSON.stringify({ text: 'a' })}\n{oops\n`);
    expect(() => loadCorpus(bad)).toThrow(`${bad}:2: not valid JSON`);
    const dup = file('dup.jsonl', `${JSON.stringify({ id: 'x', text: 'a' })}\n\n${JSON.stringify({ id: 'x', text: 'b' })}\n`);
    expect(() => loadCorpus(dup)).toThrow(`${dup}:3: passage id x already used on line 1`);
  });

  it('rejects an empty corpus, naming the file', () => {
    const empty = file('empty.jsonl', '\n\n');
    expect(() => loadCorpus(empty)).toThrow(`corpus file ${empty} has no passages`);
    expect(() => corpusFromPassages([])).toThrow('the corpus has no passages');
    expect(() => loadCorpus(join(tmp, 'missing.jsonl'))).toThrow(/does not exist/);
  });
});
