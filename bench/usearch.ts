/**
 * The usearch engine against ambiqa's exact index on the same vectors (a script, not a test):
 * `npx tsx bench/usearch.ts [--n 50000] [--queries 200]`
 *
 * Synthetic 384-dimensional unit vectors (MiniLM's width; clustered, so neighbours are not all
 * equidistant) are written as a float16 `.npy` beside an id list, imported with
 * `importUsearchIndex` (f16 and i8), opened by memory map and queried with held-out vectors;
 * recall@10 is measured against `ExactIndex` over the same float32 vectors. Prints import time,
 * query latency p50/p99, recall, index size on disk, and the process's RSS after opening (which
 * shows the memory map costs little until queried). No model runs: the vectors are synthetic.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { corpusFromPassages } from '../src/retrieval/corpus';
import type { Embedder, Passage } from '../src/retrieval/types';
import { floatToHalf, importUsearchIndex, UsearchRetriever } from '../src/retrieval/usearch';
import { ExactIndex } from '../src/retrieval/vector-index';

const { values } = parseArgs({ options: { n: { type: 'string', default: '50000' }, queries: { type: 'string', default: '200' } } });
const n = Number(values.n);
const nq = Number(values.queries);
const D = 384;

let seed = 12345;
const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
const centres = Array.from({ length: 200 }, () => Float32Array.from({ length: D }, gauss));
function unitNear(c: Float32Array): Float32Array {
  const v = Float32Array.from(c, (x) => x + 0.8 * gauss());
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}
const flat = new Float32Array(n * D);
for (let i = 0; i < n; i++) flat.set(unitNear(centres[i % centres.length]!), i * D);
const queries = Array.from({ length: nq }, (_, i) => unitNear(centres[(i * 7) % centres.length]!));

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-bench-usearch-'));
const head = `{'descr': '<f2', 'fortran_order': False, 'shape': (${n}, ${D}), }`;
const header = head + ' '.repeat(64 - ((10 + head.length + 1) % 64)) + '\n';
const pre = Buffer.alloc(10);
pre.writeUInt8(0x93, 0);
pre.write('NUMPY', 1, 'latin1');
pre.writeUInt8(1, 6);
pre.writeUInt16LE(header.length, 8);
const body = Buffer.alloc(n * D * 2);
for (let i = 0; i < flat.length; i++) body.writeUInt16LE(floatToHalf(flat[i]!), i * 2);
writeFileSync(join(dir, 'v.npy'), Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
const passages: Passage[] = Array.from({ length: n }, (_, i) => ({ id: String(i), title: '', text: `p${i}` }));
writeFileSync(join(dir, 'ids.txt'), passages.map((p) => p.id).join('\n') + '\n');
const corpus = corpusFromPassages(passages);
const exact = new ExactIndex(flat, D);
const truth = queries.map((q) => new Set(exact.search(q, 10).map((h) => String(h.id))));
const embedder: Embedder = { name: 'synthetic', dimension: D, embed: async () => [] };

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
console.log(`${n} vectors × ${D}, ${nq} queries; load average ${loadavg()[0]!.toFixed(2)} (shared machine)`);
const t0 = performance.now();
const exactTimes = queries.map((q) => {
  const s = performance.now();
  exact.search(q, 10);
  return performance.now() - s;
});
console.log(`exact (in memory, float32): p50 ${pct(exactTimes, 50).toFixed(2)} ms, p99 ${pct(exactTimes, 99).toFixed(2)} ms (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
for (const quantization of ['f16', 'i8'] as const) {
  const out = join(dir, quantization);
  const s = performance.now();
  await importUsearchIndex(out, { vectors: join(dir, 'v.npy'), ids: join(dir, 'ids.txt') }, { quantization });
  const importS = (performance.now() - s) / 1000;
  const rssBefore = process.memoryUsage().rss;
  const r = await UsearchRetriever.open(out, { embedder, passage: (id) => corpus.byId(id) });
  const rssOpen = process.memoryUsage().rss;
  let found = 0;
  const times = queries.map((q, i) => {
    const t = performance.now();
    const hits = r.searchVector(q, 10);
    const ms = performance.now() - t;
    for (const h of hits) if (truth[i]!.has(h.passage.id)) found++;
    return ms;
  });
  const size = statSync(join(out, 'index.usearch')).size;
  console.log(
    `usearch ${quantization}: import ${importS.toFixed(1)} s, index ${(size / 2 ** 20).toFixed(1)} MiB, open +${((rssOpen - rssBefore) / 2 ** 20).toFixed(1)} MiB RSS, ` +
      `p50 ${pct(times, 50).toFixed(2)} ms, p99 ${pct(times, 99).toFixed(2)} ms, recall@10 ${(found / (nq * 10)).toFixed(3)}`,
  );
}
rmSync(dir, { recursive: true, force: true });
