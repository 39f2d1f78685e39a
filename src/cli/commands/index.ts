import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { parsePositiveInt } from '../../experiments/cli-support';
import { buildLuceneIndex } from '../../retrieval/lucene/build';
import { PASSAGE_FORMATS, type PassageFormat } from '../../retrieval/lucene/passage-stream';
import { luceneRuntime } from '../../retrieval/lucene/searcher';
import { runSetup } from '../../setup/setup';
import { MiniLmEmbedder } from '../../retrieval/embedder';
import { buildUsearchIndex, importUsearchIndex, isUsearchIndex, USEARCH_QUANTIZATIONS, type PassageSource, type UsearchQuantization } from '../../retrieval/usearch';
import { streamPassages } from '../../retrieval/lucene/passage-stream';
import { existsSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

export const summary = 'build an on-disk index of a large corpus: Lucene BM25 (Anserini) or a USearch vector index; DPR psgs_w100.tsv or ambiqa JSONL';

const HELP = `usage: ambiqa index --from dpr-tsv|jsonl <file> --engine lucene --out <dir> [options]
       ambiqa index --from dpr-tsv|jsonl <file> --engine usearch --out <dir> [--quantization f16|i8|f32]
       ambiqa index --vectors <file.npy|file.f16> --ids <ids.txt> [--dimension D] --engine usearch --out <dir>

Streams the corpus (never whole in memory) into Anserini's JsonCollection and indexes it with
Anserini's IndexCollection (Lucene 10, BM25, raw documents stored), in Anserini/Pyserini's
layout. The index is built in <dir>'s sibling .<name>.building/ and renamed into place only when
complete; an interrupted build starts over. The engine (Anserini's jar, a Java >= 21) is what
\`npx ambiqa setup --only lucene\` fetches; this command fetches it itself when it is missing.

  --from dpr-tsv  DPR's psgs_w100.tsv: header id<TAB>text<TAB>title, DPR's ids kept
  --from jsonl    ambiqa's corpus JSONL (\`ambiqa corpus build\`); its annotated_for goes into
                  <dir>/ambiqa-annotations.jsonl for retriever.exclude: own

Then: retriever: {type: bm25, engine: lucene, index: <dir>}
  (or --set retriever.type=bm25 --set retriever.engine=lucene --set retriever.index=<dir>)

engine usearch (dense retrieval, a memory-mapped HNSW index; docs/retrieval.md "Dense at scale"):
  embeds the corpus with ambiqa's embedder (MiniLM, \`npx ambiqa setup\`) in chunks of
  --chunk rows, streamed from the file; an interrupted build resumes from its last chunk when run
  again with the same file and --out. Or imports vectors computed elsewhere (--vectors, --ids).
  Then: retriever: {type: dense, engine: usearch, path: <dir>, corpus: <the corpus as JSONL>}
  (the run serves passage texts from its corpus by id).

options:
  --engine lucene|usearch   lucene (default): BM25; usearch: dense vectors
  --threads N       lucene: indexing threads (default 2)
  --optimize        lucene: merge into one segment at the end (slower build, faster search)
  --quantization Q  usearch: f16 (default) | i8 | f32
  --chunk N         usearch: rows embedded per step (default 512)
  --vectors FILE    usearch: import a .npy (float32/float16) or raw f16 file instead of embedding
  --ids FILE        usearch with --vectors: one passage id per vector row
  --dimension D     usearch with raw f16 --vectors: values per row
  --force           replace an existing <dir>
  --quiet           no progress lines
  -h, --help        this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      from: { type: 'string' },
      engine: { type: 'string' },
      out: { type: 'string' },
      quantization: { type: 'string' },
      chunk: { type: 'string' },
      vectors: { type: 'string' },
      ids: { type: 'string' },
      dimension: { type: 'string' },
      threads: { type: 'string' },
      optimize: { type: 'boolean' },
      force: { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.engine === 'usearch') return indexUsearch(values, positionals);
  if (!values.from || !(PASSAGE_FORMATS as readonly string[]).includes(values.from)) {
    throw new AmbiqaError(`--from ${values.from ?? '(missing)'}: give ${PASSAGE_FORMATS.join(' or ')}`, 'see `npx ambiqa index --help`');
  }
  if (positionals.length !== 1) throw new AmbiqaError(`give one corpus file after --from ${values.from} (got ${positionals.length})`, 'see `npx ambiqa index --help`');
  if ((values.engine ?? 'lucene') !== 'lucene') throw new AmbiqaError(`--engine ${values.engine}: give lucene (BM25) or usearch (dense vectors)`);
  if (!values.out) throw new AmbiqaError('--out <dir> is required', 'the folder the index goes to');
  // The engine is opt-in in `ambiqa setup`; building an index is asking for it, so fetch it here
  // (sha256-verified, as `setup --only lucene` does) rather than stop and send the user there.
  try {
    luceneRuntime();
  } catch {
    console.error('the Lucene engine is not set up yet: fetching it (`npx ambiqa setup --only lucene`)');
    const setup = await runSetup({ parts: ['lucene'], quiet: values.quiet ?? false });
    if (setup.failed.length > 0) return 1;
  }
  const threads = values.threads !== undefined ? parsePositiveInt(values.threads, '--threads') : 2;
  const started = Date.now();
  let lastShown = 0;
  const result = await buildLuceneIndex({
    from: values.from as PassageFormat,
    file: positionals[0]!,
    out: values.out,
    threads,
    optimize: values.optimize ?? false,
    force: values.force ?? false,
    ...(values.quiet
      ? {}
      : {
          onProgress: (p) => {
            if (Date.now() - lastShown < 2_000 && p.bytes < p.totalBytes) return;
            lastShown = Date.now();
            const pct = p.totalBytes ? ((100 * p.bytes) / p.totalBytes).toFixed(1) : '?';
            process.stderr.write(`reading: ${p.passages.toLocaleString('en-US')} passages, ${pct}% of ${(p.totalBytes / 2 ** 20).toFixed(0)} MiB (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
          },
          log: (line: string) => {
            if (/Indexing Complete|documents indexed|Thread pool|files? found|%|ERROR|Exception/.test(line)) process.stderr.write(`anserini: ${line.replace(/^.*? - /, '')}\n`);
          },
        }),
  });
  console.log(
    `indexed ${result.passages.toLocaleString('en-US')} passages into ${result.info.dir} in ${result.seconds.toFixed(1)} s (reading ${result.convertSeconds.toFixed(1)} s; Lucene ${result.info.luceneVersion})\n` +
      `use it with: --set retriever.type=bm25 --set retriever.engine=lucene --set retriever.index=${result.info.dir}`,
  );
  return 0;
}

interface UsearchArgs {
  from?: string | undefined;
  out?: string | undefined;
  quantization?: string | undefined;
  chunk?: string | undefined;
  vectors?: string | undefined;
  ids?: string | undefined;
  dimension?: string | undefined;
  force?: boolean | undefined;
  quiet?: boolean | undefined;
}

/** A chunk's rows and their vectors are held in memory at once; a vector's width is an allocation per row. */
const MAX_CHUNK = 65_536;
const MAX_DIMENSION = 65_536;

function atMost(n: number, max: number, option: string): number {
  if (n > max) throw new AmbiqaError(`${option} ${n}: at most ${max.toLocaleString('en-US')}`);
  return n;
}

/** `--engine usearch`: embed a corpus file into a USearch index (resumable), or import vectors. */
async function indexUsearch(values: UsearchArgs, positionals: string[]): Promise<number> {
  if (!values.out) throw new AmbiqaError('--out <dir> is required', 'the folder the index goes to');
  const quantization = (values.quantization ?? 'f16') as UsearchQuantization;
  if (!(USEARCH_QUANTIZATIONS as readonly string[]).includes(quantization)) {
    throw new AmbiqaError(`--quantization ${values.quantization}: give ${USEARCH_QUANTIZATIONS.join(', ')}`);
  }
  const out = resolve(values.out);
  if (isUsearchIndex(out)) {
    if (!values.force) throw new AmbiqaError(`--out ${out}: already holds a finished usearch index`, 'pass --force to replace it');
    rmSync(out, { recursive: true, force: true });
  }
  const started = Date.now();
  let lastShown = 0;
  const onProgress = values.quiet
    ? undefined
    : (done: number, total: number, phase: 'embed' | 'index') => {
        if (Date.now() - lastShown < 2_000 && done < total) return;
        lastShown = Date.now();
        process.stderr.write(`${phase === 'embed' ? 'embedding' : 'indexing'}: ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} rows (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
      };
  const build = { quantization, ...(onProgress ? { onProgress } : {}) };
  if (values.vectors !== undefined || values.ids !== undefined) {
    if (values.vectors === undefined || values.ids === undefined) throw new AmbiqaError(`--${values.vectors === undefined ? 'vectors' : 'ids'} is needed with --${values.vectors === undefined ? 'ids' : 'vectors'}`, 'give the vectors file and its id list together');
    if (values.from !== undefined || positionals.length > 0) throw new AmbiqaError('--vectors imports vectors: give no --from corpus with it');
    const dimension = values.dimension !== undefined ? atMost(parsePositiveInt(values.dimension, '--dimension'), MAX_DIMENSION, '--dimension') : undefined;
    const meta = await importUsearchIndex(out, { vectors: resolve(values.vectors), ids: resolve(values.ids), ...(dimension ? { dimension } : {}) }, build);
    console.log(`imported ${meta.count.toLocaleString('en-US')} vectors of ${meta.dimension} dimensions into ${out} (${quantization}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  }
  if (!values.from || !(PASSAGE_FORMATS as readonly string[]).includes(values.from)) {
    throw new AmbiqaError(`--from ${values.from ?? '(missing)'}: give ${PASSAGE_FORMATS.join(' or ')} (or --vectors and --ids to import)`, 'see `npx ambiqa index --help`');
  }
  if (positionals.length !== 1) throw new AmbiqaError(`give one corpus file after --from ${values.from} (got ${positionals.length})`, 'see `npx ambiqa index --help`');
  const file = resolve(positionals[0]!);
  if (!existsSync(file)) throw new AmbiqaError(`corpus file ${file} does not exist`);
  const format = values.from as PassageFormat;
  const chunk = values.chunk !== undefined ? atMost(parsePositiveInt(values.chunk, '--chunk'), MAX_CHUNK, '--chunk') : 512;
  // One pass to count the rows (and check every line) before any embedding: the build's
  // resume state is keyed by the row count, and a bad line is refused before hours are spent.
  let count = 0;
  for await (const _ of streamPassages(file, format)) count++;
  if (count === 0) throw new AmbiqaError(`corpus file ${file}: no passages`);
  const source: PassageSource = {
    count,
    from: async function* (start) {
      let row = 0;
      for await (const p of streamPassages(file, format)) if (row++ >= start) yield p;
    },
    ids: async () => {
      const ids: string[] = [];
      for await (const p of streamPassages(file, format)) ids.push(p.id);
      return ids;
    },
  };
  const embedder = new MiniLmEmbedder();
  const meta = await buildUsearchIndex(out, source, embedder, { ...build, chunk, corpusHash: fileIdentity(file, format, count) });
  console.log(
    `indexed ${meta.count.toLocaleString('en-US')} passages into ${out} (${embedder.name}, ${quantization}) in ${((Date.now() - started) / 1000).toFixed(1)} s\n` +
      `use it with: retriever: {type: dense, engine: usearch, path: ${out}, corpus: <the corpus as ambiqa JSONL>}`,
  );
  return 0;
}

/** What a resumed build must find unchanged: the file, its size and time, its row count. */
function fileIdentity(file: string, format: PassageFormat, count: number): string {
  const st = statSync(file);
  return `${format}:${file}:${st.size}:${st.mtimeMs}:${count}`;
}
