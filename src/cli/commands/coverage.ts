import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir } from '../../config/paths';
import { defaultDatasetFiles } from '../../datasets/index';
import { AmbiqaError } from '../../errors';
import { corpusFromPassages, loadCorpus } from '../../retrieval/corpus';
import { buildCorpus, defaultSources } from '../../retrieval/corpus-builder';
import { measureCoverage, readAsqaCoverageItems, type CoverageResult } from '../../retrieval/coverage';
import { withExclusion } from '../../retrieval/exclude';
import { hasLocalLuceneIndex, onDiskAnnotations } from '../../retrieval/lucene/config';
import { inspectIndex } from '../../retrieval/lucene/index-dir';
import { createRetriever, needsCorpus, parseRetrieverConfig, type RetrieverConfig } from '../../retrieval/factory';
import { preflightRetriever, retrieverParams } from '../../retrieval/remote/inspect';
import YAML from 'yaml';

export const summary = 'answer coverage AC@k of a retriever on a dataset (the coverage curve)';

const RETRIEVERS = ['bm25', 'dense', 'hybrid'] as const;

const EXCLUDES = ['both', 'none', 'own'] as const;

const HELP = `usage: ambiqa coverage [--corpus <file>] [--dataset asqa] [--data <ASQA json>]
                       [--retriever bm25|dense|hybrid|<YAML mapping> | --index <dir>] [--k 5,10,20,50,100]
                       [--exclude both|none|own]
                       [--out <json>] [--limit <n>]

AC@k: for each question, the fraction of its gold disambiguated questions with a short answer
contained (DPR-style token match) in the top-k passages retrieved for the ambiguous question;
averaged over questions, ×100. Reported both ways by default: with the whole corpus, and with
each question's own annotated passages excluded (leak control, \`retriever.exclude: own\`).

  --corpus     passages to retrieve from (default: the data's passages pooled, as runs do;
               build a file with \`ambiqa corpus build\`)
  --dataset    asqa (default; the only dataset with per-interpretation answers here)
  --data       default ${join(dataDir(), defaultDatasetFiles.asqa)}
  --retriever  bm25 (default) | dense | hybrid (BM25 + dense, reciprocal-rank fusion), or a
               retriever section as a YAML mapping, e.g.
               '{type: colbertv2, url: http://host:8893/api/search}' (a server: checked first)
  --index      a Lucene index folder (\`ambiqa index\`): BM25 on Lucene instead of in memory
               (short for --retriever '{type: bm25, engine: lucene, index: <dir>}'); the corpus
               is not loaded, and exclude own reads the index's annotations sidecar
  --k          comma-separated cut-offs (default 5,10,20,50,100)
  --exclude    both (default) | none | own (leave out each question's own annotated passages)
  --out        write the curve(s) and per-question ranks as JSON
  --limit      only the first n questions (quick looks)`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dataset: { type: 'string', default: 'asqa' },
      data: { type: 'string' },
      corpus: { type: 'string' },
      retriever: { type: 'string', default: 'bm25' },
      index: { type: 'string' },
      k: { type: 'string', default: '5,10,20,50,100' },
      exclude: { type: 'string', default: 'both' },
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
  if (!(EXCLUDES as readonly string[]).includes(values.exclude!)) {
    throw new AmbiqaError(`--exclude ${values.exclude} is not one of ${EXCLUDES.join(', ')}`, 'e.g. --exclude own');
  }
  if (values.index !== undefined && (values.corpus !== undefined || values.retriever !== 'bm25')) {
    throw new AmbiqaError('--index is a Lucene BM25 index: it goes without --corpus and --retriever', "or give --retriever '{type: bm25, engine: lucene, index: <dir>}'");
  }
  const retrieverConfig = values.index !== undefined ? parseRetrieverConfig({ type: 'bm25', engine: 'lucene', index: values.index }, '--index') : parseRetrieverOption(values.retriever!);
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
  // A server or a Lucene index holds its own passages: the corpus is then read only for the
  // questions' own annotated passages (leak control), whose ids must be the server's pids; a local
  // Lucene index has them in its sidecar (\`ambiqa index\` wrote it) and needs no corpus at all.
  const localIndex = hasLocalLuceneIndex(retrieverConfig);
  const wantsCorpus = needsCorpus(retrieverConfig) || (values.exclude !== 'none' && !localIndex);
  const corpus = !wantsCorpus ? undefined : values.corpus ? loadCorpus(values.corpus) : corpusFromPassages(buildCorpus(defaultSources()).passages);
  const sidecar = localIndex && !needsCorpus(retrieverConfig) ? onDiskAnnotations(retrieverConfig) : undefined;
  const corpusName = sidecar ? `Lucene index ${values.index ?? '(retriever.index)'}` : (values.corpus ?? `(the data's passages, pooled from ${dataDir()})`);
  const annotated = sidecar ? sidecar.annotations.size > 0 : (corpus?.passages.some((p) => p.annotatedFor?.length) ?? false);
  if (values.exclude === 'both' && !annotated) {
    console.error(`warning: ${corpusName} records no question annotations ("annotated_for"); AC@k is reported without exclusion only (rebuild it with \`ambiqa corpus build\` for both ways)`);
  }
  const modes = values.exclude === 'both' ? (annotated ? (['none', 'own'] as const) : (['none'] as const)) : ([values.exclude as 'none' | 'own'] as const);
  const progress = (label: string) => (done: number, total: number) => {
    if (process.stderr.isTTY) process.stderr.write(`\r${label} ${done}/${total}`);
    if (done === total && process.stderr.isTTY) process.stderr.write('\n');
  };
  const retriever = await createRetriever(retrieverConfig, needsCorpus(retrieverConfig) ? corpus : undefined, { onProgress: progress('embedding corpus') });
  const results: CoverageResult[] = [];
  try {
    await preflightRetriever(retriever);
    for (const mode of modes) {
      const seen = sidecar ? withExclusion(retriever, sidecar.annotations, mode, sidecar.where) : corpus ? withExclusion(retriever, corpus, mode) : retriever;
      results.push(await measureCoverage(items, seen, ks, progress(`questions (exclude ${mode})`), { exclude: mode, dataset: 'asqa' }));
    }
  } finally {
    await retriever.close?.();
  }
  const indexPassages = values.index !== undefined ? inspectIndex(values.index).meta?.passages : undefined;
  const source = corpus && !sidecar ? `corpus ${corpusName} (${corpus.passages.length} passages)` : sidecar ? `${corpusName} (${indexPassages ?? '?'} passages)` : `the server's passages`;
  console.log(`${retriever.name} on ${dataPath} (${results[0].questions} questions), ${source}`);
  console.log('exclude '.padEnd(14) + results[0].ks.map((k) => `AC@${k}`.padStart(8)).join(''));
  for (const r of results) console.log(`${r.exclude === 'own' ? 'own passages' : 'none'}`.padEnd(14) + r.coverage.map((c) => c.toFixed(1).padStart(8)).join(''));
  if (values.out) {
    mkdirSync(dirname(values.out), { recursive: true });
    const about = {
      dataset: 'asqa',
      data: dataPath,
      ...(corpus ? { corpus: corpusName, corpusPassages: corpus.passages.length, corpusHash: corpus.hash } : {}),
      retriever: retriever.name,
      ...retrieverParams(retriever),
    };
    // One mode: the curve itself (as before); both: the two curves under `curves`.
    writeFileSync(values.out, JSON.stringify(results.length === 1 ? { ...about, ...results[0] } : { ...about, curves: results }, null, 1));
    console.log(`wrote ${values.out}`);
  }
  return 0;
}

/** `--retriever`: a kind's name, or a retriever section as a YAML mapping (a server's URL, settings). */
function parseRetrieverOption(text: string): RetrieverConfig {
  if (!text.trim().startsWith('{')) {
    if (!(RETRIEVERS as readonly string[]).includes(text)) {
      throw new AmbiqaError(`--retriever ${text} is not one of ${RETRIEVERS.join(', ')} or a YAML mapping`, "e.g. --retriever bm25, or --retriever '{type: colbertv2, url: http://host:8893/api/search}'");
    }
    return parseRetrieverConfig(text, '--retriever');
  }
  let value: unknown;
  try {
    value = YAML.parse(text);
  } catch (error) {
    throw new AmbiqaError(`--retriever: not a YAML mapping (${(error as Error).message.split('\n')[0]})`, "e.g. --retriever '{type: colbertv2, url: http://host:8893/api/search}'");
  }
  return parseRetrieverConfig(value, '--retriever');
}
