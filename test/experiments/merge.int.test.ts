import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { AmbiqaError } from '../../src/errors';
import { readJsonl } from '../../src/common/jsonl';
import { scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, metric, searchRuns, tag } from './helpers/mlflow';

// Three shards run separately (as on three machines), merged: the same results and aggregates as
// one unsharded run, one MLflow parent run with the shards' runs nested under it.
const uri = inject('mlflowTrackingUri');

describe.skipIf(!uri && !process.env.CI)('--shard i/N and ambiqa merge (real MLflow)', () => {
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI };
  afterAll(() => {
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('merges shards into the unsharded result and one parent run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-merge-'));
    const experiment = `test-merge-${Date.now()}`;
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = uri;
    const config = writeYaml(join(dir, 'toc-like.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 11) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', cycle: ['In 1991 and 2001.', 'In 1994.', 'Around 1996, and again in 2006.'], cache: join(dir, 'cache.sqlite') },
      tracking: { experiment },
    });
    for (const i of [0, 1, 2]) expect(await runCommand([config, '--shard', `${i}/3`, '--quiet'])).toBe(0);
    expect(await runCommand([config, '--name', 'whole', '--no-tracking', '--quiet'])).toBe(0);
    const runs = join(dir, 'artifacts', 'runs');
    const shardDirs = [0, 1, 2].map((i) => join(runs, `toc-like.shard-${i}of3`));
    const sizes = shardDirs.map((d) => readJsonl(join(d, 'results.jsonl')).length);
    expect(sizes.sort()).toEqual([3, 4, 4]);

    // A missing shard is refused unless --partial.
    await expect(mergeCommand([shardDirs[0], shardDirs[2]])).rejects.toThrow(AmbiqaError);
    await expect(mergeCommand([shardDirs[0], shardDirs[2]])).rejects.toThrow('merge: missing shard 1/3');

    expect(await mergeCommand(shardDirs)).toBe(0);
    const merged = join(runs, 'toc-like');
    const view = (r: ExampleResult) => ({ id: r.id, index: r.index, output: r.output, metrics: scoreValues(r) });
    const whole = readJsonl<ExampleResult>(join(runs, 'whole', 'results.jsonl'));
    expect(readJsonl<ExampleResult>(join(merged, 'results.jsonl')).map(view)).toEqual(whole.map(view));
    expect(readJsonl<Trace>(join(merged, 'traces.jsonl')).map((t) => t.questionId)).toEqual(whole.map((r) => r.id));
    const m = JSON.parse(readFileSync(join(merged, 'metrics.json'), 'utf8')) as RunMetrics;
    const w = JSON.parse(readFileSync(join(runs, 'whole', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(m.metrics).toEqual(w.metrics); // recomputed over all questions, CIs included
    expect(m.n).toBe(11);
    expect(m.usage.llm_calls).toBe(w.usage.llm_calls);

    const all = await searchRuns(uri, experiment);
    const parentId = JSON.parse(readFileSync(join(merged, 'mlflow.json'), 'utf8')).runId as string;
    const parent = await getRun(uri, parentId);
    expect(parent.info.status).toBe('FINISHED');
    expect(metric(parent, 'n')).toBe(11);
    const children = all.filter((r) => tag(r, 'mlflow.parentRunId') === parentId);
    const shardRunIds = shardDirs.map((d) => JSON.parse(readFileSync(join(d, 'mlflow.json'), 'utf8')).runId as string);
    expect(children.map((c) => c.info.run_id).sort()).toEqual([...shardRunIds].sort());
    expect(children.every((c) => c.info.status === 'FINISHED')).toBe(true);
    expect(all).toHaveLength(4);
  }, 180_000);
});
