import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { readJsonl } from '../../src/common/jsonl';
import { AmbiqaError } from '../../src/errors';
import { scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, searchRuns, tag } from './helpers/mlflow';

// `ambiqa merge --from-mlflow <group>` against the tests' real MLflow server: the shards run on
// "machine A" (one artifacts folder), the merge on "machine B" (another, empty one), so nothing
// reaches the merge but what MLflow holds. Then the three refusals, each from a real state of the
// server: an index with no run, an index with two finished runs, and uploads that are not complete
// (a session that never wrote its checksums, and a file changed on the server after the fact).
const uri = inject('mlflowTrackingUri');

async function rest<T>(path: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<T> {
  const res = await fetch(`${uri}/api/2.0/${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function refusal(args: string[]): Promise<AmbiqaError> {
  const error = await mergeCommand(args).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AmbiqaError);
  return error as AmbiqaError;
}

describe.skipIf(!uri && !process.env.CI)('ambiqa merge --from-mlflow (real MLflow)', () => {
  const keys = ['AMBIQA_ARTIFACTS_DIR', 'MLFLOW_TRACKING_URI'] as const;
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-merge-mlflow-'));
  afterAll(() => {
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const stamp = Date.now();
  const experiment = `test-merge-mlflow-${stamp}`;
  // Groups are looked up across the server's experiments: unique per test run.
  const g = (name: string) => `${name}-${stamp}`;
  const machineA = join(dir, 'machine-a');
  const machineB = join(dir, 'machine-b');
  const config = writeYaml(join(dir, 'mm.yaml'), {
    dataset: { name: 'asqa', path: writeAsqa(dir, 7) },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', cycle: ['In 1991 and 2001.', 'In 1994.', 'Around 1996, and again in 2006.'], cache: join(dir, 'cache.sqlite') },
    metrics: ['str_em', 'rougeL'],
    tracking: { experiment, traces: false },
  });
  /** Runs one shard on machine A; returns its MLflow run id. */
  const shard = async (spec: string, group: string, name: string) => {
    process.env.AMBIQA_ARTIFACTS_DIR = machineA;
    process.env.MLFLOW_TRACKING_URI = uri;
    expect(await runCommand([config, '--name', name, '--shard', spec, '--shard-group', group, '--quiet'])).toBe(0);
    const [i, n] = spec.split('/');
    return JSON.parse(readFileSync(join(machineA, 'runs', `${name}.shard-${i}of${n}`, 'mlflow.json'), 'utf8')).runId as string;
  };

  it('merges the launch found by its group tag, on a machine without the shards\' run dirs, into the unsharded run', async () => {
    const ids = [await shard('0/2', g('g-ok'), 'mm'), await shard('1/2', g('g-ok'), 'mm')];
    // The reference has its own cache, as an unsharded run on its own machine would.
    expect(await runCommand([config, '--name', 'whole', '--quiet', '--set', `llm.cache=${join(dir, 'whole.sqlite')}`])).toBe(0);

    process.env.AMBIQA_ARTIFACTS_DIR = machineB;
    expect(await mergeCommand(['--from-mlflow', g('g-ok'), '--experiment', experiment])).toBe(0);
    const merged = join(machineB, 'runs', 'mm');
    const view = (r: ExampleResult) => ({ id: r.id, index: r.index, output: r.output, metrics: scoreValues(r) });
    const whole = readJsonl<ExampleResult>(join(machineA, 'runs', 'whole', 'results.jsonl'));
    expect(readJsonl<ExampleResult>(join(merged, 'results.jsonl')).map(view)).toEqual(whole.map(view));
    const m = JSON.parse(readFileSync(join(merged, 'metrics.json'), 'utf8')) as RunMetrics;
    const w = JSON.parse(readFileSync(join(machineA, 'runs', 'whole', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(m.metrics).toEqual(w.metrics);
    expect(m.n).toBe(7);
    // The shards' files, as downloaded, are kept beside the merged run, in folders ambiqa names (shard-<i>of<N>), never after the server's run names.
    expect(existsSync(join(merged, 'shards', 'shard-1of2', 'results.jsonl'))).toBe(true);

    // In MLflow: the merged run's metrics are the unsharded run's (wall time aside); the shards nest under it.
    const parentId = JSON.parse(readFileSync(join(merged, 'mlflow.json'), 'utf8')).runId as string;
    const wholeId = JSON.parse(readFileSync(join(machineA, 'runs', 'whole', 'mlflow.json'), 'utf8')).runId as string;
    const metricsOf = async (id: string) =>
      Object.fromEntries(((await getRun(uri, id)).data.metrics ?? []).filter((x) => x.key !== 'wall_seconds').map((x) => [x.key, x.value]));
    const parentMetrics = await metricsOf(parentId);
    expect(parentMetrics).toEqual(await metricsOf(wholeId));
    expect(parentMetrics.str_em_ci_high).toBeDefined();
    const parent = await getRun(uri, parentId);
    expect(parent.info.status).toBe('FINISHED');
    expect(tag(parent, 'ambiqa.merged_group')).toBe(g('g-ok'));
    const children = (await searchRuns(uri, experiment)).filter((r) => tag(r, 'mlflow.parentRunId') === parentId);
    expect(children.map((c) => c.info.run_id).sort()).toEqual([...ids].sort());
  }, 240_000);

  it('refuses a missing index, in one line', async () => {
    await shard('0/2', g('g-missing'), 'mm-missing');
    process.env.AMBIQA_ARTIFACTS_DIR = machineB;
    const e = await refusal(['--from-mlflow', g('g-missing')]);
    expect(e.message).toBe(`--from-mlflow ${g('g-missing')}: missing shard 1/2 (no run)`);
    expect(e.hint).toContain(`--group ${g('g-missing')} --only 1`);
    expect(existsSync(join(machineB, 'runs', 'mm-missing', 'config.yaml'))).toBe(false);
  }, 120_000);

  it('refuses two finished runs for one index, naming both', async () => {
    const first = await shard('0/2', g('g-dup'), 'mm-dup');
    await shard('1/2', g('g-dup'), 'mm-dup');
    const second = await shard('0/2', g('g-dup'), 'mm-dup-again');
    process.env.AMBIQA_ARTIFACTS_DIR = machineB;
    const e = await refusal(['--from-mlflow', g('g-dup'), '--experiment', experiment]);
    expect(e.message).toMatch(new RegExp(`^--from-mlflow ${g('g-dup')}: shard 0/2 has 2 finished runs \\((\\w+), (\\w+)\\)$`));
    expect(e.message).toContain(first);
    expect(e.message).toContain(second);
  }, 180_000);

  it('refuses incomplete uploads: checksums never written, or a file on the server that does not match its checksum', async () => {
    const zero = await shard('0/2', g('g-upload'), 'mm-upload');
    const one = await shard('1/2', g('g-upload'), 'mm-upload');
    process.env.AMBIQA_ARTIFACTS_DIR = machineB;

    // As a session that stopped between its uploads and the checksums leaves it.
    const manifest = tag(await getRun(uri, one), 'ambiqa.uploads')!;
    await rest('mlflow/runs/set-tag', { run_id: one, key: 'ambiqa.uploads', value: 'pending' });
    const e = await refusal(['--from-mlflow', g('g-upload')]);
    expect(e.message).toBe(`--from-mlflow ${g('g-upload')}: run ${one} (shard 1/2) has incomplete uploads (ambiqa.uploads is "pending")`);
    await rest('mlflow/runs/set-tag', { run_id: one, key: 'ambiqa.uploads', value: manifest });

    // results.jsonl replaced on the server by a cut-short copy.
    const run = await rest<{ run: { info: { artifact_uri: string } } }>(`mlflow/runs/get?run_id=${zero}`);
    const root = run.run.info.artifact_uri.replace(/^mlflow-artifacts:\//, '');
    const full = readFileSync(join(machineA, 'runs', 'mm-upload.shard-0of2', 'results.jsonl'), 'utf8');
    const put = await fetch(`${uri}/api/2.0/mlflow-artifacts/artifacts/${root}/results.jsonl`, { method: 'PUT', body: full.split('\n')[0] + '\n' });
    expect(put.ok).toBe(true);
    const f = await refusal(['--from-mlflow', g('g-upload')]);
    expect(f.message).toBe(`--from-mlflow ${g('g-upload')}: run ${zero} (shard 0/2) has incomplete uploads (results.jsonl on the server does not match its checksum)`);
    expect(existsSync(join(machineB, 'runs', 'mm-upload', 'config.yaml'))).toBe(false);
  }, 180_000);

  it('says so when no run carries the group', async () => {
    process.env.AMBIQA_ARTIFACTS_DIR = machineB;
    const e = await refusal(['--from-mlflow', g('g-none'), '--experiment', experiment]);
    expect(e.message).toContain(`no MLflow run in experiment "${experiment}"`);
    expect(e.message).toContain(`is tagged ambiqa.shard_group=${g('g-none')}`);
  });
});
