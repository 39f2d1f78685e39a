import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expandGrid, gridAxes } from '../../src/experiments/grid';
import { datasetInput, modelTags } from '../../src/experiments/run-page';
import { stepsAreValues, sweepPointMetrics, sweepPointTags, sweepStep } from '../../src/experiments/sweep-charts';
import type { ExperimentConfig } from '../../src/experiments/config';
import type { RunMetrics } from '../../src/run-files';
import { defaultCatalog, llmDisplayName } from '../../src/config/catalog';
import { followBrowsingServer } from '../../src/tracking/server';
import { tempDir } from './helpers';

const metrics = (em: number): RunMetrics => ({
  n: 4,
  metrics: { em: { mean: em, ciLow: em - 1, ciHigh: em + 1, n: 4 } } as unknown as RunMetrics['metrics'],
  usage: { llm_calls: 8, prompt_tokens: 100, completion_tokens: 20, cache_hits: 2, wall_seconds: 1.5 },
  total: 4,
});

describe('sweep charts', () => {
  it('uses an integer swept value as the step, and the point index (plus a sweep.<field> metric) otherwise', () => {
    const thresholds = gridAxes({ 'pipeline.options.threshold': [1, 3, 5] });
    const points = expandGrid(thresholds);
    expect(points.map((p) => sweepStep(thresholds, p))).toEqual([1, 3, 5]);
    expect(stepsAreValues(thresholds)).toBe(true);
    expect(sweepPointMetrics(thresholds, points[1], metrics(40))).toMatchObject({ em: 40, llm_calls: 8, 'sweep.threshold': 3 });
    expect(sweepPointTags(thresholds, points[2])).toEqual({ 'ambiqa.sweep.pipeline.options.threshold': '5' });

    const temperature = gridAxes({ 'llm.temperature': [0, 0.3, 0.7] });
    const tPoints = expandGrid(temperature);
    expect(tPoints.map((p) => sweepStep(temperature, p))).toEqual([0, 1, 2]);
    expect(stepsAreValues(temperature)).toBe(false);
    expect(sweepPointMetrics(temperature, tPoints[2], metrics(10))['sweep.temperature']).toBe(0.7);

    const grid = gridAxes({ 'pipeline.options.maxNodes': [4, 8], 'pipeline.options.maxDepth': [1, 2] });
    expect(expandGrid(grid).map((p) => sweepStep(grid, p))).toEqual([0, 1, 2, 3]);
  });
});

describe('run page', () => {
  it('names the dataset input by dataset and split, with a digest of the file and its size', async () => {
    const dir = tempDir();
    const path = join(dir, 'dev.jsonl');
    writeFileSync(path, '{"id":"a"}\n{"id":"b"}\n');
    const config = { dataset: { name: 'asqa', path, split: 'dev', seed: 0, limit: 2 } } as unknown as ExperimentConfig;
    const input = await datasetInput(config, [{ id: 'a' }, { id: 'b' }] as never);
    expect(input).toMatchObject({ name: 'asqa-dev', sourceType: 'local', context: 'eval' });
    expect(JSON.parse(input.source)).toEqual({ uri: path });
    expect(JSON.parse(input.profile!)).toMatchObject({ num_rows: 2, split: 'dev' });
    writeFileSync(path, '{"id":"a"}\n{"id":"c"}\n');
    expect((await datasetInput(config, [{ id: 'a' }, { id: 'b' }] as never)).digest).not.toBe(input.digest);
  });

  it('names a catalog model by its name and keeps the hash as a tag; other models by their id', () => {
    const entry = defaultCatalog.llms[0];
    expect(modelTags({ llm: { provider: 'embedded', model: entry.sha256 } })).toEqual({
      'ambiqa.llm.provider': 'embedded',
      'ambiqa.llm.model': entry.name,
      'ambiqa.llm.model_sha256': entry.sha256,
    });
    expect(modelTags({ llm: { provider: 'openai-compatible', model: 'gpt-4o-mini' } })).toEqual({ 'ambiqa.llm.provider': 'openai-compatible', 'ambiqa.llm.model': 'gpt-4o-mini' });
    expect(llmDisplayName(entry.sha256)).toBe(entry.name);
  });
});

describe('the report follows the MLflow server the user browses with', () => {
  const saved = process.env.MLFLOW_TRACKING_URI;
  afterEach(() => {
    if (saved === undefined) delete process.env.MLFLOW_TRACKING_URI;
    else process.env.MLFLOW_TRACKING_URI = saved;
  });

  it('moves a stopped local server address to the current one, keeps remote hosts, and says so when none runs', () => {
    const url = 'http://127.0.0.1:43111/#/experiments/3/runs/abc';
    process.env.MLFLOW_TRACKING_URI = 'http://127.0.0.1:5000/';
    expect(followBrowsingServer(url, tempDir())).toEqual({ url: 'http://127.0.0.1:5000/#/experiments/3/runs/abc' });
    expect(followBrowsingServer('https://mlflow.example.org/#/experiments/3/runs/abc', tempDir()).url).toBe('https://mlflow.example.org/#/experiments/3/runs/abc');
    delete process.env.MLFLOW_TRACKING_URI;
    const storeDir = tempDir();
    const stale = followBrowsingServer(url, storeDir);
    expect(stale.url).toBe(url);
    expect(stale.note).toMatch(/ambiqa mlflow-ui/);
    // A running `ambiqa mlflow-ui` advertises itself in the store (this process stands in for it).
    writeFileSync(join(storeDir, 'server.json'), JSON.stringify({ uri: 'http://127.0.0.1:5999', pid: process.pid }));
    expect(followBrowsingServer(url, storeDir).url).toBe('http://127.0.0.1:5999/#/experiments/3/runs/abc');
  });
});
