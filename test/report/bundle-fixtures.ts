/**
 * A small study for the bundle tests: a Verify-and-Edit sweep of two thresholds, two runs on the
 * example ASQA questions (one answering with script injections and spreadsheet formulas, one with
 * a recorded provenance.json and a PNG of its figure), and a comparison of the two runs.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compareDirs, writeComparison } from '../../src/report/compare';
import { INJECTIONS } from '../plots/browser';
import { result, run, summary, tocNode, tocTrace, veTrace, writeRunDir } from '../plots/fixtures';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const data = join(root, 'examples', 'asqa-mini.json');
const ids = Object.keys((JSON.parse(readFileSync(data, 'utf8')) as { dev: Record<string, unknown> }).dev);
const dataset = { name: 'asqa', split: 'dev', path: data };

/** A 1×1 PNG (the bytes of a real image, so a browser decodes it). */
export const TINY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

export const FORMULAS = ['=HYPERLINK("http://evil.example/","x")', '+1+1', '-2+3', '@SUM(A1)'];

/** A provenance.json as `ambiqa reproduce`'s recording writes it (src/run-files RunProvenance). */
export const RECORDED = {
  recordedAt: '2026-01-01T00:00:00Z',
  code: { commit: '0123456789abcdef0123456789abcdef01234567', dirty: false, ambiqaVersion: '0.1.0', node: 'v22.12.0' },
  packages: { 'node-llama-cpp': '3.0.0' },
  data: { dataset: { path: data, relative: 'project:examples/asqa-mini.json', sha256: 'b'.repeat(64), bytes: 1000 } },
  models: [{ role: 'llm', provider: 'llama-cpp', name: 'qwen2.5-1.5b-instruct-q4_k_m', sha256: 'a'.repeat(64), file: '/models/q.gguf' }],
  engine: { nodeLlamaCpp: '3.0.0', llamaCpp: 'ggml-org/llama.cpp b1234' },
};

export interface Study {
  sweep: string;
  rag: string;
  toc: string;
  comparison: string;
}

export function writeStudy(tmp: string): Study {
  const sweep = join(tmp, 'sweeps', 've-threshold');
  for (const t of [2, 3]) {
    writeRunDir(
      join(sweep, 'runs', `threshold=${t}`),
      run(`ve.threshold=${t}`, { name: `ve.threshold=${t}`, dataset, pipeline: { name: 'verify-edit', options: { threshold: t } } },
        ids.map((id, i) => result(id, { str_em: (i + t) % 2 === 0 ? 100 : 0 })),
        ids.map((id, i) => veTrace(id, { votes: 1 + ((i + t) % 5), threshold: t }))),
    );
  }
  writeFileSync(join(sweep, 'summary.json'), JSON.stringify([2, 3].map((t) => ({ label: `threshold=${t}`, values: { threshold: t }, status: 'FINISHED', runDir: join(sweep, 'runs', `threshold=${t}`) }))));
  writeFileSync(join(sweep, 'sweep.yaml'), 'name: ve-threshold\n');

  const rag = writeRunDir(
    join(tmp, 'runs', 'rag'),
    run('rag', { name: 'rag', dataset, pipeline: { name: 'vanilla-rag' } },
      ids.map((id, i) => result(id, { str_em: i % 2 === 0 ? 0 : 50, rougeLsum: 20 + i }, {
        output: i === 0 ? INJECTIONS.join('\n') : i < 1 + FORMULAS.length ? FORMULAS[i - 1]! : `answer, "quoted"\nsecond line ${i}`,
        question: i === 0 ? `Who? ${INJECTIONS[1]}` : `question ${id}?`,
      })),
      ids.map((id) => ({ ...veTrace(id, { votes: 3 }), pipeline: 'vanilla-rag' as const, decisions: { kind: 'baseline' } as never }))),
  );

  const tocData = run('toc', { name: 'toc', dataset, pipeline: { name: 'toc' } },
    ids.map((id, i) => result(id, { str_em: i % 2 === 0 ? 100 : 50, rougeLsum: 25 + i }, { usage: summary({ llmCalls: 4 }) })),
    ids.map((id) => tocTrace(id, [tocNode(0, null, null), tocNode(1, 0, 'Argentina'), tocNode(2, 0, 'Spain')])));
  // Re-scored once after it was answered (`ambiqa score --run`): metrics.json says so.
  tocData.metrics!.scoring = [{ id: 'score-1', at: '2026-01-02T00:00:00Z', metrics: ['rougeLsum'], reader: 'roberta-squad', version: '0.1.0', commit: 'fedcba9876543210' }];
  const toc = writeRunDir(join(tmp, 'runs', 'toc'), tocData, { 'provenance.json': JSON.stringify(RECORDED) });
  // The PNG `ambiqa run` leaves beside a figure it logged (src/report/run-figures.ts).
  mkdirSync(join(toc, 'figures'), { recursive: true });
  writeFileSync(join(toc, 'figures', 'pruning-effect.png'), TINY_PNG);

  const { comparison } = compareDirs([rag, toc]);
  const file = writeComparison(comparison, join(tmp, 'comparisons', 'toc-vs-rag', 'comparison.json'));
  return { sweep, rag, toc, comparison: file };
}
