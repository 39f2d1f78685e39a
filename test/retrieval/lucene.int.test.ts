/**
 * The Lucene engine end to end with a real Anserini indexer and searcher (a few hundred
 * passages): `ambiqa index` from DPR TSV and from JSONL, hits with their stored passages and
 * DPR's ids, `exclude: own` from the index's sidecar, a run through the CLI that never loads
 * the corpus, the shared searcher `serve-index` announces, and the refusals (a bad row leaves no
 * index, a leftover build folder is started over, a server down or answering another shape).
 *
 * Needs `npx ambiqa setup --only lucene` (CI runs it); elsewhere it skips, saying why.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCorpus } from '../../src/retrieval/corpus';
import { withExclusion } from '../../src/retrieval/exclude';
import { createRetriever } from '../../src/retrieval/factory';
import { buildLuceneIndex } from '../../src/retrieval/lucene/build';
import { onDiskAnnotations } from '../../src/retrieval/lucene/config';
import { announceSearcher, startSearcher } from '../../src/retrieval/lucene/searcher';
import { LuceneRetriever } from '../../src/retrieval/lucene/retriever';
import { retrieverParams } from '../../src/retrieval/remote/inspect';
import { questionKey } from '../../src/retrieval/types';
import { runCli } from '../helpers/cli';
import { hasSharedData } from '../helpers/data';
import { luceneSkipReason } from '../helpers/lucene';

const skipReason = luceneSkipReason('Lucene tests');

const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-lucene-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Filler words: passages that share vocabulary but not the planted facts. */
const FILLER = 'river stone garden window season market letter bridge morning island harvest lantern village sound'.split(' ');
function filler(i: number): string {
  return Array.from({ length: 40 }, (_, j) => FILLER[(i * 7 + j * 3) % FILLER.length]).join(' ');
}

const PLANTED = [
  { id: '9001', title: 'Zephyrine Okonkwo', text: 'Zephyrine Okonkwo composed the opera Quillmarsh in 1911 for the Lagos festival.' },
  { id: '9002', title: 'Brastomere', text: 'Brastomere is a volcanic island whose capital is Vellquin, founded by fishermen.' },
  // For the CLI run's question (ASQA dev 7089015503030534342).
  { id: '9003', title: 'The Sound of Silence', text: 'The Sound of Silence is a song by Simon & Garfunkel, the original artist, written by Paul Simon.' },
];

function writeTsv(path: string, n: number): void {
  const rows = ['id\ttext\ttitle'];
  for (let i = 0; i < n; i++) rows.push(`${i + 1}\t"${filler(i)} ""quoted"""\tFiller ${i}`);
  for (const p of PLANTED) rows.splice(1 + Number(p.id) % n, 0, `${p.id}\t${p.text}\t${p.title}`);
  writeFileSync(path, `${rows.join('\n')}\n`);
}

describe.skipIf(skipReason !== undefined)('Lucene engine (real Anserini)', { timeout: 120_000 }, () => {
  const tsv = join(tmp, 'psgs.tsv');
  const tsvIndex = join(tmp, 'tsv-index');
  const jsonl = join(tmp, 'corpus.jsonl');
  const jsonlIndex = join(tmp, 'jsonl-index');
  let retriever: LuceneRetriever;

  beforeAll(async () => {
    writeTsv(tsv, 300);
    const lines = [
      { id: 'own-1', title: 'Quorvath', text: 'Quorvath is the river that floods the valley of Dremmel every spring.', annotated_for: ['asqa:q1'] },
      { id: 'other-1', title: 'Dremmel', text: 'The valley of Dremmel floods in spring when the Quorvath river rises.' },
      ...Array.from({ length: 200 }, (_, i) => ({ id: `f${i}`, title: `F ${i}`, text: filler(i) })),
    ];
    writeFileSync(jsonl, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    await buildLuceneIndex({ from: 'dpr-tsv', file: tsv, out: tsvIndex, filePassages: 100 });
    retriever = new LuceneRetriever({ index: tsvIndex });
  }, 120_000);
  afterAll(async () => retriever?.close());

  it('indexes DPR TSV into a Lucene index whose hits carry the stored passage and the file’s own id', async () => {
    const meta = JSON.parse(readFileSync(join(tsvIndex, 'ambiqa-index.json'), 'utf8')) as { passages: number; format: string };
    expect(meta).toMatchObject({ passages: 303, format: 'dpr-tsv' });
    expect(existsSync(join(tmp, '.tsv-index.building'))).toBe(false);
    await retriever.preflight();
    // Only passages holding a query word match in BM25: 'river' brings filler passages in.
    const hits = await retriever.search('who composed the opera Quillmarsh river', 3);
    expect(hits[0]!.passage).toEqual({ id: '9001', title: 'Zephyrine Okonkwo', text: PLANTED[0]!.text });
    expect(hits.map((h) => h.rank)).toEqual([0, 1, 2]);
    const island = await retriever.search('capital of the island Brastomere', 1);
    expect(island[0]!.passage.id).toBe('9002');
    // DPR's quoting undone before indexing: the stored text has plain quotes.
    const fillerHit = (await retriever.search('river stone garden quoted', 1))[0]!;
    expect(fillerHit.passage.text).toMatch(/ "quoted"$/);
    expect(retriever.returned('9001')?.title).toBe('Zephyrine Okonkwo');
    // Served by id from the stored fields, without a search.
    expect(await retriever.passage('9002')).toEqual({ id: '9002', title: 'Brastomere', text: PLANTED[1]!.text });
    expect(await retriever.passage('no-such-id')).toBeUndefined();
    // The run's MLflow params: `retriever.` once (describe() gave it twice: `retriever.retriever.index`).
    const described = retrieverParams(retriever);
    expect(described).toMatchObject({ 'retriever.engine': 'lucene', 'retriever.index': tsvIndex, 'retriever.index.passages': '303' });
    expect(described['retriever.index.sha256']).toMatch(/^[0-9a-f]{64}$/);
    expect(described['retriever.index.lucene']).toMatch(/^10\./);
    expect(Object.keys(described).filter((k) => k.startsWith('retriever.retriever.'))).toEqual([]);
  });

  it('exclude own reads the annotations sidecar that indexing JSONL wrote, without the corpus', async () => {
    await buildLuceneIndex({ from: 'jsonl', file: jsonl, out: jsonlIndex });
    const config = { type: 'bm25', engine: 'lucene', index: jsonlIndex };
    const own = onDiskAnnotations(config);
    expect(own.annotations).toEqual(new Map([['asqa:q1', new Set(['own-1'])]]));
    const base = new LuceneRetriever({ index: jsonlIndex });
    try {
      const wrapped = withExclusion(base, own.annotations, 'own', own.where);
      const all = await wrapped.search('Quorvath river floods Dremmel', 2);
      expect(all.map((h) => h.passage.id)).toEqual(['own-1', 'other-1']);
      const view = await wrapped.forQuestion!(questionKey('asqa', 'q1')).search('Quorvath river floods Dremmel', 2);
      expect(view[0]!.passage.id).toBe('other-1');
      expect(view.map((h) => h.passage.id)).not.toContain('own-1');
      expect(view).toHaveLength(2);
      // Hybrid of Lucene and the in-memory BM25 over the same corpus: both lists fused, own excluded.
      const corpus = loadCorpus(jsonl);
      const hybrid = await createRetriever({ type: 'hybrid', retrievers: [{ type: 'bm25', engine: 'lucene', index: jsonlIndex }, 'bm25'] }, corpus, { cache: false });
      const fused = withExclusion(hybrid, corpus, 'own').forQuestion!(questionKey('asqa', 'q1'));
      expect((await fused.search('Quorvath river floods Dremmel', 1))[0]!.passage.id).toBe('other-1');
      await hybrid.close?.();
      // The TSV index has no annotations: exclude own is refused, naming the index.
      const none = onDiskAnnotations({ type: 'bm25', engine: 'lucene', index: tsvIndex });
      expect(() => withExclusion(retriever, none.annotations, 'own', none.where)).toThrow(`retriever.exclude: own, but the index ${tsvIndex} (its ambiqa-annotations.jsonl) records no question annotations`);
    } finally {
      await base.close();
    }
  });

  it('a broken row leaves no index; a leftover build folder is started over; an existing index is kept without --force', async () => {
    const broken = join(tmp, 'broken.tsv');
    writeFileSync(broken, 'id\ttext\ttitle\n1\tgood row\tT\n2\tbad row without title\n');
    const out = join(tmp, 'broken-index');
    await expect(buildLuceneIndex({ from: 'dpr-tsv', file: broken, out })).rejects.toThrow(`${broken}:3: expected 3 tab-separated fields (id, text, title), found 2`);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(join(tmp, '.broken-index.building'))).toBe(false);

    const again = join(tmp, 'again-index');
    mkdirSync(join(tmp, '.again-index.building', 'index'), { recursive: true });
    writeFileSync(join(tmp, '.again-index.building', 'index', '_0.fdt'), 'left by a killed build');
    const result = await buildLuceneIndex({ from: 'dpr-tsv', file: tsv, out: again });
    expect(result.passages).toBe(303);
    await expect(buildLuceneIndex({ from: 'dpr-tsv', file: tsv, out: again })).rejects.toThrow(`--out ${again} already exists`);
  });

  it('a run whose retriever is the Lucene index answers with its passages and never loads a corpus', async (ctx) => {
    if (!hasSharedData('asqa')) return ctx.skip();
    const env = { ...process.env, AMBIQA_TRACKING: 'off' };
    const name = `lucene-int-${process.pid}`;
    const ids = join(tmp, 'ids.json');
    writeFileSync(ids, JSON.stringify(['7089015503030534342']));
    const { code, output } = await runCli(
      [
        'run',
        'experiments/vanilla-rag-asqa.yaml',
        '--name',
        name,
        '--set',
        'llm.provider=scripted',
        '--set',
        'retriever.type=bm25',
        '--set',
        'retriever.engine=lucene',
        '--set',
        `retriever.index=${tsvIndex}`,
        // A corpus file that does not parse: it must never be read.
        '--set',
        `retriever.corpus=${tsv}`,
        '--set',
        'metrics=[str_em]',
        '--set',
        'pipeline.options.nShots=0',
        '--set',
        `dataset.ids=${ids}`,
        '--limit',
        '1',
        '--no-tracking',
        '--skip-preflight',
        '--quiet',
      ],
      env,
    );
    expect(output).toMatch(/FINISHED: 1 answered/);
    expect(code).toBe(0);
    const runDir = join('artifacts', 'runs', name);
    try {
      const trace = JSON.parse(readFileSync(join(runDir, 'traces.jsonl'), 'utf8').split('\n')[0]!) as { retrievals: { retriever: string; hits: { id: string }[] }[] };
      expect(trace.retrievals[0]!.retriever).toBe('bm25:lucene');
      expect(trace.retrievals[0]!.hits).toHaveLength(5);
      expect(trace.retrievals[0]!.hits[0]!.id).toBe('9003');
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  });

  it('a searcher announced by serve-index is shared; servers that are down or answer another shape are refused in one line', async () => {
    const shared = await startSearcher(tsvIndex);
    const withdraw = announceSearcher(tsvIndex, shared);
    const logs: string[] = [];
    const client = new LuceneRetriever({ index: tsvIndex, log: (l) => logs.push(l) });
    try {
      expect((await client.search('Quillmarsh opera', 1))[0]!.passage.id).toBe('9001');
      expect(logs).toEqual([`lucene: using the searcher ambiqa serve-index runs at ${shared.url}`]);
      const byUrl = new LuceneRetriever({ url: shared.url, indexName: 'corpus' });
      await byUrl.preflight();
      expect((await byUrl.search('Brastomere capital', 1))[0]!.passage.id).toBe('9002');
    } finally {
      await client.close();
      withdraw();
      await shared.stop();
    }

    const down = new LuceneRetriever({ url: shared.url, timeoutMs: 2_000 });
    await expect(down.preflight()).rejects.toThrow(new RegExp(`^retriever.url ${shared.url}/v1/corpus/search: no answer \\(ECONNREFUSED\\)$`));

    const other: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"topk": []}'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const port = (other.address() as { port: number }).port;
    try {
      const wrong = new LuceneRetriever({ url: `http://127.0.0.1:${port}` });
      await expect(wrong.preflight()).rejects.toThrow(`retriever.url http://127.0.0.1:${port}/: the answer is not Anserini's search shape ({"candidates": [{"docid", "score", "doc"}]})`);
    } finally {
      other.close();
    }
  });
});
