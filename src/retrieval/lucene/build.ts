/**
 * `ambiqa index --engine lucene`: a corpus file streamed into Anserini's JsonCollection and
 * indexed by Anserini's own IndexCollection, so the result is in Anserini/Pyserini's layout and
 * its searcher, Pyserini, or Anserini's tools open it as they open a prebuilt index.
 *
 * Each document is `{"id", "contents", "title", "section"?, "source"?}` with `contents` the
 * passage as ambiqa's in-memory BM25 indexes it (`Title | Section; text`, formatPassage), so both
 * engines score the same words; the raw document is stored (`-storeRaw`), so hits come back with
 * their passage and a 21M-passage run keeps none of them in its own memory.
 *
 * Nothing half-built is ever where the index goes: the build runs in `<out>.building/` and is
 * renamed into place once Anserini has committed and counted every passage. An interrupted build
 * starts over (its leftovers are removed first); an existing `<out>` is only replaced with `force`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ANSERINI } from '../../config/lucene';
import { AmbiqaError } from '../../errors';
import { formatPassage } from '../types';
import { ANNOTATIONS_FILE, inspectIndex, META_FILE, type IndexInfo, type IndexMeta } from './index-dir';
import { streamPassages, type PassageFormat, type StreamProgress } from './passage-stream';
import { luceneRuntime } from './searcher';

export interface BuildOptions {
  from: PassageFormat;
  file: string;
  out: string;
  /** Indexing threads (Anserini works one collection file per thread). Default 2. */
  threads?: number;
  /** Passages per collection file. Default 250,000. */
  filePassages?: number;
  /** Replace an existing index at `out`. */
  force?: boolean;
  /** Merge into one segment when done (slower build, somewhat faster search). */
  optimize?: boolean;
  onProgress?: (p: StreamProgress) => void;
  /** Anserini's log lines. */
  log?: (line: string) => void;
}

export interface BuildResult {
  info: IndexInfo;
  passages: number;
  seconds: number;
  convertSeconds: number;
}

async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

async function closeStream(stream: WriteStream): Promise<void> {
  stream.end();
  await once(stream, 'finish');
}

export async function buildLuceneIndex(options: BuildOptions): Promise<BuildResult> {
  const started = Date.now();
  const out = resolve(options.out);
  if (existsSync(out) && !options.force) {
    throw new AmbiqaError(`--out ${out} already exists`, 'give another folder, or --force to replace it');
  }
  const { java, jar } = luceneRuntime();
  const work = join(dirname(out), `.${basename(out)}.building`);
  // A build that was interrupted left this behind; its collection may be cut short, so start over.
  rmSync(work, { recursive: true, force: true });
  const collection = join(work, 'collection');
  const indexDir = join(work, 'index');
  mkdirSync(collection, { recursive: true });
  let stream: WriteStream | undefined;
  try {
    const perFile = options.filePassages ?? 250_000;
    const owned = new Map<string, string[]>();
    let count = 0;
    for await (const p of streamPassages(options.file, options.from, options.onProgress ? { onProgress: options.onProgress } : {})) {
      if (count % perFile === 0) {
        if (stream) await closeStream(stream);
        stream = createWriteStream(join(collection, `part-${String(count / perFile).padStart(5, '0')}.jsonl`));
        await once(stream, 'open');
      }
      const doc: Record<string, string> = { id: p.id, contents: formatPassage(p), title: p.title };
      if (p.section) doc.section = p.section;
      if (p.source) doc.source = p.source;
      await write(stream!, `${JSON.stringify(doc)}\n`);
      for (const q of p.annotatedFor ?? []) {
        let ids = owned.get(q);
        if (!ids) owned.set(q, (ids = []));
        ids.push(p.id);
      }
      count++;
    }
    if (stream) await closeStream(stream);
    stream = undefined;
    if (count === 0) throw new AmbiqaError(`${options.file}: no passages`, 'the file has only a header or blank lines');
    const convertSeconds = (Date.now() - started) / 1000;

    const heap = indexerHeap();
    const args = [
      `-Xmx${heap.spec}`,
      '--enable-native-access=ALL-UNNAMED',
      '-cp',
      jar,
      'io.anserini.index.IndexCollection',
      '-collection',
      'JsonCollection',
      '-generator',
      'DefaultLuceneDocumentGenerator',
      '-input',
      collection,
      '-index',
      indexDir,
      '-threads',
      String(options.threads ?? 2),
      '-storeRaw',
      // Anserini's default RAM buffer is 4096 MB whatever the heap: past a few million passages
      // the buffer outgrows a 2-3 GB heap and the IndexWriter dies of OutOfMemoryError ("this
      // IndexWriter is closed"; seen at 21M passages). A third of the heap leaves room for the
      // threads' stored-field compression and the merges.
      '-memoryBuffer',
      String(Math.max(64, Math.floor(heap.mb / 3))),
      ...(options.optimize ? ['-optimize'] : []),
    ];
    const indexed = await runIndexer(java, args, options.log);
    if (indexed !== count) {
      throw new AmbiqaError(`Anserini indexed ${indexed ?? 'an unknown number of'} of the ${count} passages of ${options.file}; the index was not kept`, 'see the indexer log above');
    }
    const meta: IndexMeta = {
      format: options.from,
      source: resolve(options.file),
      passages: count,
      builtAt: new Date().toISOString(),
      seconds: (Date.now() - started) / 1000,
      anserini: ANSERINI.jar,
    };
    writeFileSync(join(indexDir, META_FILE), `${JSON.stringify(meta, null, 2)}\n`);
    writeFileSync(
      join(indexDir, ANNOTATIONS_FILE),
      [...owned].map(([q, ids]) => JSON.stringify({ q, ids })).join('\n') + (owned.size ? '\n' : ''),
    );
    rmSync(join(indexDir, 'write.lock'), { force: true });
    rmSync(collection, { recursive: true, force: true });
    if (existsSync(out)) rmSync(out, { recursive: true, force: true });
    renameSync(indexDir, out);
    rmSync(work, { recursive: true, force: true });
    return { info: inspectIndex(out, '--out'), passages: count, seconds: (Date.now() - started) / 1000, convertSeconds };
  } catch (error) {
    // Stop writing before the folder goes (a stream still open would fail on its own later).
    if (stream) {
      stream.destroy();
      await once(stream, 'close').catch(() => undefined);
    }
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

/** Run IndexCollection; its count of indexed documents, from its closing log line. */
/** The indexer JVM's heap: `AMBIQA_LUCENE_INDEX_HEAP` (e.g. 3g, 4096m), default 3g; the searcher has its own, AMBIQA_LUCENE_HEAP. */
export function indexerHeap(value = process.env.AMBIQA_LUCENE_INDEX_HEAP): { spec: string; mb: number } {
  const spec = value?.trim() || '3g';
  const m = /^(\d+)([gGmM])$/.exec(spec);
  if (!m) throw new AmbiqaError(`AMBIQA_LUCENE_INDEX_HEAP=${spec}: give a heap size such as 3g or 4096m`);
  const mb = Number(m[1]) * (m[2]!.toLowerCase() === 'g' ? 1024 : 1);
  if (mb < 256) throw new AmbiqaError(`AMBIQA_LUCENE_INDEX_HEAP=${spec}: at least 256m`);
  return { spec, mb };
}

async function runIndexer(java: string, args: string[], log?: (line: string) => void): Promise<number | undefined> {
  const child = spawn(java, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tailText = '';
  // The first fatal cause, kept whatever follows: the error that ends the run is often only a
  // consequence of it ("this IndexWriter is closed" after an OutOfMemoryError in another thread).
  let firstCause: string | undefined;
  let indexed: number | undefined;
  let carry = '';
  const onData = (d: Buffer) => {
    carry += d.toString();
    const lines = carry.split('\n');
    carry = lines.pop() ?? '';
    for (const line of lines) {
      tailText = (tailText + line + '\n').slice(-4_000);
      if (firstCause === undefined && /OutOfMemoryError|No space left|Caused by:/.test(line)) firstCause = line.trim().slice(0, 300);
      const m = /Total ([\d,]+) documents indexed/.exec(line);
      if (m) indexed = Number(m[1]!.replaceAll(',', ''));
      if (log && line.trim() && !line.startsWith('WARNING')) log(line);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const stopChild = () => child.kill('SIGTERM');
  process.once('exit', stopChild);
  const [code] = (await once(child, 'close')) as [number | null];
  process.off('exit', stopChild);
  if (code !== 0) {
    const why = tailText
      .split('\n')
      .filter((l) => /Exception|Error|error/.test(l))
      .slice(-2)
      .join(' | ');
    const cause = firstCause && !why.includes(firstCause) ? `${firstCause} | ` : '';
    throw new AmbiqaError(
      `Anserini's IndexCollection failed (status ${code}): ${cause}${why.slice(0, 400) || 'see its log'}`,
      /OutOfMemoryError/.test(cause + why) ? 'give the indexer more heap: AMBIQA_LUCENE_INDEX_HEAP=6g (default 3g)' : undefined,
    );
  }
  return indexed;
}
