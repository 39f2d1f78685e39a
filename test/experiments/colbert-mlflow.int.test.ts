import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ExitStatus } from '../../src/experiments/exit-status';
import type { Passage } from '../../src/retrieval/types';
import { runCli } from '../helpers/cli';
import { startColbertServer, type ColbertServer } from '../helpers/colbert-server';
import { getRun, metric } from './helpers/mlflow';
import { writeAsqa, writeYaml } from './helpers/files';

/**
 * A ColBERTv2 run's engine in MLflow (real server): `retriever.engine`, `retriever.url` without
 * the credentials the config's URL carried (they reach the server as basic auth and nowhere
 * else), and the retrieval cache's counts as metrics.
 */
const uri = inject('mlflowTrackingUri');
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-colbert-mlflow-'));
let colbert: ColbertServer;
const passages: Passage[] = Array.from({ length: 6 }, (_, i) => ({ id: String(900 + i), title: `Event ${i}`, text: `Event ${i} first happened in ${1990 + i}.` }));

beforeAll(async () => {
  colbert = await startColbertServer(passages);
  colbert.requiredAuthorization = `Basic ${Buffer.from('ann:pa55word').toString('base64')}`;
});
afterAll(async () => {
  await colbert.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!uri && !process.env.CI)('a ColBERTv2 run in MLflow (real MLflow)', () => {
  it('logs the engine and the URL without credentials as params, the cache counts as metrics', async () => {
    const experiment = `test-colbert-${Date.now()}`;
    const config = writeYaml(join(dir, 'colbert-mlflow.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 2) },
      pipeline: { name: 'vanilla-rag', options: { nShots: 0, nPassages: 2, poolSize: 2 } },
      llm: { provider: 'scripted', reply: 'It happened in 1990.', cache: join(dir, 'llm.sqlite') },
      retriever: { type: 'colbertv2', url: colbert.url.replace('http://', 'http://ann:pa55word@') },
      metrics: ['str_em'],
      tracking: { experiment },
    });
    const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts'), AMBIQA_CACHE_DIR: join(dir, 'cache'), MLFLOW_TRACKING_URI: uri };
    const r = await runCli(['run', config, '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.ok);
    expect(r.output).not.toContain('pa55word');
    const runDir = join(dir, 'artifacts', 'runs', 'colbert-mlflow');
    const runId = (JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')) as { runId: string }).runId;
    const run = await getRun(uri, runId);
    const params = Object.fromEntries((run.data.params ?? []).map((p) => [p.key, p.value]));
    expect(params['retriever.engine']).toBe('colbertv2');
    expect(params['retriever.url']).toBe(colbert.url);
    expect(params['retriever.type']).toBe('colbertv2');
    expect(JSON.stringify(run.data)).not.toContain('pa55word');
    expect(metric(run, 'retrieval_cache_misses')).toBe(2);
    expect(metric(run, 'retrieval_cache_hits')).toBe(0);
    for (const file of ['config.yaml', 'metrics.json', 'traces.jsonl']) expect(readFileSync(join(runDir, file), 'utf8')).not.toContain('pa55word');
  }, 180_000);
});
