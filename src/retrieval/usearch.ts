/**
 * Dense retrieval at scale (`retriever: {type: dense, engine: usearch}`): an approximate HNSW
 * index in USearch's file format (npm `usearch`, a prebuilt native binary), stored as f16, i8
 * or f32, and opened read-only by memory map (`Index.view`), so a run over millions of vectors
 * holds in memory only the pages its queries touch. The exact and IVF indexes of
 * vector-index.ts keep every vector in the process and stay the default for small corpora.
 *
 * An index folder holds:
 *   index.usearch   the HNSW graph and vectors; key i is row i
 *   ids.txt         the passage id of row i, one per line, so hits map back to passages (and to
 *                   DPR's numeric ids, which published outputs cite)
 *   meta.json       dimension, count, quantization, metric, where the vectors came from and a
 *                   build id; written last, so a folder without it is an unfinished build and
 *                   never opens as an index
 *   build/          while building from the embedder: the vectors embedded so far and how many
 *                   rows they are, so an interrupted build resumes where it stopped
 *
 * Vectors come from ambiqa's embedder (MiniLM; embedded in chunks with progress), or are imported
 * from vectors computed elsewhere (a GPU): a `.npy` file of float32 or float16 rows, or raw
 * little-endian f16 with `dimension` given, beside an id list of as many lines. Queries are
 * embedded with ambiqa's embedder, so imported vectors must come from the same model.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { formatPassage, type Embedder, type Passage, type Retriever, type ScoredPassage } from './types';
import { validateK } from './validate';

type USearch = typeof import('usearch');
let loaded: Promise<USearch> | undefined;
/** The native module, loaded on first use only (runs without a USearch index never load it). */
function usearch(): Promise<USearch> {
  loaded ??= import('usearch');
  return loaded;
}

export const USEARCH_QUANTIZATIONS = ['f32', 'f16', 'i8'] as const;
export type UsearchQuantization = (typeof USEARCH_QUANTIZATIONS)[number];
export type UsearchMetric = 'cos' | 'ip';

export interface UsearchMeta {
  format: 1;
  dimension: number;
  count: number;
  quantization: UsearchQuantization;
  metric: UsearchMetric;
  connectivity: number;
  /** `embedder:<name>` or `import:<file name>`. */
  source: string;
  /** Changes with every build: part of the retriever's identity (params, retrieval cache). */
  buildId: string;
  builtAt: string;
}

const META = 'meta.json';
const INDEX = 'index.usearch';
const IDS = 'ids.txt';

export interface UsearchBuildOptions {
  quantization?: UsearchQuantization;
  metric?: UsearchMetric;
  /** HNSW connectivity (M); USearch's default when 0. */
  connectivity?: number;
  /** Rows embedded (or read) per step; progress is reported and saved after each. */
  chunk?: number;
  onProgress?: (done: number, total: number, phase: 'embed' | 'index') => void;
}

/** Writes `text` to `path` whole or not at all (temp file, then rename). */
function writeAtomic(path: string, text: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export function isUsearchIndex(dir: string): boolean {
  return existsSync(join(dir, META));
}

function readMeta(dir: string): UsearchMeta {
  const path = join(dir, META);
  if (!existsSync(path)) {
    const unfinished = existsSync(join(dir, 'build')) || existsSync(join(dir, INDEX));
    throw new AmbiqaError(
      `usearch index ${dir}: ${unfinished ? 'an unfinished build (no meta.json)' : 'not a usearch index folder (no meta.json)'}`,
      unfinished ? 'run again with the same corpus to resume the build, or delete the folder' : 'give the folder an index was built into',
    );
  }
  let meta: Partial<UsearchMeta>;
  try {
    meta = JSON.parse(readFileSync(path, 'utf8')) as Partial<UsearchMeta>;
  } catch (error) {
    throw new AmbiqaError(`usearch index ${path}: not JSON (${(error as Error).message})`);
  }
  if (meta.format !== 1 || !Number.isInteger(meta.dimension) || !Number.isInteger(meta.count) || !USEARCH_QUANTIZATIONS.includes(meta.quantization!)) {
    throw new AmbiqaError(`usearch index ${path}: not a meta.json this version of ambiqa wrote`, 'rebuild the index');
  }
  return meta as UsearchMeta;
}

/** Rows of vectors, read in chunks: from a file being built, a .npy or a raw f16 file. */
interface VectorSource {
  count: number;
  dimension: number;
  /** Rows [start, start + n) as float32. */
  read(start: number, n: number): Float32Array;
  close(): void;
}

/** IEEE half → single precision (Node 20 has no Float16Array). */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** Single → IEEE half precision, round to nearest (for writing f16 vectors). */
export function floatToHalf(value: number): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  f[0] = value;
  const x = u[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (((x >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let half = mant >> shift;
    if ((mant >> (shift - 1)) & 1) half++;
    return sign | half;
  }
  let half = sign | (exp << 10) | (mant >> 13);
  if (mant & 0x1000) half++;
  return half;
}

function fileSource(path: string, offset: number, count: number, dimension: number, kind: 'f32' | 'f16'): VectorSource {
  const fd = openSync(path, 'r');
  const width = kind === 'f32' ? 4 : 2;
  return {
    count,
    dimension,
    read(start, n) {
      const bytes = Buffer.alloc(n * dimension * width);
      const got = readSync(fd, bytes, 0, bytes.length, offset + start * dimension * width);
      if (got !== bytes.length) throw new AmbiqaError(`${path}: ends before row ${start + n} (truncated)`);
      if (kind === 'f32') return new Float32Array(bytes.buffer, bytes.byteOffset, n * dimension).slice();
      const out = new Float32Array(n * dimension);
      for (let i = 0; i < out.length; i++) out[i] = halfToFloat(bytes.readUInt16LE(i * 2));
      return out;
    },
    close: () => closeSync(fd),
  };
}

/**
 * A `.npy` file of a 2-D float32 or float16 matrix in C order (numpy's `np.save`), read by rows;
 * anything else is refused in one line naming the file.
 */
export function openNpy(path: string): VectorSource {
  if (!existsSync(path)) throw new AmbiqaError(`vectors ${path}: file not found`);
  const fd = openSync(path, 'r');
  let header: string;
  let offset: number;
  try {
    const head = Buffer.alloc(12);
    readSync(fd, head, 0, 12, 0);
    if (head.readUInt8(0) !== 0x93 || head.toString('latin1', 1, 6) !== 'NUMPY') throw new AmbiqaError(`vectors ${path}: not a .npy file (no \\x93NUMPY magic)`);
    const major = head.readUInt8(6);
    const len = major === 1 ? head.readUInt16LE(8) : head.readUInt32LE(8);
    offset = (major === 1 ? 10 : 12) + len;
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, major === 1 ? 10 : 12);
    header = buf.toString('latin1');
  } finally {
    closeSync(fd);
  }
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  const dims = shape?.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const kind = descr === '<f4' ? 'f32' : descr === '<f2' ? 'f16' : undefined;
  if (!kind) throw new AmbiqaError(`vectors ${path}: dtype ${descr ?? '?'} is not little-endian float32 or float16 ('<f4', '<f2')`, 'save the vectors with np.save(path, vectors.astype(np.float32 or np.float16))');
  if (fortran !== 'False') throw new AmbiqaError(`vectors ${path}: Fortran-ordered arrays are not read`, 'save np.ascontiguousarray(vectors)');
  if (!dims || dims.length !== 2 || dims.some((d) => !Number.isInteger(d) || d <= 0)) throw new AmbiqaError(`vectors ${path}: shape (${shape ?? '?'}) is not (rows, dimension)`);
  const [count, dimension] = dims as [number, number];
  const expected = offset + count * dimension * (kind === 'f32' ? 4 : 2);
  const size = statSync(path).size;
  if (size < expected) throw new AmbiqaError(`vectors ${path}: ${size} bytes, the header's shape (${count}, ${dimension}) needs ${expected} (truncated)`);
  return fileSource(path, offset, count, dimension, kind);
}

/** Raw little-endian f16 rows of `dimension` values (no header). */
export function openRawF16(path: string, dimension: number): VectorSource {
  if (!existsSync(path)) throw new AmbiqaError(`vectors ${path}: file not found`);
  const size = statSync(path).size;
  if (size % (dimension * 2) !== 0) throw new AmbiqaError(`vectors ${path}: ${size} bytes is not a whole number of ${dimension}-dimensional f16 rows`, 'check retriever.dimension');
  return fileSource(path, 0, size / (dimension * 2), dimension, 'f16');
}

/** The id list: one id per line (blank lines at the end ignored). */
function readIds(path: string): string[] {
  if (!existsSync(path)) throw new AmbiqaError(`ids ${path}: file not found`);
  const ids = readFileSync(path, 'utf8').split('\n');
  while (ids.length > 0 && ids[ids.length - 1]!.trim() === '') ids.pop();
  const blank = ids.findIndex((id) => id.trim() === '');
  if (blank >= 0) throw new AmbiqaError(`ids ${path}: line ${blank + 1} is empty`);
  return ids.map((id) => id.trim());
}

/** HNSW over a source's rows, saved with its ids and (last) its meta. */
async function writeIndex(dir: string, source: VectorSource, ids: readonly string[], origin: string, options: UsearchBuildOptions): Promise<UsearchMeta> {
  const { Index, MetricKind, ScalarKind } = await usearch();
  const quantization = options.quantization ?? 'f16';
  const metric = options.metric ?? 'cos';
  const connectivity = options.connectivity ?? 0;
  const index = new Index({
    dimensions: source.dimension,
    metric: metric === 'cos' ? MetricKind.Cos : MetricKind.IP,
    quantization: quantization === 'f32' ? ScalarKind.F32 : quantization === 'f16' ? ScalarKind.F16 : ScalarKind.I8,
    connectivity,
    expansion_add: 0,
    expansion_search: 0,
    multi: false,
  });
  const chunk = options.chunk ?? 4096;
  for (let start = 0; start < source.count; start += chunk) {
    const n = Math.min(chunk, source.count - start);
    const keys = new BigUint64Array(n);
    for (let i = 0; i < n; i++) keys[i] = BigInt(start + i);
    index.add(keys, source.read(start, n));
    options.onProgress?.(start + n, source.count, 'index');
  }
  // The index and ids first, the meta last: a folder with meta.json is complete.
  const tmp = join(dir, `${INDEX}.tmp-${process.pid}`);
  index.save(tmp);
  renameSync(tmp, join(dir, INDEX));
  writeAtomic(join(dir, IDS), ids.join('\n') + '\n');
  const meta: UsearchMeta = {
    format: 1,
    dimension: source.dimension,
    count: source.count,
    quantization,
    metric,
    connectivity: index.connectivity(),
    source: origin,
    buildId: randomUUID(),
    builtAt: new Date().toISOString(),
  };
  writeAtomic(join(dir, META), JSON.stringify(meta, null, 1) + '\n');
  return meta;
}

/**
 * Build an index into `dir` from vectors computed elsewhere: a `.npy` (float32/float16), or raw
 * f16 with `dimension`, and the id list of its rows. Replaces what `dir` held.
 */
export async function importUsearchIndex(
  dir: string,
  input: { vectors: string; ids: string; dimension?: number },
  options: UsearchBuildOptions = {},
): Promise<UsearchMeta> {
  const source = input.vectors.endsWith('.npy')
    ? openNpy(input.vectors)
    : input.dimension
      ? openRawF16(input.vectors, input.dimension)
      : (() => {
          throw new AmbiqaError(`vectors ${input.vectors}: raw f16 vectors need their dimension`, 'set retriever.dimension (e.g. 384 for MiniLM), or give a .npy file');
        })();
  try {
    const ids = readIds(input.ids);
    if (ids.length !== source.count) {
      throw new AmbiqaError(`ids ${input.ids}: ${ids.length} ids for the ${source.count} rows of ${input.vectors}`, 'give one id per vector row, in the same order');
    }
    mkdirSync(dir, { recursive: true });
    rmSync(join(dir, META), { force: true });
    return await writeIndex(dir, source, ids, `import:${input.vectors.split('/').pop()}`, options);
  } finally {
    source.close();
  }
}

/**
 * Passages to embed, read in order from any row on: a corpus in memory, or a file streamed
 * (`ambiqa index --engine usearch`), so a resumed build skips the rows it has and a corpus file
 * larger than memory is never held whole.
 */
export interface PassageSource {
  count: number;
  /** Passages from row `start` on, in row order. */
  from(start: number): AsyncIterable<Passage>;
  /** Every row's id, in row order (called once, after the vectors). */
  ids(): Promise<string[]> | string[];
}

function arraySource(passages: readonly Passage[]): PassageSource {
  return {
    count: passages.length,
    from: async function* (start) {
      for (let i = start; i < passages.length; i++) yield passages[i]!;
    },
    ids: () => passages.map((p) => p.id),
  };
}

/**
 * Build an index into `dir` from `passages` with `embedder`, in chunks: the vectors embedded so
 * far are kept in `dir/build/` with their row count, so a build stopped at any point (killed,
 * out of time) resumes from its last whole chunk. A finished index is returned as is.
 */
export async function buildUsearchIndex(
  dir: string,
  passages: readonly Passage[] | PassageSource,
  embedder: Embedder,
  options: UsearchBuildOptions & { corpusHash?: string } = {},
): Promise<UsearchMeta> {
  if (isUsearchIndex(dir)) return readMeta(dir);
  const source = Array.isArray(passages) ? arraySource(passages as readonly Passage[]) : (passages as PassageSource);
  const d = embedder.dimension;
  const n = source.count;
  const buildDir = join(dir, 'build');
  mkdirSync(buildDir, { recursive: true });
  const vectorsPath = join(buildDir, 'vectors.f32');
  const statePath = join(buildDir, 'state.json');
  const identity = { corpus: options.corpusHash ?? null, count: n, dimension: d, embedder: embedder.name };
  let done = 0;
  if (existsSync(statePath) && existsSync(vectorsPath)) {
    try {
      const state = JSON.parse(readFileSync(statePath, 'utf8')) as typeof identity & { rows: number };
      if (JSON.stringify({ corpus: state.corpus, count: state.count, dimension: state.dimension, embedder: state.embedder }) === JSON.stringify(identity)) done = state.rows;
    } catch {
      /* unreadable state: start over */
    }
  }
  // Rows appended after the last saved count (a kill between the two writes) are dropped.
  if (existsSync(vectorsPath)) truncateSync(vectorsPath, done * d * 4);
  const chunk = options.chunk ?? 512;
  const fd = openSync(vectorsPath, 'a');
  try {
    if (done > 0) options.onProgress?.(done, n, 'embed');
    const rest = source.from(done)[Symbol.asyncIterator]();
    while (done < n) {
      const slice: Passage[] = [];
      while (slice.length < chunk && done + slice.length < n) {
        const next = await rest.next();
        if (next.done) throw new AmbiqaError(`usearch build: the passage source ended after ${done + slice.length} of the ${n} rows it counted`, 'the corpus file changed during the build; run again');
        slice.push(next.value);
      }
      const vectors = await embedder.embed(slice.map(formatPassage));
      const block = new Float32Array(slice.length * d);
      vectors.forEach((v, i) => {
        if (v.length !== d) throw new AmbiqaError(`embedder ${embedder.name} returned ${v.length} dimensions, expected ${d}`);
        block.set(v, i * d);
      });
      writeSync(fd, new Uint8Array(block.buffer));
      done += slice.length;
      writeAtomic(statePath, JSON.stringify({ ...identity, rows: done }));
      options.onProgress?.(done, n, 'embed');
    }
  } finally {
    closeSync(fd);
  }
  const vectors = fileSource(vectorsPath, 0, n, d, 'f32');
  let meta: UsearchMeta;
  try {
    meta = await writeIndex(dir, vectors, await source.ids(), `embedder:${embedder.name}`, options);
  } finally {
    vectors.close();
  }
  rmSync(buildDir, { recursive: true, force: true });
  return meta;
}

export interface UsearchOpenOptions {
  embedder: Embedder;
  /** A passage by id (the corpus, or an on-disk store); hits whose id it does not know are refused. */
  passage: (id: string) => Passage | undefined;
  /** HNSW search breadth (ef); USearch's default when absent. */
  expansion?: number;
}

export class UsearchRetriever implements Retriever {
  readonly name: string;

  private constructor(
    readonly dir: string,
    readonly meta: UsearchMeta,
    private readonly index: InstanceType<USearch['Index']>,
    private readonly ids: string[],
    private readonly options: UsearchOpenOptions,
  ) {
    this.name = `dense:${options.embedder.name}+usearch-${meta.quantization}`;
  }

  /** Open a finished index folder read-only, by memory map. */
  static async open(dir: string, options: UsearchOpenOptions): Promise<UsearchRetriever> {
    const abs = resolve(dir);
    const meta = readMeta(abs);
    if (meta.dimension !== options.embedder.dimension) {
      throw new AmbiqaError(
        `usearch index ${abs}: its vectors have ${meta.dimension} dimensions, the query embedder ${options.embedder.name} ${options.embedder.dimension}`,
        'import vectors computed with the embedder that embeds the queries',
      );
    }
    const ids = readIds(join(abs, IDS));
    if (ids.length !== meta.count) throw new AmbiqaError(`usearch index ${abs}: ids.txt lists ${ids.length} ids for ${meta.count} vectors`, 'rebuild the index');
    const { Index, MetricKind, ScalarKind } = await usearch();
    const index = new Index({
      dimensions: meta.dimension,
      metric: meta.metric === 'cos' ? MetricKind.Cos : MetricKind.IP,
      quantization: meta.quantization === 'f32' ? ScalarKind.F32 : meta.quantization === 'f16' ? ScalarKind.F16 : ScalarKind.I8,
      connectivity: meta.connectivity,
      expansion_add: 0,
      expansion_search: options.expansion ?? 0,
      multi: false,
    });
    const file = join(abs, INDEX);
    try {
      // A file shorter than its header says is refused by USearch; check the size first so the
      // message names the file rather than a native error.
      const fd = openSync(file, 'r');
      const size = fstatSync(fd).size;
      closeSync(fd);
      if (size === 0) throw new Error('empty file');
      index.view(file);
    } catch (error) {
      throw new AmbiqaError(`usearch index ${file}: cannot be opened (${(error as Error).message})`, 'rebuild the index');
    }
    if (index.size() !== meta.count || index.dimensions() !== meta.dimension) {
      throw new AmbiqaError(`usearch index ${file}: holds ${index.size()} vectors of ${index.dimensions()} dimensions, meta.json says ${meta.count} of ${meta.dimension}`, 'rebuild the index');
    }
    return new UsearchRetriever(abs, meta, index, ids, options);
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    const [vector] = await this.options.embedder.embed([query]);
    return this.searchVector(vector!, k);
  }

  searchVector(vector: Float32Array, k: number): ScoredPassage[] {
    validateK(k);
    const matches = this.index.search(vector, Math.min(k, this.meta.count), 1);
    const out: ScoredPassage[] = [];
    for (let i = 0; i < matches.keys.length; i++) {
      const row = Number(matches.keys[i]);
      // USearch pads missing results; a row past the end is such padding.
      if (row >= this.ids.length) continue;
      const id = this.ids[row]!;
      const passage = this.options.passage(id);
      if (!passage) {
        throw new AmbiqaError(`usearch index ${this.dir}: row ${row} is passage "${id}", which the corpus does not hold`, 'open the index with the corpus its ids came from (retriever.corpus)');
      }
      // Distances are 1 - cosine (or 1 - inner product): higher score is better.
      out.push({ passage, score: 1 - matches.distances[i]!, rank: out.length });
    }
    return out;
  }

  describe(): Record<string, string> {
    return {
      engine: 'usearch',
      path: this.dir,
      quantization: this.meta.quantization,
      metric: this.meta.metric,
      count: String(this.meta.count),
      buildId: this.meta.buildId,
      source: this.meta.source,
    };
  }
}
