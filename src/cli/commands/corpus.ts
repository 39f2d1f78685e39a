import { existsSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { dataDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { loadCorpus, saveCorpus } from '../../retrieval/corpus';
import { buildCorpus, defaultSources, SOURCE_KINDS, type CorpusSource, type SourceKind } from '../../retrieval/corpus-builder';

export const summary = 'build a passage corpus (JSONL) from the evaluation data or your own passages';

const HELP = `usage: ambiqa corpus build --out <file> [--from <kind>=<path> ...] [--window <words>]
       ambiqa corpus info <file>

build   pool passages into one JSONL corpus: ~100-word windows, "Title | Section; text",
        stable ids, duplicates dropped. Without --from, every known file under the data
        folder (${dataDir()}) is pooled.
        --from kinds: ${SOURCE_KINDS.join(', ')}
          asqa=<ASQA json>                  qa_pairs[].context and annotations[].knowledge[]
          qa-feedback=<dev.json>            the wikipage: … text: … passages in each "text"
          hotpotqa-adversarial=<sim_*.json> the 4 paragraphs of each question
          2wikimultihop=<dev.json>          the 10 paragraphs of each question
          fever=<paper_test_processed.jsonl> gold evidence sentences grouped by page
          jsonl=<file>                      your passages, one {"id"?, "title", "section"?, "text",
                                            "annotated_for"?} a line
        --window <words>  target passage length (default 100)
info    count the passages of a corpus file and check every line`;

function parseFrom(values: string[]): CorpusSource[] {
  return values.map((value) => {
    const eq = value.indexOf('=');
    const kind = value.slice(0, eq) as SourceKind;
    const path = value.slice(eq + 1);
    if (eq <= 0 || !SOURCE_KINDS.includes(kind) || !path) {
      throw new AmbiqaError(`--from ${value}: expected <kind>=<path>`, `kind is one of ${SOURCE_KINDS.join(', ')}`);
    }
    return { kind, path };
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      from: { type: 'string', multiple: true },
      window: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [sub, file] = positionals;
  if (values.help || !sub) {
    console.log(HELP);
    return values.help ? 0 : 1;
  }
  if (sub === 'info') {
    if (!file) throw new AmbiqaError('corpus info needs a file', 'ambiqa corpus info <file>');
    const corpus = loadCorpus(file);
    const bySource = new Map<string, number>();
    for (const p of corpus.passages) bySource.set(p.source ?? 'user', (bySource.get(p.source ?? 'user') ?? 0) + 1);
    console.log(`${file}: ${corpus.passages.length} passages, sha256 ${corpus.hash.slice(0, 16)}…`);
    for (const [source, n] of bySource) console.log(`  ${source.padEnd(22)} ${n}`);
    return 0;
  }
  if (sub !== 'build') throw new AmbiqaError(`unknown corpus subcommand '${sub}'`, 'use `ambiqa corpus build` or `ambiqa corpus info`');
  if (!values.out) throw new AmbiqaError('--out is required', 'ambiqa corpus build --out corpus.jsonl');
  const window = values.window === undefined ? 100 : Number(values.window);
  if (!Number.isInteger(window) || window <= 0) throw new AmbiqaError(`--window must be a positive integer, got ${values.window}`, 'e.g. --window 100');
  const sources = values.from?.length ? parseFrom(values.from) : defaultSources();
  for (const s of sources) if (!existsSync(s.path)) throw new AmbiqaError(`--from ${s.kind}=${s.path}: file does not exist`, 'check the path');
  const started = Date.now();
  const built = buildCorpus(sources, { windowWords: window });
  const corpus = saveCorpus(values.out, built.passages);
  for (const s of built.stats) {
    console.log(`  ${s.kind.padEnd(22)} ${String(s.documents).padStart(6)} documents → ${String(s.passages).padStart(6)} passages (${s.duplicates} duplicates dropped)  ${s.path}`);
  }
  const mb = (statSync(values.out).size / 1e6).toFixed(1);
  console.log(`wrote ${corpus.passages.length} passages to ${values.out} (${mb} MB, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return 0;
}
