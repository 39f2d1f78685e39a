import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { MlflowClient, MlflowHttpError, MlflowUnreachableError, proxyPath } from '../../src/tracking/client';
import { MLFLOW_LIMITS } from '../../src/tracking/limits';
import { freePort } from '../../src/tracking/server';
import { tempDir, trackingUri, uniqueName } from './helpers';

const uri = trackingUri();

describe('proxyPath', () => {
  it('maps the artifact URIs MLflow hands out to paths inside its artifact proxy', () => {
    expect(proxyPath('mlflow-artifacts:/3/abc/artifacts')).toBe('3/abc/artifacts');
    expect(proxyPath('mlflow-artifacts://10.0.0.2:5000/3/abc/artifacts')).toBe('3/abc/artifacts');
    expect(proxyPath('http://h:5000/api/2.0/mlflow-artifacts/artifacts/3/abc/artifacts')).toBe('3/abc/artifacts');
    expect(proxyPath('s3://bucket/3/abc/artifacts')).toBeUndefined();
  });
});

describe('unreachable and misconfigured servers', () => {
  it('names the URI and the fix when nothing listens there', async () => {
    const port = await freePort();
    const client = new MlflowClient(`http://127.0.0.1:${port}`);
    const error = await client.getExperimentByName('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MlflowUnreachableError);
    const text = describeError(error);
    expect(text).toContain(`http://127.0.0.1:${port}`);
    expect(text).toContain('ECONNREFUSED');
    expect(text).toMatch(/unset MLFLOW_TRACKING_URI/);
    expect(await client.isHealthy(500)).toBe(false);
  });

  it('refuses a tracking URI that is not an HTTP server', () => {
    expect(() => new MlflowClient('file:./mlruns')).toThrow(/not an HTTP tracking server/);
    expect(() => new MlflowClient('not a url')).toThrow(/is not a URL/);
  });
});

describe.skipIf(!uri)('MlflowClient against a real MLflow server', () => {
  const client = new MlflowClient(uri);

  it('gets or creates an experiment by name, once', async () => {
    const name = uniqueName('client-exp');
    expect(await client.getExperimentByName(name)).toBeUndefined();
    const [a, b] = await Promise.all([client.getOrCreateExperiment(name), client.getOrCreateExperiment(name)]);
    expect(a).toBe(b);
    const exp = await client.getExperimentByName(name);
    expect(exp?.experimentId).toBe(a);
    expect(exp?.artifactLocation).toMatch(/^mlflow-artifacts:/);
  });

  it('logs params, metrics with steps, tags and a nested run, and reads them back', async () => {
    const experimentId = await client.getOrCreateExperiment(uniqueName('client-runs'));
    const parent = await client.createRun({ experimentId, runName: 'parent', tags: { 'ambiqa.kind': 'sweep' } });
    expect(parent.info.status).toBe('RUNNING');
    const child = await client.createRun({ experimentId, runName: 'child', tags: { 'mlflow.parentRunId': parent.info.runId } });

    await client.logBatch(child.info.runId, {
      params: { 'toc.maxNodes': '10', 'llm.temperature': '0.7' },
      tags: { note: 'first' },
      metrics: [
        { key: 'str_em', value: 0.25, step: 0, timestamp: 1_700_000_000_000 },
        { key: 'str_em', value: 0.5, step: 1, timestamp: 1_700_000_001_000 },
        { key: 'nan_metric', value: NaN, step: 0, timestamp: 1_700_000_000_000 },
      ],
    });
    await client.setTag(child.info.runId, 'note', 'second');
    await client.finishRun(child.info.runId, 'FINISHED', 1_700_000_002_000);

    const run = await client.getRun(child.info.runId);
    expect(run.info.runName).toBe('child');
    expect(run.info.status).toBe('FINISHED');
    expect(run.info.endTime).toBe(1_700_000_002_000);
    expect(run.params).toEqual({ 'toc.maxNodes': '10', 'llm.temperature': '0.7' });
    expect(run.tags.note).toBe('second');
    expect(run.tags['mlflow.parentRunId']).toBe(parent.info.runId);
    expect(run.metrics.str_em.value).toBe(0.5);
    expect(Number.isNaN(run.metrics.nan_metric.value)).toBe(true);
    const history = await client.getMetricHistory(child.info.runId, 'str_em');
    expect(history.map((m) => [m.step, m.value, m.timestamp])).toEqual([
      [0, 0.25, 1_700_000_000_000],
      [1, 0.5, 1_700_000_001_000],
    ]);

    const children = await client.searchAllRuns({ experimentIds: [experimentId], filter: `tags.\`mlflow.parentRunId\` = '${parent.info.runId}'` });
    expect(children.map((r) => r.info.runId)).toEqual([child.info.runId]);

    // Resume: a finished run goes back to RUNNING.
    await client.updateRun(child.info.runId, { status: 'RUNNING' });
    expect((await client.getRun(child.info.runId)).info.status).toBe('RUNNING');
  });

  it('includes MLflow error_code and message in HTTP errors', async () => {
    const experimentId = await client.getOrCreateExperiment(uniqueName('client-errors'));
    const run = await client.createRun({ experimentId, runName: 'immutable' });
    await client.logParams(run.info.runId, { p: 'one' });
    await client.logParams(run.info.runId, { p: 'one' }); // same value: fine
    const error = await client.logParams(run.info.runId, { p: 'two' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MlflowHttpError);
    expect((error as MlflowHttpError).status).toBe(400);
    expect((error as MlflowHttpError).errorCode).toBe('INVALID_PARAMETER_VALUE');
    expect(describeError(error)).toMatch(/INVALID_PARAMETER_VALUE.*Changing param values/);
    const missing = await client.getRun('0'.repeat(32)).catch((e: unknown) => e);
    expect((missing as MlflowHttpError).errorCode).toBe('RESOURCE_DOES_NOT_EXIST');
  });

  it('splits 2,500 metrics and 250 params into batches the server accepts, losing nothing', async () => {
    const experimentId = await client.getOrCreateExperiment(uniqueName('client-batch'));
    const run = await client.createRun({ experimentId, runName: 'big' });
    const params = Object.fromEntries(Array.from({ length: 250 }, (_, i) => [`param_${i}`, `value_${i}`]));
    const metrics = Array.from({ length: 2500 }, (_, i) => ({ key: `metric_${i % 5}`, value: i, step: Math.floor(i / 5), timestamp: 1_700_000_000_000 + i }));
    const requests = await client.logBatch(run.info.runId, { params, metrics });
    expect(requests).toBe(3);
    const back = await client.getRun(run.info.runId);
    expect(Object.keys(back.params)).toHaveLength(250);
    expect(back.params.param_249).toBe('value_249');
    for (let k = 0; k < 5; k++) {
      const history = await client.getMetricHistory(run.info.runId, `metric_${k}`);
      expect(history).toHaveLength(500);
      expect(history.map((m) => m.value).sort((a, b) => a - b)[499]).toBe(2495 + k);
    }
  });

  it('truncates a value over the server limit with a visible marker instead of failing', async () => {
    const experimentId = await client.getOrCreateExperiment(uniqueName('client-long'));
    const run = await client.createRun({ experimentId, runName: 'long' });
    const prompt = 'Q'.repeat(MLFLOW_LIMITS.paramValueChars + 500);
    await client.logParams(run.info.runId, { prompt });
    await client.setTags(run.info.runId, { long_tag: 'T'.repeat(MLFLOW_LIMITS.tagValueChars + 10) });
    const back = await client.getRun(run.info.runId);
    expect(back.params.prompt).toHaveLength(MLFLOW_LIMITS.paramValueChars);
    expect(back.params.prompt).toMatch(/^Q+…\[truncated, 6500 chars\]$/);
    expect(back.tags.long_tag).toHaveLength(MLFLOW_LIMITS.tagValueChars);
  });

  it('uploads artifacts through the proxy, lists them and reads them back', async () => {
    const experimentId = await client.getOrCreateExperiment(uniqueName('client-artifacts'));
    const run = await client.createRun({ experimentId, runName: 'files' });
    const dir = tempDir();
    const file = join(dir, 'results.jsonl');
    const content = '{"id":"q1","output":"Paris"}\n{"id":"q2","output":"1969 — the Moon"}\n';
    writeFileSync(file, content);
    expect(await client.logArtifact(run.info.runId, file)).toBe('results.jsonl');
    expect(await client.logArtifact(run.info.runId, file, 'outputs/dev split')).toBe('outputs/dev split/results.jsonl');
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    await client.uploadArtifact(run.info.runId, 'bin/blob.bin', bytes);

    const root = await client.listArtifacts(run.info.runId);
    expect(root.map((e) => [e.path, e.isDir]).sort()).toEqual([
      ['bin', true],
      ['outputs', true],
      ['results.jsonl', false],
    ]);
    const all = await client.listArtifactsRecursive(run.info.runId);
    expect(all.map((e) => e.path).sort()).toEqual(['bin/blob.bin', 'outputs/dev split/results.jsonl', 'results.jsonl']);
    expect(all.find((e) => e.path === 'results.jsonl')?.fileSize).toBe(Buffer.byteLength(content));
    expect((await client.downloadArtifact(run.info.runId, 'outputs/dev split/results.jsonl')).toString('utf8')).toBe(content);
    expect(Buffer.compare(await client.downloadArtifact(run.info.runId, 'bin/blob.bin'), bytes)).toBe(0);
    await expect(client.uploadArtifact(run.info.runId, '../escape.txt', 'x')).rejects.toThrow(/relative path/);
  });
});
