import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { parsePositiveInt } from '../../experiments/cli-support';
import { buildLuceneIndex } from '../../retrieval/lucene/build';
import { PASSAGE_FORMATS, type PassageFormat } from '../../retrieval/lucene/passage-stream';
import { luceneRuntime } from '../../retrieval/lucene/searcher';
import { runSetup } from '../../setup/setup';

export const summary = 'build an on-disk Lucene BM25 index (Anserini) of a large corpus: DPR psgs_w100.tsv or ambiqa JSONL';

const HELP = `usage: ambiqa index --from dpr-tsv|jsonl <file> --engine lucene --out <dir> [options]

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

options:
  --engine lucene   the only on-disk BM25 engine (default)
  --threads N       indexing threads (default 2)
  --optimize        merge into one segment at the end (slower build, faster search)
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
  if (!values.from || !(PASSAGE_FORMATS as readonly string[]).includes(values.from)) {
    throw new AmbiqaError(`--from ${values.from ?? '(missing)'}: give ${PASSAGE_FORMATS.join(' or ')}`, 'see `npx ambiqa index --help`');
  }
  if (positionals.length !== 1) throw new AmbiqaError(`give one corpus file after --from ${values.from} (got ${positionals.length})`, 'see `npx ambiqa index --help`');
  if ((values.engine ?? 'lucene') !== 'lucene') throw new AmbiqaError(`--engine ${values.engine}: only lucene builds an on-disk BM25 index`);
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
