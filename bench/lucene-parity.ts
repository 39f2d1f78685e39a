/**
 * Lucene BM25 (Anserini) against ambiqa's in-memory BM25 on the pooled corpus (a script):
 *
 *   npx tsx bench/lucene-parity.ts [--dir <work dir>]
 *
 * Builds the pooled corpus (8,470 passages), indexes it with `buildLuceneIndex` (the same
 * documents ambiqa's BM25 indexes: `Title | Section; text`), and on the 753 ASQA dev questions
 * prints AC@5..100 for both engines (whole corpus and `exclude: own`) and the mean top-10
 * overlap |A ∩ B| / 10, with the share of questions whose top-10 sets are identical.
 * Needs `npx ambiqa setup --only lucene`.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir } from '../src/config/paths';
import { Bm25Retriever } from '../src/retrieval/bm25';
import { saveCorpus } from '../src/retrieval/corpus';
import { buildCorpus, defaultSources } from '../src/retrieval/corpus-builder';
import { measureCoverage, readAsqaCoverageItems } from '../src/retrieval/coverage';
import { withExclusion } from '../src/retrieval/exclude';
import { buildLuceneIndex } from '../src/retrieval/lucene/build';
import { readAnnotations } from '../src/retrieval/lucene/index-dir';
import { LuceneRetriever } from '../src/retrieval/lucene/retriever';

const { values } = parseArgs({ options: { dir: { type: 'string', default: join(tmpdir(), 'ambiqa-lucene-parity') } } });
const dir = resolve(values.dir!);
mkdirSync(dir, { recursive: true });
const corpusFile = join(dir, 'pooled.jsonl');
const corpus = saveCorpus(corpusFile, buildCorpus(defaultSources()).passages);
const indexDir = join(dir, 'pooled-lucene');
if (existsSync(indexDir)) rmSync(indexDir, { recursive: true });
const built = await buildLuceneIndex({ from: 'jsonl', file: corpusFile, out: indexDir });
console.log(`pooled corpus: ${corpus.passages.length} passages; Lucene index built in ${built.seconds.toFixed(1)} s (shared machine)`);

const memory = Bm25Retriever.create(corpus, {}, { cache: false });
const lucene = new LuceneRetriever({ index: indexDir });
const items = readAsqaCoverageItems(join(dataDir(), 'asqa', 'ASQA_dev.json'));
const ks = [5, 10, 20, 50, 100];
const row = (name: string, c: number[]) => console.log(`${name.padEnd(30)}${c.map((x) => x.toFixed(1).padStart(8)).join('')}`);
console.log(`${'AC@k on ASQA dev'.padEnd(30)}${ks.map((k) => `AC@${k}`.padStart(8)).join('')}`);
const annotations = readAnnotations(indexDir);
for (const mode of ['none', 'own'] as const) {
  const m = await measureCoverage(items, withExclusion(memory, corpus, mode), ks, undefined, { exclude: mode });
  const l = await measureCoverage(items, withExclusion(lucene, annotations, mode), ks, undefined, { exclude: mode });
  row(`in-memory ${memory.name} ${mode}`, m.coverage);
  row(`lucene (Anserini) ${mode}`, l.coverage);
}
let overlap = 0;
let identical = 0;
let sameFirst = 0;
for (const item of items) {
  const a = (await memory.search(item.question, 10)).map((h) => h.passage.id);
  const b = (await lucene.search(item.question, 10)).map((h) => h.passage.id);
  const common = a.filter((id) => b.includes(id)).length;
  overlap += common / 10;
  if (common === 10) identical++;
  if (a[0] === b[0]) sameFirst++;
}
console.log(
  `top-10 overlap: mean ${((100 * overlap) / items.length).toFixed(1)}%, identical sets ${((100 * identical) / items.length).toFixed(1)}%, same first hit ${((100 * sameFirst) / items.length).toFixed(1)}% of ${items.length} questions`,
);
await lucene.close();
