import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run as corpusCommand } from '../../src/cli/commands/corpus';
import { run as coverageCommand } from '../../src/cli/commands/coverage';
import { Bm25Retriever } from '../../src/retrieval/bm25';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { measureCoverage, readAsqaCoverageItems } from '../../src/retrieval/coverage';

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-coverage-'));
process.env.AMBIQA_CACHE_DIR ??= join(tmp, 'cache');
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// Two ASQA-layout questions; q2 has one DQ whose answer no passage holds.
const asqa = {
  dev: {
    q1: {
      ambiguous_question: 'Who has the most goals in football?',
      qa_pairs: [
        { question: 'men international', short_answers: ['Ali Daei', 'Daei'], context: 'Ali Daei scored 109 international goals for Iran.', wikipage: 'Ali Daei' },
        { question: 'all-time', short_answers: ['Josef Bican'], context: 'No context provided', wikipage: null },
      ],
      annotations: [{ long_answer: '', knowledge: [{ content: 'Josef Bican scored more than 800 goals in football.', wikipage: 'Josef Bican' }] }],
    },
    q2: {
      ambiguous_question: 'When was the Eiffel Tower built?',
      qa_pairs: [
        { question: 'start', short_answers: ['1887'], context: 'Construction of the Eiffel Tower began in 1887.', wikipage: 'Eiffel Tower' },
        { question: 'architect', short_answers: ['Stephen Sauvestre'], context: 'No context provided', wikipage: null },
      ],
      annotations: [],
    },
  },
};
const asqaPath = join(tmp, 'asqa.json');
writeFileSync(asqaPath, JSON.stringify(asqa));

describe('measureCoverage', () => {
  it('computes AC@k per question and averages, ×100', async () => {
    const items = readAsqaCoverageItems(asqaPath);
    expect(items.map((i) => i.answerSets)).toEqual([[['Ali Daei', 'Daei'], ['Josef Bican']], [['1887'], ['Stephen Sauvestre']]]);
    const corpus = corpusFromPassages([
      { id: 'daei', title: 'Ali Daei', text: 'Ali Daei scored 109 international goals for Iran in football.' },
      { id: 'bican', title: 'Josef Bican', text: 'Josef Bican scored more than 800 goals.' },
      { id: 'eiffel', title: 'Eiffel Tower', text: 'Construction of the Eiffel Tower began in 1887.' },
      { id: 'noise', title: 'Noise', text: 'Unrelated text about rivers.' },
    ]);
    const r = Bm25Retriever.create(corpus, {}, { cache: false });
    const result = await measureCoverage(items, r, [100, 1, 2]);
    expect(result.ks).toEqual([1, 2, 100]);
    // Ranks are checked by hand against the retriever's own output.
    const q1 = (await r.search(items[0].question, 4)).map((h) => h.passage.id);
    const q1Found = (k: number) => [q1.indexOf('daei'), q1.indexOf('bican')].filter((i) => i >= 0 && i < k).length / 2;
    const q2 = (await r.search(items[1].question, 4)).map((h) => h.passage.id);
    const q2Found = (k: number) => (q2.indexOf('eiffel') >= 0 && q2.indexOf('eiffel') < k ? 0.5 : 0);
    expect(result.coverage).toEqual([1, 2, 100].map((k) => (100 * (q1Found(k) + q2Found(k))) / 2));
    expect(result.coverage[2]).toBe(75);
  });

  it('rejects k <= 0', async () => {
    const r = Bm25Retriever.create(corpusFromPassages([{ id: 'x', title: 'x', text: 'x' }]), {}, { cache: false });
    await expect(measureCoverage(readAsqaCoverageItems(asqaPath), r, [5, 0])).rejects.toThrow('--k must be a positive integer, got 0');
  });
});

describe('ambiqa corpus build + ambiqa coverage', () => {
  it('builds a corpus from --from and writes the coverage curve', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const corpusPath = join(tmp, 'corpus.jsonl');
      expect(await corpusCommand(['build', '--out', corpusPath, '--from', `asqa=${asqaPath}`])).toBe(0);
      expect(readFileSync(corpusPath, 'utf8').trim().split('\n')).toHaveLength(3);
      const out = join(tmp, 'curve.json');
      expect(await coverageCommand(['--data', asqaPath, '--corpus', corpusPath, '--retriever', 'bm25', '--k', '1,3', '--out', out, '--exclude', 'none'])).toBe(0);
      const curve = JSON.parse(readFileSync(out, 'utf8'));
      expect(curve).toMatchObject({ dataset: 'asqa', corpusPassages: 3, questions: 2, ks: [1, 3], exclude: 'none' });
      // With every gold passage in a 3-passage pool, AC@3 finds all answers that exist: 3 of 4 DQs.
      expect(curve.coverage[1]).toBe(75);
      expect(log.mock.calls.flat().join('\n')).toMatch(/AC@1\s+AC@3/);

      // Both ways (the default): every passage here is some question's own, so with its own
      // passages left out, neither question finds an answer.
      const both = join(tmp, 'both.json');
      expect(await coverageCommand(['--data', asqaPath, '--corpus', corpusPath, '--k', '1,3', '--out', both])).toBe(0);
      const curves = JSON.parse(readFileSync(both, 'utf8')).curves;
      expect(curves.map((c: { exclude: string; retriever: string; coverage: number[] }) => [c.exclude, c.coverage[1]])).toEqual([
        ['none', 75],
        ['own', 0],
      ]);
      expect(curves[1].retriever).toMatch(/ -own$/);
      expect(log.mock.calls.flat().join('\n')).toMatch(/own passages\s+0\.0\s+0\.0/);
    } finally {
      log.mockRestore();
    }
  });

  it('reports one way, saying why, for a corpus without question annotations; refuses --exclude own on it', async () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      const plain = join(tmp, 'plain.jsonl');
      writeFileSync(plain, ['Ali Daei scored 109 goals.', 'Construction began in 1887.'].map((text, i) => JSON.stringify({ id: `p${i}`, title: 't', text })).join('\n') + '\n');
      const out = join(tmp, 'plain-curve.json');
      expect(await coverageCommand(['--data', asqaPath, '--corpus', plain, '--k', '1,2', '--out', out])).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8'))).toMatchObject({ exclude: 'none', ks: [1, 2] });
      expect(err.mock.calls.flat().join('\n')).toMatch(/records no question annotations.*without exclusion only/);
      await expect(coverageCommand(['--data', asqaPath, '--corpus', plain, '--exclude', 'own'])).rejects.toThrow(/exclude: own, but the corpus .*plain\.jsonl records no question annotations/);
    } finally {
      err.mockRestore();
      log.mockRestore();
    }
  });

  it('names the bad option', async () => {
    await expect(coverageCommand(['--corpus', 'x.jsonl', '--k', '5,-1'])).rejects.toThrow(/--k must list positive integers/);
    await expect(coverageCommand(['--corpus', 'x.jsonl', '--retriever', 'splade'])).rejects.toThrow(/--retriever splade/);
    await expect(coverageCommand(['--data', asqaPath, '--exclude', 'gold'])).rejects.toThrow(/--exclude gold is not one of both, none, own/);
    await expect(corpusCommand(['build', '--out', join(tmp, 'x.jsonl'), '--from', 'asqa'])).rejects.toThrow(/--from asqa: expected <kind>=<path>/);
  });
});
