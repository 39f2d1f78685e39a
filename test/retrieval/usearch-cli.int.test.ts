/**
 * `ambiqa index --engine usearch` through the real command and the real MiniLM embedder of
 * `ambiqa setup`: a DPR TSV embedded into a USearch index that a `{type: dense, engine: usearch}`
 * retriever opens and searches; the same vectors imported back with --vectors/--ids; the refusals.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { createRetriever } from '../../src/retrieval/factory';
import { streamPassages } from '../../src/retrieval/lucene/passage-stream';
import type { Passage } from '../../src/retrieval/types';

const root = resolve(__dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-usearch-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function ambiqa(...args: string[]) {
  return spawnSync(process.execPath, [join(root, 'bin/ambiqa.mjs'), 'index', ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
}

const FACTS = [
  ['Titanic', 'The passenger liner Titanic sank in the North Atlantic in April 1912 after striking an iceberg.'],
  ['Cricket World Cup', 'Australia won the 2023 Cricket World Cup, beating India in the final at Ahmedabad.'],
  ['Mount Everest', 'Mount Everest is the highest mountain above sea level, on the border of Nepal and China.'],
  ['Photosynthesis', 'Plants turn sunlight, water and carbon dioxide into sugar and oxygen by photosynthesis.'],
  ['Jazz', 'Jazz began in New Orleans among African-American communities in the early twentieth century.'],
];

describe('ambiqa index --engine usearch (real MiniLM)', { timeout: 180_000 }, () => {
  const tsv = join(tmp, 'psgs.tsv');
  writeFileSync(tsv, ['id\ttext\ttitle', ...FACTS.map(([title, text], i) => `${101 + i}\t${text}\t${title}`)].join('\n') + '\n');

  it('embeds a DPR TSV into an index a dense usearch retriever searches, with DPR ids kept', async () => {
    const out = join(tmp, 'idx');
    const r = ambiqa('--engine', 'usearch', '--from', 'dpr-tsv', tsv, '--out', out, '--chunk', '2');
    expect(r.stderr + r.stdout).toContain('indexed 5 passages into');
    expect(r.status).toBe(0);
    expect(readFileSync(join(out, 'ids.txt'), 'utf8').trim().split('\n')).toEqual(['101', '102', '103', '104', '105']);
    const meta = JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8')) as { count: number; quantization: string; source: string };
    expect(meta).toMatchObject({ count: 5, quantization: 'f16' });
    expect(meta.source).toMatch(/^embedder:/);

    const passages: Passage[] = [];
    for await (const p of streamPassages(tsv, 'dpr-tsv')) passages.push(p);
    const retriever = await createRetriever({ type: 'dense', engine: 'usearch', path: out }, corpusFromPassages(passages), { cache: false });
    const hits = await retriever.search('Which ship went down after hitting an iceberg?', 2);
    expect(hits[0]!.passage.id).toBe('101');
    expect((await retriever.search('Who won the cricket world cup in 2023?', 1))[0]!.passage.id).toBe('102');

    // Asked again without --force: the finished index is kept, and the refusal names the folder.
    const again = ambiqa('--engine', 'usearch', '--from', 'dpr-tsv', tsv, '--out', out);
    expect(again.status).not.toBe(0);
    expect(again.stderr).toContain(`--out ${out}: already holds a finished usearch index`);
  });

  it('imports precomputed vectors (.npy + ids) and refuses a mismatched id list or half an import', () => {
    const d = 4;
    const rows = [
      [1, 0, 0, 0],
      [0, 1, 0, 0],
      [0, 0, 1, 0],
    ];
    const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows.length}, ${d}), }`;
    const padded = header.padEnd(118, ' ') + '\n';
    const npy = Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0]), Buffer.from([padded.length & 0xff, padded.length >> 8]), Buffer.from(padded, 'latin1'), Buffer.from(new Float32Array(rows.flat()).buffer)]);
    const vectors = join(tmp, 'v.npy');
    writeFileSync(vectors, npy);
    writeFileSync(join(tmp, 'ids.txt'), 'a\nb\nc\n');
    const out = join(tmp, 'imported');
    const r = ambiqa('--engine', 'usearch', '--vectors', vectors, '--ids', join(tmp, 'ids.txt'), '--out', out, '--quantization', 'f32');
    expect(r.stdout).toContain('imported 3 vectors of 4 dimensions');
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'meta.json'), 'utf8'))).toMatchObject({ count: 3, dimension: 4, quantization: 'f32', source: 'import:v.npy' });

    writeFileSync(join(tmp, 'ids2.txt'), 'a\nb\n');
    const bad = ambiqa('--engine', 'usearch', '--vectors', vectors, '--ids', join(tmp, 'ids2.txt'), '--out', join(tmp, 'bad'));
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain(`ids ${join(tmp, 'ids2.txt')}: 2 ids for the 3 rows of ${vectors}`);
    const half = ambiqa('--engine', 'usearch', '--vectors', vectors, '--out', join(tmp, 'half'));
    expect(half.stderr).toContain('--ids is needed with --vectors');
    const q = ambiqa('--engine', 'usearch', '--from', 'dpr-tsv', tsv, '--out', join(tmp, 'q'), '--quantization', 'f8');
    expect(q.stderr).toContain('--quantization f8: give f32, f16, i8');
    expect(existsSync(join(tmp, 'q'))).toBe(false);
    const big = ambiqa('--engine', 'usearch', '--from', 'dpr-tsv', tsv, '--out', join(tmp, 'big'), '--chunk', '100000000');
    expect(big.stderr).toContain('--chunk 100000000: at most 65,536');
    expect(existsSync(join(tmp, 'big'))).toBe(false);
  });
});
