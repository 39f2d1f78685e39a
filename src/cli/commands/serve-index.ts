import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { parsePositiveInt } from '../../experiments/cli-support';
import { inspectIndex } from '../../retrieval/lucene/index-dir';
import { announceSearcher, startSearcher } from '../../retrieval/lucene/searcher';

export const summary = 'serve a Lucene index (Anserini REST search) once per machine, shared by runs, sweeps and Slurm shards';

const HELP = `usage: ambiqa serve-index <dir> [options]

Starts one Anserini REST searcher over the Lucene index <dir> (built by \`ambiqa index\`, or a
Pyserini prebuilt index) and prints its base URL. Runs on this machine whose config says
retriever: {type: bm25, engine: lucene, index: <dir>} find it and use it instead of starting a
searcher of their own; other machines can use it by URL:
  retriever: {type: bm25, engine: lucene, url: <printed URL>, indexName: corpus}
Ctrl-C, SIGTERM or SIGHUP stops it; so does this command's end for any other reason.

options:
  --port P   port (default: a free one)
  --host H   address to bind (default 127.0.0.1; the API has no authentication)
  -h, --help this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new AmbiqaError('give the index folder: `ambiqa serve-index <dir>`');
  const dir = resolve(positionals[0]!);
  const info = inspectIndex(dir, 'serve-index');
  const port = values.port !== undefined ? parsePositiveInt(values.port, '--port') : undefined;
  if (port !== undefined && port > 65535) throw new AmbiqaError(`--port ${port}: must be at most 65535`);
  console.error(`starting a Lucene searcher over ${dir} (Lucene ${info.luceneVersion})…`);
  const searcher = await startSearcher(dir, { ...(values.host ? { host: values.host } : {}), ...(port !== undefined ? { port } : {}) });
  const withdraw = announceSearcher(dir, searcher);
  let stopping = false;
  const onSignal = (name: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${name}: stopping the searcher`);
    withdraw();
    void searcher.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  console.log(searcher.url);
  console.error(`serving ${dir} as '${searcher.indexName}' at ${searcher.url}; runs on this machine with retriever.index=${dir} use it. Ctrl-C stops it.`);
  try {
    const code = await searcher.owned!.exited;
    withdraw();
    if (stopping) return 0;
    console.error(`the searcher exited by itself (code ${code})`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}
