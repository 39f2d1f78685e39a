import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadDataset } from '../../src/datasets';
import { RougeLsum } from '../../src/metrics/rouge';
import {
  PUNKT_FILES,
  PunktSentenceSplitter,
  RuleBasedSentenceSplitter,
  bundledPunktDir,
  defaultPunktDir,
  defaultSentenceSplitter,
  loadPunktParameters,
} from '../../src/metrics/sentences';
import { hasSharedData, sharedDataPath } from '../helpers/data';

// Expected splits are what nltk 3.8.1's PunktSentenceTokenizer gives with the English parameters
// (checked once during development; Python is not needed here). Some are surprising and are kept
// on purpose because they are the reference's behaviour, e.g. "No. 1" and lower-cased numbers.
describe('Punkt with the English parameters (shipped in src/metrics/punkt/english)', () => {
  const punkt = new PunktSentenceSplitter(loadPunktParameters(bundledPunktDir()));
  const split = (t: string) => punkt.split(t);
  it('does not break after known abbreviations (Dr., Mr., Mrs., St., Jan., p.m.)', () => {
    expect(split('Dr. Smith went to Washington. He arrived on Monday.')).toEqual(['Dr. Smith went to Washington.', 'He arrived on Monday.']);
    expect(split('Mr. and Mrs. Jones live on Elm St. in Springfield. They have two children.')).toEqual([
      'Mr. and Mrs. Jones live on Elm St. in Springfield.',
      'They have two children.',
    ]);
    expect(split('The event is held at 5 p.m. every day. Tickets are free.')).toEqual(['The event is held at 5 p.m. every day.', 'Tickets are free.']);
  });
  it('keeps U.S. and D.C. inside the sentence', () => {
    expect(split('The U.S. Army was founded in 1775. It is the oldest branch.')).toEqual(['The U.S. Army was founded in 1775.', 'It is the oldest branch.']);
    expect(split('Washington, D.C. is the capital. It was founded in 1790.')).toEqual(['Washington, D.C. is the capital.', 'It was founded in 1790.']);
  });
  it('keeps initials with the name (J. R. R. Tolkien, John F. Kennedy)', () => {
    expect(split('J. R. R. Tolkien wrote The Hobbit. It was published in 1937.')).toEqual(['J. R. R. Tolkien wrote The Hobbit.', 'It was published in 1937.']);
    expect(split('The book was written by John F. Kennedy. It won a prize.')).toEqual(['The book was written by John F. Kennedy.', 'It won a prize.']);
  });
  it('handles numbers: decimals stay whole; "No." is not an English-model abbreviation', () => {
    expect(split('The film earned $1.5 million. It opened on Jan. 5, 1990.')).toEqual(['The film earned $1.5 million.', 'It opened on Jan. 5, 1990.']);
    expect(split('He was ranked No. 1 in the world. Then he retired.')).toEqual(['He was ranked No.', '1 in the world.', 'Then he retired.']);
  });
  it('on lower-cased text a number before a lower-case word is not a break (why lower-casing first matters)', () => {
    expect(split('the u.s. army was founded in 1775. it is the oldest branch.')).toEqual(['the u.s. army was founded in 1775. it is the oldest branch.']);
    expect(split('dr. smith went to washington. he arrived on monday.')).toEqual(['dr. smith went to washington.', 'he arrived on monday.']);
  });
  it('moves closing quotes and brackets onto the sentence they close; ? and ! end sentences', () => {
    expect(split('The answer depends on the meaning. (It could be the 1990 film.) "Or the 2001 remake." Both are good.')).toEqual([
      'The answer depends on the meaning.',
      '(It could be the 1990 film.)',
      '"Or the 2001 remake."',
      'Both are good.',
    ]);
    expect(split('What is it? Nobody knows! Maybe a bird.')).toEqual(['What is it?', 'Nobody knows!', 'Maybe a bird.']);
  });
  it('treats curly quotes as closers only in NLTK 3.10 mode', () => {
    const modern = new PunktSentenceSplitter(loadPunktParameters(bundledPunktDir()), { unicodeQuotes: true });
    const text = '“He left.” Then we ate.';
    expect(modern.split(text)).toEqual(['“He left.”', 'Then we ate.']);
    // NLTK 3.8: "left.”" is one word token that does not end in a period, so there is no break.
    expect(split(text)).toEqual([text]);
  });

  // Sentence offsets of 200 real ASQA long answers (original and lower-cased) from nltk 3.8.1,
  // stored in fixtures/asqa-oracle.json as code-point offsets.
  it.skipIf(!hasSharedData('asqa', 'ASQA_dev.json'))('reproduces NLTK on 200 ASQA long answers, original and lower-cased', () => {
    const oracle = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'asqa-oracle.json'), 'utf8')) as {
      punkt: Array<{ id: string; annotation: number; spans: number[][]; spans_lower: number[][] }>;
    };
    const byId = new Map(loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json')).map((e) => [e.id, e]));
    const codePoints = (text: string, spans: Array<[number, number]>) => spans.map(([s, e]) => [Array.from(text.slice(0, s)).length, Array.from(text.slice(0, e)).length]);
    expect(oracle.punkt).toHaveLength(200);
    for (const c of oracle.punkt) {
      const text = byId.get(c.id)!.longAnswers[c.annotation];
      expect(codePoints(text, punkt.spans(text)), `${c.id}/${c.annotation}`).toEqual(c.spans);
      const lower = text.toLowerCase();
      expect(codePoints(lower, punkt.spans(lower)), `${c.id}/${c.annotation} lower`).toEqual(c.spans_lower);
    }
  });
});

describe('the Punkt parameters ship with the project', () => {
  const saved = { data: process.env.AMBIQA_DATA_DIR, punkt: process.env.AMBIQA_PUNKT_DIR };
  afterEach(() => {
    for (const [key, value] of [['AMBIQA_DATA_DIR', saved.data], ['AMBIQA_PUNKT_DIR', saved.punkt]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    vi.restoreAllMocks();
  });

  it('are the files whose provenance and checksums src/metrics/punkt/README.md states', () => {
    const readme = readFileSync(join(bundledPunktDir(), '..', 'README.md'), 'utf8');
    expect(readme).toMatch(/Apache License, Version 2\.0/);
    expect(readme).toMatch(/NLTK/);
    for (const f of PUNKT_FILES) {
      const sha = createHash('sha256').update(readFileSync(join(bundledPunktDir(), f))).digest('hex');
      expect(readme, f).toContain(`${sha}  english/${f}`);
    }
  });

  it('make ROUGE-Lsum use Punkt (the reference) with an empty data dir, and print no fallback notice', () => {
    process.env.AMBIQA_DATA_DIR = mkdtempSync(join(tmpdir(), 'ambiqa-nodata-'));
    delete process.env.AMBIQA_PUNKT_DIR;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    expect(defaultPunktDir()).toBe(bundledPunktDir());
    const splitter = defaultSentenceSplitter();
    expect(splitter).toBeInstanceOf(PunktSentenceSplitter);
    expect(splitter.name).toBe('punkt-english (nltk 3.8)');
    // "Dr." is a Punkt abbreviation: two sentences, where splitting at every period makes three.
    expect(splitter.split('Dr. Smith went to Washington. He arrived on Monday.')).toHaveLength(2);
    const score = RougeLsum({ output: 'Dr. Smith went to Washington.', expected: ['Dr. Smith went to Washington. He arrived.'] });
    expect(score.metadata).toEqual({ sentence_splitter: 'punkt-english (nltk 3.8)' });
    expect(warn).not.toHaveBeenCalled();
  });

  it('AMBIQA_PUNKT_DIR points the default at another copy', () => {
    process.env.AMBIQA_PUNKT_DIR = join(tmpdir(), 'elsewhere-punkt');
    expect(defaultPunktDir()).toBe(join(tmpdir(), 'elsewhere-punkt'));
  });
});

describe('fallback when the Punkt parameters are absent', () => {
  it('uses the documented rule-based splitter and says so in its name', () => {
    const empty = mkdtempSync(join(tmpdir(), 'ambiqa-nopunkt-'));
    const splitter = defaultSentenceSplitter(empty);
    expect(splitter).toBeInstanceOf(RuleBasedSentenceSplitter);
    expect(splitter.name).toMatch(/^rule-based/);
    expect(splitter.name).toContain(empty);
  });
  it('splits after . ? ! before whitespace, but not after initials, listed abbreviations or "5. march"', () => {
    const r = new RuleBasedSentenceSplitter();
    expect(r.split('Dr. Smith met J. Bach in the U.S. today. Really? Yes! He was born on 3. march 1990. "Done." Next.')).toEqual([
      'Dr. Smith met J. Bach in the U.S. today.',
      'Really?',
      'Yes!',
      'He was born on 3. march 1990.',
      '"Done."',
      'Next.',
    ]);
  });
  it('names a missing parameter file when loading explicitly', () => {
    expect(() => loadPunktParameters(join(tmpdir(), 'no-such-punkt-dir'))).toThrow(/abbrev_types\.txt not found/);
  });
});
