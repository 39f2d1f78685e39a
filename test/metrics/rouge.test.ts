import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets';
import { RougeL, RougeLsum, lcsIndices, lsumSentences, maxFOverReferences, rougeL, rougeLsum, rougeTokenize, summaryLevelLcs, unionLcs } from '../../src/metrics/rouge';
import { PunktSentenceSplitter, bundledPunktDir, loadPunktParameters, type SentenceSplitter } from '../../src/metrics/sentences';
import { hasSharedData, sharedDataPath } from '../helpers/data';

/** Splits on newlines only: lets the hand-worked cases give their sentences explicitly. */
const byLine: SentenceSplitter = { name: 'lines', split: (t) => t.split('\n') };
const toks = (s: string): string[] => s.split(' ');

describe('rouge_score tokenizer', () => {
  it('lower-cases, turns non-[a-z0-9] runs into spaces, stems tokens longer than 3 characters', () => {
    expect(rougeTokenize("The Runner's 2nd-place finish, in São Paulo!")).toEqual(['the', 'runner', 's', '2nd', 'place', 'finish', 'in', 's', 'o', 'paulo']);
    expect(rougeTokenize('Generously running dogs', false)).toEqual(['generously', 'running', 'dogs']);
    expect(rougeTokenize('generously running dogs')).toEqual(['gener', 'run', 'dog']);
    // Three-letter words are never stemmed ("was" would become "wa").
    expect(rougeTokenize('was ran')).toEqual(['was', 'ran']);
  });
});

describe('ROUGE-L, values computed by hand', () => {
  it('"the cat sat on the mat" vs "the cat lay on the mat": LCS 5 of 6 → P = R = F = 5/6', () => {
    const s = rougeL('the cat sat on the mat', 'the cat lay on the mat');
    expect(s.precision).toBeCloseTo(5 / 6, 12);
    expect(s.recall).toBeCloseTo(5 / 6, 12);
    expect(s.fmeasure).toBeCloseTo(5 / 6, 12);
  });
  it('stemming makes "runs" match "running": [run dog were run] vs [the dog run] → LCS 2, F = 4/7', () => {
    const s = rougeL('Running dogs were running', 'the dog runs');
    expect(s.precision).toBeCloseTo(2 / 3, 12);
    expect(s.recall).toBeCloseTo(1 / 2, 12);
    expect(s.fmeasure).toBeCloseTo(4 / 7, 12);
  });
  it('is 0 when either side has no tokens', () => {
    expect(rougeL('', 'something').fmeasure).toBe(0);
    expect(rougeL('...', 'something').fmeasure).toBe(0);
  });
  it('takes the best reference (score_multi)', () => {
    expect(maxFOverReferences(['zebra', 'the cat sat on the mat'], 'the cat lay on the mat', rougeL)).toBeCloseTo(5 / 6, 12);
    expect(RougeL({ output: 'x', expected: [] }).score).toBeNull();
  });
});

describe('summary-level union LCS (ROUGE-Lsum)', () => {
  it('unites the LCS of a reference sentence with each prediction sentence (Lin 2004 example)', () => {
    // r = w1..w5; c1 = w1 w2 w6 w7 w8 → LCS w1 w2; c2 = w1 w3 w8 w9 w5 → LCS w1 w3 w5.
    // Union {w1 w2 w3 w5} = 4 hits; |r| = 5, |c| = 10 → R = 0.8, P = 0.4, F = 0.64/1.2.
    expect(unionLcs(toks('w1 w2 w3 w4 w5'), [toks('w1 w2 w6 w7 w8'), toks('w1 w3 w8 w9 w5')])).toEqual(toks('w1 w2 w3 w5'));
    const s = rougeLsum('w1 w2 w3 w4 w5', 'w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5', byLine);
    expect(s.recall).toBeCloseTo(0.8, 12);
    expect(s.precision).toBeCloseTo(0.4, 12);
    expect(s.fmeasure).toBeCloseTo(0.64 / 1.2, 12);
  });
  it('never counts a prediction token twice (ROUGE 1.5.5 anti-double-counting)', () => {
    // Both reference sentences "a1 b1" match the single prediction sentence "a1 b1", but the
    // prediction has one a1 and one b1: hits = 2, not 4. P = 2/2, R = 2/4, F = 2/3.
    const s = summaryLevelLcs([toks('a1 b1'), toks('a1 b1')], [toks('a1 b1')]);
    expect(s.precision).toBe(1);
    expect(s.recall).toBe(0.5);
    expect(s.fmeasure).toBeCloseTo(2 / 3, 12);
  });
  it('reads out the same LCS as rouge_score on ties, which decides what the union counts', () => {
    // ref [a b] vs cand [b a]: both "a" and "b" are an LCS; rouge_score's backtracking yields "a".
    expect(lcsIndices(toks('a b'), toks('b a'))).toEqual([0]);
    // So with a second reference sentence "a", the lone "a" of the prediction is used up by the
    // first sentence: hits = 1 → P = 1/2, R = 1/3, F = 0.4 (rouge_score gives 0.4 too; plain
    // ROUGE-L on the same texts gives 0.8).
    expect(rougeLsum('a b\na', 'b a', byLine).fmeasure).toBeCloseTo(0.4, 12);
    expect(rougeL('a b a', 'b a').fmeasure).toBeCloseTo(0.8, 12);
  });
  it('is 0 without sentences or tokens', () => {
    expect(summaryLevelLcs([], [toks('a')]).fmeasure).toBe(0);
    expect(summaryLevelLcs([[]], [toks('a')]).fmeasure).toBe(0);
  });
  it('reports the sentence splitter it used', () => {
    expect(RougeLsum({ output: 'a b', expected: ['a b'], splitter: byLine }).metadata).toEqual({ sentence_splitter: 'lines' });
  });
});

// Expected values in fixtures/asqa-oracle.json were produced ONCE during development with Google's
// rouge-score 0.1.2 (use_stemmer=True) and nltk 3.8.1 (Punkt built from data/punkt/english),
// preprocessing as ALCE does ("\n".join(sent_tokenize(text.lower()))); the texts themselves are
// read from the shared ASQA file at test time. Python is not part of this test.
const haveAsqa = hasSharedData('asqa', 'ASQA_dev.json');
describe.skipIf(!haveAsqa)('ROUGE on 100 real ASQA long answers vs rouge_score', () => {
  const oracle = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'asqa-oracle.json'), 'utf8')) as {
    rouge: Array<{ id: string; other: string; rougeLsum: number; rougeL: number }>;
  };
  const byId = haveAsqa ? new Map(loadDataset('asqa', sharedDataPath('asqa', 'ASQA_dev.json')).map((e) => [e.id, e])) : new Map();
  const splitter = new PunktSentenceSplitter(loadPunktParameters(bundledPunktDir()));
  it('matches rouge_score to 1e-12 (prediction = annotation 2, references = annotation 1 and another question’s)', () => {
    expect(oracle.rouge).toHaveLength(100);
    for (const c of oracle.rouge) {
      const refs = [byId.get(c.id)!.longAnswers[0], byId.get(c.other)!.longAnswers[0]];
      const pred = byId.get(c.id)!.longAnswers[1];
      expect(maxFOverReferences(refs, pred, (r, p) => rougeLsum(r, p, splitter)), `rougeLsum ${c.id}`).toBeCloseTo(c.rougeLsum, 12);
      expect(maxFOverReferences(refs, pred, rougeL), `rougeL ${c.id}`).toBeCloseTo(c.rougeL, 12);
    }
  });
  it('splits the lower-cased text and drops empty lines, as ALCE feeds rouge_score', () => {
    expect(lsumSentences('First one. Second one.\n\nThird', splitter)).toEqual(['first one.', 'second one.', 'third']);
  });
});
