import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDir } from '../../src/config/paths';
import { ExitStatus } from '../../src/experiments/exit-status';
import type { Passage } from '../../src/retrieval/types';
import { freePort } from '../../src/tracking/server';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { runCli } from '../helpers/cli';
import { startColbertServer, type ColbertServer } from '../helpers/colbert-server';
import { writeAsqa, writeYaml } from './helpers/files';

/**
 * `retriever: {type: colbertv2, url}` through the real `ambiqa run`: a loopback stand-in for a
 * ColBERTv2 server (BM25 over a small corpus, the API of ToC's dsp module) and a loopback
 * OpenAI-compatible LLM. The run answers from the server's passages (their pids in the traces,
 * their texts in the prompts), a second run replays every retrieval from the persistent cache,
 * and a server that is down or answers in another shape is refused before any chat request.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-colbert-run-'));
const artifacts = join(dir, 'artifacts');
const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts, AMBIQA_CACHE_DIR: join(dir, 'cache'), AMBIQA_TRACKING: 'off' };
let llm: FaultServer;
let colbert: ColbertServer;
let data: string;

// The events of writeAsqa's questions, with numeric pids as a Wikipedia collection has.
const passages: Passage[] = Array.from({ length: 8 }, (_, i) => ({
  id: String(5000 + i),
  title: `Event ${i}`,
  text: `Event ${i} first happened in ${1990 + i} and last happened in ${2000 + i}, the chronicle says.`,
}));

beforeAll(async () => {
  llm = await startFaultServer();
  llm.models = ['gen-model'];
  colbert = await startColbertServer(passages);
  data = writeAsqa(dir, 3);
});
afterAll(async () => {
  await llm.close();
  await colbert.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(name: string, retriever: Record<string, unknown>): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'vanilla-rag', options: { nShots: 0, nPassages: 2, poolSize: 2, maxTokens: 16 } },
    retriever,
    llm: { provider: 'openai-compatible', baseUrl: llm.url, model: 'gen-model', cache: join(dir, `${name}.sqlite`), maxRetries: 0 },
    metrics: ['str_em'],
    tracking: { enabled: false },
  });
}

const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('ambiqa run with a ColBERTv2 server', () => {
  it('answers from the server passages, and a second run replays them from the retrieval cache', async () => {
    colbert.requests = [];
    llm.requests = [];
    const r = await runCli(['run', config('colbert', { type: 'colbertv2', url: colbert.url })], env);
    expect(r.code, r.output).toBe(ExitStatus.ok);
    // The preflight's one query, then one per question.
    expect(colbert.requests[0]).toEqual({ method: 'GET', query: 'preflight', k: 1 });
    expect(colbert.requests.slice(1).map((q) => q.query).sort()).toEqual(['When did event 0 happen?', 'When did event 1 happen?', 'When did event 2 happen?']);

    const runDir = join(artifacts, 'runs', 'colbert');
    const traces = jsonl(join(runDir, 'traces.jsonl')) as Array<{ question: string; retrievals: Array<{ retriever: string; hits: Array<{ id: string }> }> }>;
    expect(traces).toHaveLength(3);
    for (const t of traces) {
      expect(t.retrievals[0]!.retriever).toBe('colbertv2');
      const ids = t.retrievals[0]!.hits.map((h) => h.id);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) expect(passages.map((p) => p.id)).toContain(id);
      // The server's best passage for "event <i>" is Event <i>'s, and its text reached the prompt.
      const i = Number(/event (\d)/.exec(t.question)![1]);
      expect(ids[0]).toBe(String(5000 + i));
    }
    const prompts = llm.requests.map((q) => JSON.stringify(q.body.messages));
    for (let i = 0; i < 3; i++) expect(prompts.some((p) => p.includes(`Event ${i} first happened in ${1990 + i}`))).toBe(true);

    const metrics = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')) as { usage: Record<string, number>; settings: Record<string, string> };
    expect(metrics.usage.retrieval_cache_misses).toBe(3);
    expect(metrics.usage.retrieval_cache_hits).toBe(0);
    expect(metrics.settings['retriever.engine']).toBe('colbertv2');
    expect(metrics.settings['retriever.url']).toBe(colbert.url);
    expect(r.output).toContain('retrieval: 3 server queries, 0 retrieval cache hits');

    // Another run of the same questions (as a sweep point or a rerun): only the preflight reaches the server.
    colbert.requests = [];
    const again = await runCli(['run', config('colbert-again', { type: 'colbertv2', url: colbert.url })], env);
    expect(again.code, again.output).toBe(ExitStatus.ok);
    expect(colbert.requests.map((q) => q.query)).toEqual(['preflight']);
    const replayed = JSON.parse(readFileSync(join(artifacts, 'runs', 'colbert-again', 'metrics.json'), 'utf8')) as { usage: Record<string, number> };
    expect(replayed.usage.retrieval_cache_hits).toBe(3);
    expect(replayed.usage.retrieval_cache_misses).toBe(0);
  }, 120_000);

  it('a server that is down is refused before any chat request, in one line naming retriever.url', async () => {
    const port = await freePort();
    llm.requests = [];
    const r = await runCli(['run', config('colbert-down', { type: 'colbertv2', url: `http://127.0.0.1:${port}/api/search` })], env);
    expect(r.code, r.output).toBe(ExitStatus.error);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `ambiqa run: retriever.url http://127.0.0.1:${port}/api/search: no answer (ECONNREFUSED); fix: start the server, or set retriever.url to where it listens (--skip-preflight runs without this check)`,
    ]);
    expect(llm.requests).toHaveLength(0);
    expect(existsSync(join(artifacts, 'runs', 'colbert-down'))).toBe(false);
  }, 60_000);

  it('a server answering in another shape is refused before any chat request', async () => {
    colbert.mode = 'shape';
    llm.requests = [];
    try {
      const r = await runCli(['run', config('colbert-shape', { type: 'colbertv2', url: colbert.url })], env);
      expect(r.code, r.output).toBe(ExitStatus.error);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`retriever.url ${colbert.url} does not answer as a ColBERTv2 server: the answer has no "topk" list`);
      expect(llm.requests).toHaveLength(0);
    } finally {
      colbert.mode = 'ok';
    }
  }, 60_000);

  it('a field the retriever section does not know is refused in one line, not dropped', async () => {
    const r = await runCli(['run', config('colbert-typo', { type: 'bm25' }), '--set', 'retriever.exlcude=own'], env);
    expect(r.code, r.output).toBe(ExitStatus.error);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(/retriever: unknown field 'exlcude' \(allowed: type, k1, b, stopWords, stemmer, engine, index, url, indexName, timeoutMs, corpus, exclude\)/);
    expect(lines.filter((l) => !l.includes('fix:') && !l.startsWith('  '))).toHaveLength(1);
  }, 60_000);

  it('ambiqa coverage takes the server as --retriever: the same AC@k as ambiqa BM25 over the passages it serves', async () => {
    const corpus = join(dir, 'served.jsonl');
    writeFileSync(corpus, passages.map((p) => JSON.stringify(p)).join('\n') + '\n');
    colbert.requests = [];
    const remote = await runCli(['coverage', '--data', data, '--retriever', `{type: colbertv2, url: ${colbert.url}, cache: off}`, '--exclude', 'none', '--k', '1,2', '--out', join(dir, 'remote.json')], env);
    expect(remote.code, remote.output).toBe(ExitStatus.ok);
    expect(colbert.requests.map((q) => q.query)).toEqual(['preflight', 'When did event 0 happen?', 'When did event 1 happen?', 'When did event 2 happen?']);
    const local = await runCli(['coverage', '--data', data, '--corpus', corpus, '--retriever', 'bm25', '--exclude', 'none', '--k', '1,2', '--out', join(dir, 'local.json')], env);
    expect(local.code, local.output).toBe(ExitStatus.ok);
    const read = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as { coverage: number[]; retriever: string; 'retriever.url'?: string };
    expect(read('remote.json').coverage).toEqual(read('local.json').coverage);
    expect(read('remote.json').coverage[1]).toBeGreaterThan(0);
    expect(read('remote.json')['retriever.url']).toBe(colbert.url);

    const bad = await runCli(['coverage', '--data', data, '--retriever', `{type: colbertv2, url: ${colbert.url}, kk: 1}`], env);
    expect(bad.code).toBe(ExitStatus.error);
    expect(bad.stderr).toMatch(/invalid --retriever: unknown field 'kk'/);
  }, 60_000);

  it('ToC retrieves its pool from the server (scripted model), with exclude: own dropping the question pids', async () => {
    // Each question's own passage is annotated for it in the corpus read for leak control; the
    // server serves the same passages under the same ids.
    const annotated = join(dir, 'annotated.jsonl');
    writeFileSync(annotated, passages.map((p, i) => JSON.stringify({ ...p, annotated_for: i < 3 ? [`asqa:q0${i}`] : [] })).join('\n') + '\n');
    colbert.requests = [];
    const yaml = writeYaml(join(dir, 'colbert-toc.yaml'), {
      name: 'colbert-toc',
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'toc', options: { nShots: 0, maxNodes: 2, maxDepth: 1, nPassages: 2, pruning: false } },
      llm: {
        provider: 'scripted',
        replies: { 'toc.rac': 'DQ 1: When did it first happen? DA 1: 1990', 'toc.verify': 'True', 'toc.answer': 'It first happened in 1990.' },
        cache: join(dir, 'toc-llm.sqlite'),
      },
      retriever: { type: 'colbertv2', url: colbert.url, corpus: annotated, exclude: 'own', cache: 'off' },
      reranker: 'none',
      metrics: ['str_em'],
      tracking: { enabled: false },
    });
    // ToC embeds (MiniLM, cheap): the models of the machine's cache; the retrieval cache off.
    const r = await runCli(['run', yaml], { ...env, AMBIQA_CACHE_DIR: cacheDir() });
    expect(r.code, r.output).toBe(ExitStatus.ok);
    const traces = jsonl(join(artifacts, 'runs', 'colbert-toc', 'traces.jsonl')) as Array<{ questionId: string; retrievals: Array<{ retriever: string; hits: Array<{ id: string }> }> }>;
    expect(traces).toHaveLength(3);
    for (const t of traces) {
      const own = String(5000 + Number(t.questionId.slice(1)));
      const ids = t.retrievals.flatMap((x) => x.hits.map((h) => h.id));
      expect(ids.length).toBeGreaterThan(0);
      expect(ids).not.toContain(own);
      for (const id of ids) expect(passages.map((p) => p.id)).toContain(id);
    }
    // The server was asked (after the preflight) with the over-fetch of one excluded passage.
    expect(colbert.requests.length).toBeGreaterThan(1);
  }, 120_000);
});
