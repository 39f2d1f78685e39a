import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { readJsonl } from '../../src/common/jsonl';
import { scoreValues, type ExampleResult } from '../../src/run-files';
import type { CallLine } from './helpers/files';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, metric, searchRuns } from './helpers/mlflow';

// The real CLI in a child process, killed with SIGKILL in the middle of a run, then resumed.
// The scripted provider (selected in the config) is slow and logs every provider call, so the
// test can see which calls each process made.
const uri = inject('mlflowTrackingUri');
const root = resolve(__dirname, '../..');

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [join(root, 'bin/ambiqa.mjs'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, exited, output: () => output };
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!uri && !process.env.CI)('resume after SIGKILL (child process, real MLflow)', () => {
  it('finishes with the same results, repeats no finished LLM call, and keeps one MLflow run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-kill-'));
    const experiment = `test-kill-${Date.now()}`;
    const callLog = join(dir, 'calls.jsonl');
    const config = writeYaml(join(dir, 'kill.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 12) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: {
        provider: 'scripted',
        cycle: ['It first happened in 1993.', 'It happened in 1995 and again in 2005.', 'Nobody knows.', 'In 1991, then 2001.'],
        latencyMs: 250,
        cache: join(dir, 'cache.sqlite'),
        callLog,
      },
      tracking: { experiment },
      concurrency: 2,
    });
    const env = { AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts'), MLFLOW_TRACKING_URI: uri };
    const runDir = join(dir, 'artifacts', 'runs', 'kill');
    const results = join(runDir, 'results.jsonl');

    // 1. Start, and kill -9 once a few questions are done.
    const first = cli(['run', config, '--quiet'], env);
    await waitFor(() => existsSync(results) && readJsonl(results).length >= 3, 'three finished questions');
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe(null); // killed, not exited
    const doneBefore = readJsonl<ExampleResult>(results).map((r) => r.id);
    expect(doneBefore.length).toBeLessThan(12);
    const runId = JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId as string;
    expect((await getRun(uri, runId)).info.status).toBe('RUNNING');

    // 2. Resume.
    const second = cli(['run', config, '--resume', '--quiet'], env);
    expect(await second.exited, second.output()).toBe(0);
    const resumed = readJsonl<ExampleResult>(results);

    // 3. Reference: the same config uninterrupted, with its own cache and no tracking.
    const ref = cli(['run', config, '--name', 'reference', '--no-tracking', '--quiet', '--set', `llm.cache=${join(dir, 'ref.sqlite')}`, '--set', `llm.callLog=${join(dir, 'ref-calls.jsonl')}`, '--set', 'llm.latencyMs=0'], env);
    expect(await ref.exited, ref.output()).toBe(0);
    const reference = readJsonl<ExampleResult>(join(dir, 'artifacts', 'runs', 'reference', 'results.jsonl'));

    const view = (r: ExampleResult) => ({ id: r.id, index: r.index, output: r.output, metrics: scoreValues(r), llmCalls: r.usage.llmCalls });
    expect(resumed.map(view)).toEqual(reference.map(view));
    expect(new Set(resumed.map((r) => r.output)).size).toBeGreaterThan(1); // outputs differ per question

    // No provider call that finished in the killed process was made again.
    const calls = readJsonl<CallLine>(callLog);
    const pids = [...new Set(calls.map((c) => c.pid))];
    expect(pids).toHaveLength(2);
    const finishedFirst = new Set(calls.filter((c) => c.pid === pids[0] && c.event === 'end').map((c) => c.key));
    const startedSecond = calls.filter((c) => c.pid === pids[1] && c.event === 'start').map((c) => c.key);
    expect(finishedFirst.size).toBeGreaterThanOrEqual(3);
    expect(startedSecond.filter((k) => finishedFirst.has(k))).toEqual([]);
    expect(startedSecond.length).toBeLessThanOrEqual(12 - doneBefore.length + 2); // at most the 2 in flight again
    expect(new Set([...finishedFirst, ...startedSecond]).size).toBe(12); // every question's call made once

    // One MLflow run, re-opened and finished, with the totals of the whole run.
    expect(JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId).toBe(runId);
    const runs = await searchRuns(uri, experiment);
    expect(runs.map((r) => r.info.run_id)).toEqual([runId]);
    const run = await getRun(uri, runId);
    expect(run.info.status).toBe('FINISHED');
    expect(metric(run, 'n')).toBe(12);
    expect(metric(run, 'llm_calls')).toBe(12);
    expect(JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8'))).toMatchObject({ status: 'FINISHED', sessions: 2, done: 12 });
  }, 240_000);

  it('stops cleanly on Ctrl-C (SIGINT): exit 130, partial files written, MLflow run KILLED, resumable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-sigint-'));
    const experiment = `test-sigint-${Date.now()}`;
    const config = writeYaml(join(dir, 'stop.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 10) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', reply: 'In 1990.', latencyMs: 300, cache: join(dir, 'cache.sqlite') },
      tracking: { experiment },
      concurrency: 1,
    });
    const env = { AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts'), MLFLOW_TRACKING_URI: uri };
    const runDir = join(dir, 'artifacts', 'runs', 'stop');
    const results = join(runDir, 'results.jsonl');
    const p = cli(['run', config, '--quiet'], env);
    await waitFor(() => existsSync(results) && readJsonl(results).length >= 2, 'two finished questions');
    p.child.kill('SIGINT');
    expect(await p.exited, p.output()).toBe(130);
    expect(p.output()).toContain('SIGINT: stopping');
    const metrics = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8'));
    expect(metrics.status).toBe('KILLED');
    expect(metrics.n).toBeLessThan(10);
    expect(metrics.n).toBe(readJsonl(results).length);
    const runId = JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId as string;
    expect((await getRun(uri, runId)).info.status).toBe('KILLED');

    const again = cli(['run', config, '--resume', '--quiet'], env);
    expect(await again.exited, again.output()).toBe(0);
    expect((await getRun(uri, runId)).info.status).toBe('FINISHED');
    expect(readJsonl(results)).toHaveLength(10);
  }, 120_000);
});
