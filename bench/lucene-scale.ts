/**
 * BM25 at scale (a script, not a test): Lucene (Anserini, on disk) beside ambiqa's in-memory BM25
 * and bm25s, on one synthetic corpus, in one run:
 *
 *   npx tsx bench/lucene-scale.ts [--passages 1000000] [--memory-passages 500000]
 *        [--bm25s-passages 1000000] [--bm25s-python /tmp/bm25s-venv/bin/python] [--dir <work dir>]
 *        [--queries 200] [--skip memory,bm25s]
 *
 * Needs `npx ambiqa setup --only lucene`, and for bm25s a Python with `bm25s` (PyPI) installed
 * (a venv of your own; skipped when absent).
 *
 * The corpus: DPR's TSV layout (`id<TAB>text<TAB>title`), `--passages` rows of 100 words drawn
 * from the pooled corpus's own word distribution (titles of 2 words), with the 8,470 real pooled
 * passages planted at even intervals: the questions' answers are only in the real ones, so AC@k
 * says whether retrieval still finds them among a million distractors.
 *
 * Measured, each in its own process so peak RSS belongs to one engine:
 * - Lucene: `ambiqa index --from dpr-tsv` wall time and the peak RSS of its largest process (the
 *   JVM), index size on disk; queries (ASQA dev questions, k = 10) p50/p99 one at a time and at
 *   concurrency 8 through the searcher; the querying Node process's RSS; AC@5..100 over ASQA dev.
 * - In-memory BM25 (src/retrieval/bm25.ts) on the first `--memory-passages` rows: build time,
 *   peak RSS, query p50/p99.
 * - bm25s on the first `--bm25s-passages` rows: the same.
 * Then the ratios, side by side. The machine may be shared: the load average is printed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Bm25Retriever } from '../src/retrieval/bm25';
import { corpusFromPassages } from '../src/retrieval/corpus';
import { buildCorpus, defaultSources } from '../src/retrieval/corpus-builder';
import { measureCoverage, readAsqaCoverageItems } from '../src/retrieval/coverage';
import { dataDir } from '../src/config/paths';
import { streamPassages } from '../src/retrieval/lucene/passage-stream';
import { LuceneRetriever } from '../src/retrieval/lucene/retriever';
import type { Passage, Retriever } from '../src/retrieval/types';

const { values } = parseArgs({
  options: {
    passages: { type: 'string', default: '1000000' },
    'memory-passages': { type: 'string', default: '500000' },
    'bm25s-passages': { type: 'string', default: '1000000' },
    'bm25s-python': { type: 'string', default: '/tmp/hl-bm25s/bin/python' },
    dir: { type: 'string', default: join(tmpdir(), 'ambiqa-lucene-scale') },
    queries: { type: 'string', default: '200' },
    skip: { type: 'string', default: '' },
    phase: { type: 'string' },
  },
});
const dir = resolve(values.dir!);
const total = Number(values.passages);
const tsv = join(dir, `synthetic-${total}.tsv`);
const indexDir = join(dir, `lucene-${total}`);
const nQueries = Number(values.queries);
const skip = new Set(values.skip!.split(',').filter(Boolean));
const asqaPath = join(dataDir(), 'asqa', 'ASQA_dev.json');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

function rssMiB(): number {
  return process.memoryUsage().rss / 2 ** 20;
}

/** Peak RSS of this process (getrusage's maxRSS, in MiB). */
function peakMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}

function queries(): string[] {
  return readAsqaCoverageItems(asqaPath)
    .map((i) => i.question)
    .slice(0, nQueries);
}

async function latencies(retriever: Retriever, qs: string[], concurrency: number, k = 10): Promise<{ p50: number; p99: number; qps: number }> {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < qs.length) {
        const q = qs[next++]!;
        const t = performance.now();
        await retriever.search(q, k);
        times.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), qps: qs.length / seconds };
}

/** The synthetic TSV: words drawn from the pooled corpus's unigram distribution, real passages planted. */
async function generate(): Promise<void> {
  if (existsSync(tsv)) return;
  mkdirSync(dir, { recursive: true });
  const real = buildCorpus(defaultSources()).passages;
  const words: string[] = [];
  for (const p of real) for (const w of p.text.split(/\s+/)) if (w) words.push(w);
  let seed = 42;
  const rand = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  const pick = () => words[Math.floor(rand() * words.length)]!;
  const out = createWriteStream(`${tsv}.partial`);
  const write = async (line: string) => {
    if (!out.write(line)) await once(out, 'drain');
  };
  await write('id\ttext\ttitle\n');
  const every = Math.floor(total / real.length);
  let planted = 0;
  const clean = (s: string) => s.replace(/[\t\n\r]/g, ' ');
  for (let i = 0; i < total; i++) {
    if (i % every === 0 && planted < real.length) {
      const p = real[planted++]!;
      await write(`${p.id}\t${clean(p.text)}\t${clean(p.section ? `${p.title} | ${p.section}` : p.title)}\n`);
      continue;
    }
    const text = Array.from({ length: 100 }, pick).join(' ');
    await write(`${i + 1}\t${clean(text)}\t${clean(`${pick()} ${pick()}`)}\n`);
  }
  out.end();
  await once(out, 'finish');
  execFileSync('mv', [`${tsv}.partial`, tsv]);
}

/** Run a command, returning wall seconds and the peak RSS (MiB) of its largest process (GNU time). */
function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { seconds: number; peakMiB: number; stdout: string } {
  const timeFile = join(dir, 'time.txt');
  const started = Date.now();
  const stdout = execFileSync('/usr/bin/time', ['-f', '%M', '-o', timeFile, cmd, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
  return { seconds: (Date.now() - started) / 1000, peakMiB: Number(readFileSync(timeFile, 'utf8').trim().split('\n').pop()) / 1024, stdout };
}

async function phaseLucene(): Promise<Record<string, unknown>> {
  let build: { seconds: number; peakMiB: number } | undefined;
  if (!existsSync(indexDir)) {
    const r = timed(process.execPath, ['bin/ambiqa.mjs', 'index', '--from', 'dpr-tsv', tsv, '--engine', 'lucene', '--out', indexDir, '--quiet']);
    build = { seconds: r.seconds, peakMiB: r.peakMiB };
  }
  const diskMiB = Number(execFileSync('du', ['-sm', indexDir], { encoding: 'utf8' }).split('\t')[0]);
  const rssBefore = rssMiB();
  const retriever = new LuceneRetriever({ index: indexDir });
  await retriever.preflight();
  const qs = queries();
  await latencies(retriever, qs.slice(0, 20), 1); // warm the JVM and the page cache a little
  const alone = await latencies(retriever, qs, 1);
  const conc8 = await latencies(retriever, qs, 8);
  const items = readAsqaCoverageItems(asqaPath);
  const coverage = await measureCoverage(items, retriever, [5, 10, 20, 50, 100]);
  const result = { build, diskMiB, alone, conc8, runRssMiB: rssMiB(), runPeakMiB: peakMiB(), rssBeforeMiB: rssBefore, coverage: coverage.coverage, coverageSeconds: coverage.seconds };
  await retriever.close();
  return result;
}

async function phaseMemory(n: number): Promise<Record<string, unknown>> {
  const started = Date.now();
  const passages: Passage[] = [];
  for await (const p of streamPassages(tsv, 'dpr-tsv')) {
    passages.push(p);
    if (passages.length >= n) break;
  }
  const loadSeconds = (Date.now() - started) / 1000;
  const t = Date.now();
  const retriever = Bm25Retriever.create(corpusFromPassages(passages), {}, { cache: false });
  const buildSeconds = (Date.now() - t) / 1000;
  const alone = await latencies(retriever, queries(), 1);
  return { passages: n, loadSeconds, buildSeconds, alone, peakMiB: peakMiB(), rssMiB: rssMiB() };
}

const BM25S = String.raw`
import json, resource, sys, time
import bm25s
tsv, n, qfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.time()
corpus = []
with open(tsv, encoding="utf-8") as f:
    next(f)
    for line in f:
        i, text, title = line.rstrip("\n").split("\t")
        corpus.append(title + "; " + text)
        if len(corpus) >= n:
            break
load = time.time() - t0
t1 = time.time()
tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
retriever = bm25s.BM25(k1=0.9, b=0.4)
retriever.index(tokens, show_progress=False)
build = time.time() - t1
qs = json.load(open(qfile))
times = []
for q in qs:
    s = time.perf_counter()
    retriever.retrieve(bm25s.tokenize([q], stopwords="en", show_progress=False), k=10, show_progress=False)
    times.append((time.perf_counter() - s) * 1000)
times.sort()
p = lambda x: times[min(len(times) - 1, int(x / 100 * len(times)))]
print(json.dumps({"passages": len(corpus), "loadSeconds": load, "buildSeconds": build, "alone": {"p50": p(50), "p99": p(99), "qps": len(times) / (sum(times) / 1000)}, "peakMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
`;

function phaseBm25s(n: number): Record<string, unknown> | undefined {
  const python = values['bm25s-python']!;
  if (!existsSync(python)) return undefined;
  const qfile = join(dir, 'queries.json');
  writeFileSync(qfile, JSON.stringify(queries()));
  const out = execFileSync(python, ['-c', BM25S, tsv, String(n), qfile], { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

/** One phase in a child process of its own, so its peak RSS is its own. */
async function child(phase: string): Promise<Record<string, unknown>> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/lucene-scale.ts', ...process.argv.slice(2), '--phase', phase], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const [code] = (await once(proc, 'close')) as [number];
  if (code !== 0) throw new Error(`phase ${phase} failed (${code})`);
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

async function main(): Promise<void> {
  if (values.phase) {
    const n = (key: 'memory-passages' | 'bm25s-passages') => Math.min(total, Number(values[key]));
    const result = values.phase === 'lucene' ? await phaseLucene() : values.phase === 'memory' ? await phaseMemory(n('memory-passages')) : phaseBm25s(n('bm25s-passages'));
    console.log(JSON.stringify(result ?? null));
    return;
  }
  const load = () => loadavg()[0]!.toFixed(2);
  console.error(`machine: ${cpus().length} cores, load ${load()} at start (shared machine)`);
  const g = Date.now();
  await generate();
  console.error(`corpus ${tsv} ready (${((Date.now() - g) / 1000).toFixed(0)} s)`);
  const lucene = await child('lucene');
  console.error(`lucene done, load ${load()}`);
  const memory = skip.has('memory') ? undefined : await child('memory');
  console.error(`in-memory done, load ${load()}`);
  const bm25s = skip.has('bm25s') ? undefined : await child('bm25s');
  console.error(`bm25s done, load ${load()}`);
  const report = { passages: total, tsv, load: load(), lucene, memory, bm25s };
  writeFileSync(join(dir, `report-${total}.json`), JSON.stringify(report, null, 1));
  const l = lucene as { build?: { seconds: number; peakMiB: number }; diskMiB: number; alone: { p50: number; p99: number; qps: number }; conc8: { p50: number; p99: number; qps: number }; runPeakMiB: number; coverage: number[] };
  const row = (name: string, n: number | string, build: string, peak: string, p50: number, p99: number, qps: number) =>
    console.log(`${name.padEnd(22)}${String(n).padStart(10)}${build.padStart(10)}${peak.padStart(11)}${p50.toFixed(1).padStart(9)}${p99.toFixed(1).padStart(9)}${qps.toFixed(0).padStart(8)}`);
  console.log(`${'engine'.padEnd(22)}${'passages'.padStart(10)}${'build s'.padStart(10)}${'peak MiB'.padStart(11)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'q/s'.padStart(8)}`);
  row('lucene (1 client)', total, l.build ? l.build.seconds.toFixed(0) : 'cached', l.build ? l.build.peakMiB.toFixed(0) : '-', l.alone.p50, l.alone.p99, l.alone.qps);
  row('lucene (8 clients)', total, '', '', l.conc8.p50, l.conc8.p99, l.conc8.qps);
  const m = memory as { passages: number; buildSeconds: number; loadSeconds: number; peakMiB: number; alone: { p50: number; p99: number; qps: number } } | undefined;
  if (m) row('ambiqa in-memory bm25', m.passages, (m.buildSeconds + m.loadSeconds).toFixed(0), m.peakMiB.toFixed(0), m.alone.p50, m.alone.p99, m.alone.qps);
  const b = bm25s as typeof m;
  if (b) row('bm25s', b.passages, (b.buildSeconds + b.loadSeconds).toFixed(0), b.peakMiB.toFixed(0), b.alone.p50, b.alone.p99, b.alone.qps);
  console.log(`lucene index on disk: ${l.diskMiB} MiB; querying Node process peak RSS ${l.runPeakMiB.toFixed(0)} MiB (the JVM searcher is separate)`);
  console.log(`lucene AC@5/10/20/50/100 over ASQA dev at ${total} passages: ${l.coverage.map((c) => c.toFixed(1)).join(' / ')}`);
  if (b) console.log(`ratios: lucene/bm25s q/s (1 client) ${(l.alone.qps / b.alone.qps).toFixed(2)}x, (8 clients) ${(l.conc8.qps / b.alone.qps).toFixed(2)}x; bm25s peak / lucene build peak ${l.build ? (b.peakMiB / l.build.peakMiB).toFixed(2) : '?'}x`);
  if (m) console.log(`ratios: lucene/in-memory q/s (1 client) ${(l.alone.qps / m.alone.qps).toFixed(2)}x at ${total} vs ${m.passages} passages`);
}

await main();
