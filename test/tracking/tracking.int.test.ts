import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main';
import { MlflowClient } from '../../src/tracking/client';
import { openTracking } from '../../src/tracking/index';
import { JOURNAL_FILE, SYNC_STATE_FILE, isPendingRunId, readJournal } from '../../src/tracking/journal';
import { flattenParams } from '../../src/tracking/redact';
import { freePort } from '../../src/tracking/server';
import { syncDirectories, syncDirectory } from '../../src/tracking/sync';
import { MlflowTracking, ResilientTracking } from '../../src/tracking/tracking';
import { tempDir, trackingUri, uniqueName } from './helpers';

const uri = trackingUri();
const FAKE_KEY = 'sk-ambiqa-test-DO-NOT-LEAK-0123456789';

/** A TCP relay to the real server that can be cut, to take MLflow "down" in the middle of a run. */
async function relay(target: string): Promise<{ uri: string; cut(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(Number(port), hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  const listenPort = await freePort();
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  return {
    uri: `http://127.0.0.1:${listenPort}`,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** Notices the trackers print, captured instead of cluttering the test output. */
function notices(): { notify: (m: string) => void; messages: string[] } {
  const messages: string[] = [];
  return { notify: (m) => messages.push(m), messages };
}

async function deadUri(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

describe.skipIf(!uri)('tracking against a real MLflow server', () => {
  const client = new MlflowClient(uri);
  const savedKey = process.env.OPENAI_API_KEY;
  beforeAll(() => {
    process.env.OPENAI_API_KEY = FAKE_KEY;
  });
  afterAll(() => {
    if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = savedKey;
  });

  it('logs a parent run and a nested child live, readable through the REST API', async () => {
    const experimentName = uniqueName('live');
    const tracking = new MlflowTracking({ uri });
    const parent = await tracking.startRun({ experimentName, runName: 'sweep', tags: { 'ambiqa.kind': 'sweep' } });
    const child = await tracking.startRun({ experimentName, runName: 'threshold=3', parentRunId: parent.runId });
    const config = { pipeline: { name: 'verify-edit', threshold: 3 }, llm: { model: 'smollm2', temperature: 0.7 } };
    await child.logParams(flattenParams(config));
    await child.logParams({ 'pipeline.threshold': 3 }); // same value again: allowed
    await expect(child.logParams({ 'pipeline.threshold': 4 })).rejects.toThrow(/already logged as '3'/);
    for (let step = 0; step < 3; step++) await child.logMetrics({ str_em: step / 10, llm_calls: 5 * step }, step);
    await child.setTags({ 'ambiqa.dataset': 'asqa' });
    const dir = tempDir();
    writeFileSync(join(dir, 'metrics.json'), JSON.stringify({ str_em: 0.2 }));
    await child.logArtifact(join(dir, 'metrics.json'));
    await child.logArtifact(join(dir, 'metrics.json'), 'copies');
    mkdirSync(join(dir, 'plots', 'png'), { recursive: true });
    writeFileSync(join(dir, 'plots', 'a.html'), '<html></html>');
    writeFileSync(join(dir, 'plots', 'png', 'b.png'), Buffer.from([137, 80, 78, 71]));
    await child.logArtifact(join(dir, 'plots'), 'figures');
    await expect(child.logArtifact(join(dir, 'missing.json'))).rejects.toThrow(/cannot log artifact .*missing\.json: no such file/);
    await child.finish('FINISHED');
    await parent.finish('FINISHED');

    expect(tracking.runUrl(child.experimentId, child.runId)).toBe(`${uri}/#/experiments/${child.experimentId}/runs/${child.runId}`);
    const run = await client.getRun(child.runId);
    expect(run.info.status).toBe('FINISHED');
    expect(run.info.endTime).toBeGreaterThan(0);
    expect(run.params).toEqual({ 'pipeline.name': 'verify-edit', 'pipeline.threshold': '3', 'llm.model': 'smollm2', 'llm.temperature': '0.7' });
    expect(run.tags['mlflow.parentRunId']).toBe(parent.runId);
    expect(run.tags['ambiqa.dataset']).toBe('asqa');
    expect(run.tags['mlflow.runName']).toBe('threshold=3');
    expect((await client.getMetricHistory(child.runId, 'str_em')).map((m) => [m.step, m.value])).toEqual([
      [0, 0],
      [1, 0.1],
      [2, 0.2],
    ]);
    expect(JSON.parse((await client.downloadArtifact(child.runId, 'copies/metrics.json')).toString())).toEqual({ str_em: 0.2 });
    expect((await client.listArtifactsRecursive(child.runId)).map((e) => e.path).sort()).toEqual([
      'copies/metrics.json',
      'figures/plots/a.html',
      'figures/plots/png/b.png',
      'metrics.json',
    ]);
    const inExperiment = await client.searchAllRuns({ experimentIds: [child.experimentId] });
    expect(inExperiment).toHaveLength(2);
  });

  it('re-opens a run on resume instead of creating a second one', async () => {
    const experimentName = uniqueName('resume');
    const tracking = new MlflowTracking({ uri });
    const first = await tracking.startRun({ experimentName, runName: 'r' });
    await first.logMetrics({ done: 1 }, 0);
    await first.finish('KILLED');
    expect((await client.getRun(first.runId)).info.status).toBe('KILLED');

    const again = await new MlflowTracking({ uri }).startRun({ experimentName, runName: 'r', resumeRunId: first.runId, tags: { 'ambiqa.sessions': '2' } });
    expect(again.runId).toBe(first.runId);
    expect((await client.getRun(first.runId)).info.status).toBe('RUNNING');
    await again.logMetrics({ done: 2 }, 1);
    await again.finish('FINISHED');
    const runs = await client.searchAllRuns({ experimentIds: [first.experimentId] });
    expect(runs).toHaveLength(1);
    expect(runs[0].tags['ambiqa.sessions']).toBe('2');
    expect((await client.getMetricHistory(first.runId, 'done')).map((m) => m.value)).toEqual([1, 2]);
    await expect(new MlflowTracking({ uri }).startRun({ experimentName, runName: 'r', resumeRunId: 'f'.repeat(32) })).rejects.toThrow(/cannot resume MLflow run/);
  });

  it('never lets an API key reach params, tags, artifacts or the offline journal', async () => {
    const experimentName = uniqueName('secrets');
    const config = { llm: { provider: 'openai', apiKey: FAKE_KEY, baseUrl: `http://llm.local/v1?api_key=${FAKE_KEY}`, max_tokens: 32 } };
    const dir = tempDir();
    const artifact = join(dir, 'config.json');
    writeFileSync(artifact, JSON.stringify(config));
    const check = async (runId: string) => {
      const run = await client.getRun(runId);
      const everything = JSON.stringify({ params: run.params, tags: run.tags });
      expect(everything).not.toContain(FAKE_KEY);
      expect(run.params['llm.apiKey']).toBe('[redacted]');
      expect(run.params['llm.max_tokens']).toBe('32');
      expect(run.tags.auth_token).toBe('[redacted]');
      const downloaded = (await client.downloadArtifact(runId, 'config.json')).toString();
      expect(downloaded).not.toContain(FAKE_KEY);
      expect(JSON.parse(downloaded).llm.provider).toBe('openai');
    };
    const log = async (tracking: MlflowTracking) => {
      const run = await tracking.startRun({ experimentName, runName: 'leaky', tags: { auth_token: FAKE_KEY, note: `key is ${FAKE_KEY}` } });
      await run.logParams(flattenParams(config));
      await run.setTags({ header: `Bearer ${FAKE_KEY}` });
      await run.logArtifact(artifact);
      await run.finish('FINISHED');
      return run.runId;
    };
    const quiet = notices();
    // Live …
    await check(await log(new MlflowTracking({ uri, notify: quiet.notify })));
    // … and through the journal, which must not hold the key either.
    const offlineDir = tempDir();
    const pendingId = await log(new ResilientTracking({ uri: await deadUri(), bufferDir: offlineDir, notify: quiet.notify }));
    expect(readFileSync(join(offlineDir, JOURNAL_FILE), 'utf8')).not.toContain(FAKE_KEY);
    const [result] = await syncDirectories([offlineDir], { client });
    await check(result.runs[pendingId].runId);
    expect(quiet.messages.some((m) => m.includes('masked'))).toBe(true);
  });

  it('keeps everything on disk when the server is down at start; sync uploads it, once', async () => {
    const experimentName = uniqueName('offline');
    const dead = await deadUri();
    const parentDir = tempDir();
    const childDir = tempDir();
    const quiet = notices();
    const tracking = new ResilientTracking({ uri: dead, bufferDir: parentDir, notify: quiet.notify });
    const parent = await tracking.startRun({ experimentName, runName: 'sweep' });
    expect(isPendingRunId(parent.runId)).toBe(true);
    expect(quiet.messages[0]).toContain(dead);
    expect(quiet.messages[0]).toContain(`npx ambiqa sync ${parentDir}`);
    // The runner records the ids it was given; sync must correct them.
    writeFileSync(join(parentDir, 'mlflow.json'), JSON.stringify({ experimentName, experimentId: parent.experimentId, runId: parent.runId, runUrl: tracking.runUrl(parent.experimentId, parent.runId) }));

    const child = await new ResilientTracking({ uri: dead, bufferDir: childDir, notify: quiet.notify }).startRun({ experimentName, runName: 'k=5', parentRunId: parent.runId });
    await child.logParams({ 'retriever.k': 5, 'llm.temperature': 0 });
    await child.logMetrics({ str_em: 0.3 }, 0);
    await child.logMetrics({ str_em: 0.4, 'nan metric': NaN }, 1);
    await child.setTags({ 'ambiqa.dataset': 'asqa' });
    const results = join(childDir, 'results.jsonl');
    writeFileSync(results, '{"id":"q1"}\n');
    await child.logArtifact(results, 'outputs');
    writeFileSync(results, 'changed after logging\n'); // the upload is what was logged, not this
    await child.finish('FINISHED');
    await parent.setTags({ 'ambiqa.summary': 'best k=5' });
    await parent.finish('FINISHED');
    expect(quiet.messages.some((m) => m.includes('operation(s) in'))).toBe(true);
    expect(readJournal(childDir).map((op) => op.op)).toEqual(['start', 'params', 'metrics', 'metrics', 'tags', 'artifact', 'finish']);

    // Child first on purpose: it waits for its parent, which is synced in the same call.
    const [childResult, parentResult] = await syncDirectories([childDir, parentDir], { client, notify: () => undefined });
    expect(childResult.applied).toBe(7);
    const childRun = await client.getRun(childResult.runs[child.runId].runId);
    const parentRunId = parentResult.runs[parent.runId].runId;
    expect(childRun.info.status).toBe('FINISHED');
    expect(childRun.info.runName).toBe('k=5');
    expect(childRun.params).toEqual({ 'retriever.k': '5', 'llm.temperature': '0' });
    expect(childRun.tags['mlflow.parentRunId']).toBe(parentRunId);
    expect(childRun.tags['ambiqa.dataset']).toBe('asqa');
    const history = await client.getMetricHistory(childRun.info.runId, 'str_em');
    expect(history.map((m) => [m.step, m.value])).toEqual([
      [0, 0.3],
      [1, 0.4],
    ]);
    expect(Number.isNaN(childRun.metrics['nan metric'].value)).toBe(true);
    // Logged offline, uploaded later: the timestamps are those of logging.
    expect(history[0].timestamp).toBeLessThan(Date.now() - 10);
    expect((await client.downloadArtifact(childRun.info.runId, 'outputs/results.jsonl')).toString()).toBe('{"id":"q1"}\n');
    const parentRun = await client.getRun(parentRunId);
    expect(parentRun.tags['ambiqa.summary']).toBe('best k=5');
    expect(parentRun.info.status).toBe('FINISHED');
    const record = JSON.parse(readFileSync(join(parentDir, 'mlflow.json'), 'utf8'));
    expect(record.runId).toBe(parentRunId);
    expect(record.experimentId).toBe(parentRun.info.experimentId);
    expect(record.runUrl).toBe(`${uri}/#/experiments/${parentRun.info.experimentId}/runs/${parentRunId}`);

    // A second sync does nothing …
    const again = await syncDirectories([parentDir, childDir], { client });
    expect(again.map((r) => [r.alreadySynced, r.applied])).toEqual([
      [true, 0],
      [true, 0],
    ]);
    // … and even a sync that lost its progress file (killed before saving it) creates nothing twice.
    rmSync(join(childDir, SYNC_STATE_FILE));
    const replay = await syncDirectory(childDir, { client });
    expect(replay.applied).toBe(7);
    expect(replay.runs[child.runId].runId).toBe(childRun.info.runId);
    const runs = await client.searchAllRuns({ experimentIds: [parentRun.info.experimentId] });
    expect(runs).toHaveLength(2);
    expect(await client.getMetricHistory(childRun.info.runId, 'str_em')).toHaveLength(2);
  });

  it('switches to the journal when the server goes away mid-run, and sync continues the same run', async () => {
    const experimentName = uniqueName('midrun');
    const link = await relay(uri);
    const dir = tempDir();
    const quiet = notices();
    const tracking = new ResilientTracking({ uri: link.uri, bufferDir: dir, notify: quiet.notify });
    const run = await tracking.startRun({ experimentName, runName: 'flaky' });
    expect(isPendingRunId(run.runId)).toBe(false);
    await run.logParams({ seed: 1 });
    await run.logMetrics({ progress: 0.5 }, 0);
    expect(run.state).toBe('live');

    await link.cut();
    await run.logMetrics({ progress: 1 }, 1);
    expect(run.state).toBe('buffered');
    const file = join(dir, 'traces.jsonl');
    writeFileSync(file, '{"trace":1}\n');
    await run.logArtifact(file);
    await run.finish('FINISHED');
    expect(quiet.messages.join('\n')).toMatch(/unreachable/);
    expect((await client.getRun(run.runId)).info.status).toBe('RUNNING');

    const result = await syncDirectory(dir, { client });
    expect(result.runs[run.runId].runId).toBe(run.runId);
    const back = await client.getRun(run.runId);
    expect(back.info.status).toBe('FINISHED');
    expect(back.params).toEqual({ seed: '1' });
    expect((await client.getMetricHistory(run.runId, 'progress')).map((m) => m.value)).toEqual([0.5, 1]);
    expect((await client.downloadArtifact(run.runId, 'traces.jsonl')).toString()).toBe('{"trace":1}\n');
    expect(await client.searchAllRuns({ experimentIds: [run.experimentId] })).toHaveLength(1);
  });

  it('resumes a run that was started offline: uploads it, then continues live as one run', async () => {
    const experimentName = uniqueName('resume-offline');
    const dir = tempDir();
    const quiet = notices();
    const offline = await new ResilientTracking({ uri: await deadUri(), bufferDir: dir, notify: quiet.notify }).startRun({ experimentName, runName: 'killed' });
    await offline.logMetrics({ answered: 10 }, 0);
    // … SIGKILL here: no finish. Later, with the server back:
    const resumed = await new ResilientTracking({ uri, bufferDir: dir, notify: quiet.notify }).startRun({ experimentName, runName: 'killed', resumeRunId: offline.runId });
    expect(isPendingRunId(resumed.runId)).toBe(false);
    expect(resumed.state).toBe('live');
    await resumed.logMetrics({ answered: 20 }, 1);
    await resumed.finish('FINISHED');
    const runs = await client.searchAllRuns({ experimentIds: [resumed.experimentId] });
    expect(runs.map((r) => r.info.runId)).toEqual([resumed.runId]);
    expect(runs[0].info.status).toBe('FINISHED');
    expect((await client.getMetricHistory(resumed.runId, 'answered')).map((m) => m.value)).toEqual([10, 20]);
  });

  it('`ambiqa sync` uploads a run directory and says so; a second call does nothing', async () => {
    const experimentName = uniqueName('cli-sync');
    // Given a sweep-like folder, sync finds the run directories below it.
    const sweepDir = tempDir();
    const dir = join(sweepDir, 'child-1');
    const run = await new ResilientTracking({ uri: await deadUri(), bufferDir: dir, notify: () => undefined }).startRun({ experimentName, runName: 'cli' });
    await run.logMetrics({ m: 1 });
    await run.finish('FAILED');
    const out: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void out.push(args.join(' ')));
    const savedUri = process.env.MLFLOW_TRACKING_URI;
    process.env.MLFLOW_TRACKING_URI = uri;
    try {
      expect(await main(['sync', '--dry-run', sweepDir])).toBe(0);
      expect(out.pop()).toMatch(/child-1: 3 of 3 operation\(s\) to upload/);
      expect(await main(['sync', sweepDir])).toBe(0);
      expect(out.pop()).toMatch(/child-1: uploaded 3 operation\(s\) → http.*\/runs\/[0-9a-f]{32}/);
      expect(await main(['sync', dir])).toBe(0);
      expect(out.pop()).toMatch(/already synced/);
    } finally {
      spy.mockRestore();
      if (savedUri === undefined) delete process.env.MLFLOW_TRACKING_URI;
      else process.env.MLFLOW_TRACKING_URI = savedUri;
    }
    const experiment = await client.getExperimentByName(experimentName);
    const runs = await client.searchAllRuns({ experimentIds: [experiment!.experimentId] });
    expect(runs).toHaveLength(1);
    expect(runs[0].info.status).toBe('FAILED');
    expect(existsSync(join(dir, SYNC_STATE_FILE))).toBe(true);
  });
});

describe('openTracking without any server', () => {
  it('keeps a run in the journal when the local server cannot start, and says why', async () => {
    const saved = { uri: process.env.MLFLOW_TRACKING_URI, venv: process.env.AMBIQA_VENV_DIR, artifacts: process.env.AMBIQA_ARTIFACTS_DIR };
    const dir = tempDir();
    delete process.env.MLFLOW_TRACKING_URI;
    process.env.AMBIQA_VENV_DIR = join(dir, 'no-venv');
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    const quiet = notices();
    try {
      await expect(openTracking({ notify: quiet.notify })).rejects.toThrow(/MLflow is not installed/);
      const tracking = await openTracking({ bufferDir: dir, notify: quiet.notify });
      const run = await tracking.startRun({ experimentName: 'e', runName: 'no-server' });
      await run.logMetrics({ m: 1 });
      await run.finish('FINISHED');
      expect(isPendingRunId(run.runId)).toBe(true);
      expect(readJournal(dir).map((op) => op.op)).toEqual(['start', 'metrics', 'finish']);
      expect(quiet.messages.join('\n')).toMatch(/MLflow is not installed[\s\S]*npx ambiqa setup[\s\S]*npx ambiqa sync/);
    } finally {
      for (const [key, value] of [['MLFLOW_TRACKING_URI', saved.uri], ['AMBIQA_VENV_DIR', saved.venv], ['AMBIQA_ARTIFACTS_DIR', saved.artifacts]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});

describe('ambiqa sync: bad input', () => {
  it('names a directory without a journal', async () => {
    const dir = tempDir();
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void err.push(args.join(' ')));
    try {
      expect(await main(['sync', dir])).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(err.join('\n')).toContain(`${dir} has no ${JOURNAL_FILE}`);
    expect(err.join('\n')).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });
});
