import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir } from '../../config/paths';
import { defaultDatasetFiles } from '../../datasets/index';
import { AmbiqaError } from '../../errors';
import { loadCorpus } from '../../retrieval/corpus';
import { measureCoverage, readAsqaCoverageItems } from '../../retrieval/coverage';
import { createRetriever } from '../../retrieval/factory';

export const summary = 'answer coverage AC@k of a retriever on a dataset (the coverage curve)';

const RETRIEVERS = ['bm25', 'dense', 'hybrid'] as const;

const HELP = `usage: ambiqa coverage --corpus <file> [--dataset asqa] [--data <ASQA json>]
                       [--retriever bm25|dense|hybrid] [--k 5,10,20,50,100] [--out <json>] [--limit <n>]

AC@k: for each question, the fraction of its gold disambiguated questions with a short answer
contained (DPR-style token match) in the top-k passages retrieved for the ambiguous question;
averaged over questions, ×100.

  --corpus     passages to retrieve from (build one with \`ambiqa corpus build\`)
  --dataset    asqa (default; the only dataset with per-interpretation answers here)
  --data       default ${join(dataDir(), defaultDatasetFiles.asqa)}
  --retriever  bm25 (default) | dense | hybrid (BM25 + dense, reciprocal-rank fusion)
  --k          comma-separated cut-offs (default 5,10,20,50,100)
  --out        write the curve and per-question ranks as JSON
  --limit      only the first n questions (quick looks)`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dataset: { type: 'string', default: 'asqa' },
      data: { type: 'string' },
      corpus: { type: 'string' },
      retriever: { type: 'string', default: 'bm25' },
      k: { type: 'string', default: '5,10,20,50,100' },
      out: { type: 'string' },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.dataset !== 'asqa') throw new AmbiqaError(`--dataset ${values.dataset} is not supported`, 'use --dataset asqa');
  if (!values.corpus) throw new AmbiqaError('--corpus is required', 'build one with `ambiqa corpus build --out corpus.jsonl`');
  if (!(RETRIEVERS as readonly string[]).includes(values.retriever!)) {
    throw new AmbiqaError(`--retriever ${values.retriever} is not one of ${RETRIEVERS.join(', ')}`, 'e.g. --retriever bm25');
  }
  const ks = values.k!.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  for (const k of ks) {
    if (!Number.isInteger(k) || k <= 0) throw new AmbiqaError(`--k must list positive integers, got ${values.k}`, 'e.g. --k 5,10,20,50,100');
  }
  if (ks.length === 0) throw new AmbiqaError('--k lists no cut-offs', 'e.g. --k 5,10,20,50,100');
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit <= 0) throw new AmbiqaError(`--limit must be a positive integer, got ${values.limit}`, 'e.g. --limit 50');
  }
  const dataPath = values.data ?? join(dataDir(), defaultDatasetFiles.asqa);
  const items = readAsqaCoverageItems(dataPath).slice(0, limit);
  const corpus = loadCorpus(values.corpus);
  const progress = (label: string) => (done: number, total: number) => {
    if (process.stderr.isTTY) process.stderr.write(`\r${label} ${done}/${total}`);
    if (done === total && process.stderr.isTTY) process.stderr.write('\n');
  };
  const retriever = await createRetriever(values.retriever as (typeof RETRIEVERS)[number], corpus, { onProgress: progress('embedding corpus') });
  const result = await measureCoverage(items, retriever, ks, progress('questions'));
  console.log(`${result.retriever} on ${dataPath} (${result.questions} questions), corpus ${values.corpus} (${corpus.passages.length} passages)`);
  console.log(result.ks.map((k) => `AC@${k}`.padStart(8)).join(''));
  console.log(result.coverage.map((c) => c.toFixed(1).padStart(8)).join(''));
  if (values.out) {
    mkdirSync(dirname(values.out), { recursive: true });
    writeFileSync(
      values.out,
      JSON.stringify({ dataset: 'asqa', data: dataPath, corpus: values.corpus, corpusPassages: corpus.passages.length, corpusHash: corpus.hash, ...result }, null, 1),
    );
    console.log(`wrote ${values.out}`);
  }
  return 0;
}
