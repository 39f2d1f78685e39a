import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { readJsonl } from '../../src/common/jsonl';
import { ExitStatus } from '../../src/experiments/exit-status';
import type { ExampleResult, RunState } from '../../src/run-files';
import { runCli, startCli, waitFor, type CliRun } from '../helpers/cli';
import { writeAsqa, writeYaml, type CallLine } from './helpers/files';

/**
 * One run folder, one writer, with real concurrent processes of the real command: of four
 * `ambiqa run --name X` started at once exactly one runs; of three `--resume`s of a run killed
 * with SIGKILL (its lock left behind) one takes the stale lock over and finishes, and none
 * repeats a call that had finished.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-lock-'));
const artifacts = join(dir, 'artifacts');
const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(name: string, questions: number, latencyMs: number): { file: string; callLog: string } {
  const callLog = join(dir, `${name}-calls.jsonl`);
  const file = writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: writeAsqa(dir, questions) },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', cycle: ['In 1990.', 'In 2001, then 2011.', 'Nobody knows.'], latencyMs, cache: join(dir, `${name}.sqlite`), callLog },
    tracking: { enabled: false },
    concurrency: 1,
  });
  return { file, callLog };
}

const IN_USE = /^ambiqa run: run directory (\S+) is in use by PID (\d+) on host (\S+) \(since [^)]+\); one run folder has one writer — wait for that process to end, or remove \1\/run\.lock once it is known to be gone$/;

/** Of `runs`, the one that ran (exit 0) and the refused ones (exit 1, one line naming the winner). */
async function oneRanOthersRefused(runs: CliRun[], runDir: string): Promise<CliRun> {
  const codes = await Promise.all(runs.map((r) => r.exited));
  const winners = runs.filter((_, i) => codes[i] === ExitStatus.ok);
  expect(winners, runs.map((r) => r.output()).join('\n-----\n')).toHaveLength(1);
  const winner = winners[0]!;
  for (const [i, r] of runs.entries()) {
    if (r === winner) continue;
    expect(codes[i], r.output()).toBe(ExitStatus.error);
    const lines = r.stderr().trimEnd().split('\n');
    expect(lines, r.stderr()).toHaveLength(1);
    const m = IN_USE.exec(lines[0]!);
    expect(m, lines[0]).not.toBeNull();
    expect(m![1]).toBe(runDir);
    expect(Number(m![2])).toBe(winner.child.pid);
    expect(m![3]).toBe(hostname());
    expect(r.stdout()).toBe('');
  }
  return winner;
}

describe('one run folder, one writer', () => {
  it('four `ambiqa run --name X` at once: exactly one runs, the others are refused in one line naming its PID and host', async () => {
    const { file, callLog } = config('four', 6, 1500);
    const runDir = join(artifacts, 'runs', 'same');
    const runs = Array.from({ length: 4 }, () => startCli(['run', file, '--name', 'same', '--quiet'], env));
    await oneRanOthersRefused(runs, runDir);
    const results = readJsonl<ExampleResult>(join(runDir, 'results.jsonl'));
    expect(results.map((r) => r.id)).toEqual(['q00', 'q01', 'q02', 'q03', 'q04', 'q05']);
    expect(JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8')) as RunState).toMatchObject({ status: 'FINISHED', sessions: 1, done: 6 });
    // One process called the model, each call once.
    const calls = readJsonl<CallLine>(callLog).filter((c) => c.event === 'start');
    expect(new Set(calls.map((c) => c.pid)).size).toBe(1);
    expect(new Set(calls.map((c) => `${c.key}#${c.sampleIndex}`)).size).toBe(calls.length);
    // The lock is gone with its holder.
    expect(existsSync(join(runDir, 'run.lock'))).toBe(false);
  }, 180_000);

  it('three parallel --resumes of a killed run: one takes the stale lock over and finishes, none repeats a finished call', async () => {
    const { file, callLog } = config('resume', 8, 1000);
    const runDir = join(artifacts, 'runs', 'resume');
    const first = startCli(['run', file, '--quiet'], env);
    const results = join(runDir, 'results.jsonl');
    await waitFor(() => existsSync(results) && readJsonl(results).length >= 2, 'two answered questions');
    first.child.kill('SIGKILL');
    await first.exited;
    // The killed process could not remove its lock: it is stale now.
    expect(JSON.parse(readFileSync(join(runDir, 'run.lock'), 'utf8'))).toMatchObject({ pid: first.child.pid, host: hostname() });
    const finishedBefore = new Set(readJsonl<CallLine>(callLog).filter((c) => c.event === 'end').map((c) => `${c.key}#${c.sampleIndex}`));
    expect(finishedBefore.size).toBeGreaterThanOrEqual(2);

    const resumes = Array.from({ length: 3 }, () => startCli(['run', file, '--quiet', '--resume'], env));
    const winner = await oneRanOthersRefused(resumes, runDir);
    expect(winner.stderr()).toContain(`note: run directory ${runDir} was locked by PID ${first.child.pid} on host ${hostname()}`);
    expect(winner.stderr()).toContain('which no longer runs; taking the lock over');

    const answered = readJsonl<ExampleResult>(results);
    expect(answered.map((r) => r.id)).toEqual(['q00', 'q01', 'q02', 'q03', 'q04', 'q05', 'q06', 'q07']);
    const resumedCalls = readJsonl<CallLine>(callLog).filter((c) => c.event === 'start' && c.pid !== first.child.pid);
    expect(resumedCalls.length).toBeGreaterThan(0);
    expect(new Set(resumedCalls.map((c) => c.pid))).toEqual(new Set([winner.child.pid]));
    expect(resumedCalls.filter((c) => finishedBefore.has(`${c.key}#${c.sampleIndex}`))).toEqual([]);
    expect(JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8')) as RunState).toMatchObject({ status: 'FINISHED', sessions: 2, done: 8 });
  }, 180_000);

  it('a notebook session (in-process) is refused while a command runs the folder, and { existing: fresh } deletes nothing of it', async () => {
    const { file } = config('kernel', 6, 1000);
    const runDir = join(artifacts, 'runs', 'kernel');
    const cli = startCli(['run', file, '--quiet'], env);
    await waitFor(() => existsSync(join(runDir, 'results.jsonl')) && readJsonl(join(runDir, 'results.jsonl')).length >= 1, 'a first answered question');
    const saved = process.env.AMBIQA_ARTIFACTS_DIR;
    process.env.AMBIQA_ARTIFACTS_DIR = artifacts;
    try {
      const { runInProcess, closeSession } = await import('../../src/experiments/session');
      const input = YAML.parse(readFileSync(file, 'utf8'));
      await expect(runInProcess(input, { name: 'kernel', existing: 'fresh' })).rejects.toThrow(new RegExp(`^run directory ${runDir} is in use by PID ${cli.child.pid} on host `));
      await closeSession();
    } finally {
      if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
      else process.env.AMBIQA_ARTIFACTS_DIR = saved;
    }
    expect(await cli.exited, cli.output()).toBe(ExitStatus.ok);
    expect(readJsonl<ExampleResult>(join(runDir, 'results.jsonl'))).toHaveLength(6);
  }, 120_000);

  it('a lock renewed from another host is refused, naming the file to remove; one not renewed for two minutes is taken over', async () => {
    const { file } = config('elsewhere', 2, 0);
    const runDir = join(artifacts, 'runs', 'elsewhere');
    const lock = join(runDir, 'run.lock');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(lock, JSON.stringify({ pid: 4242, host: 'node-17.cluster', startedAt: '2026-01-01T00:00:00.000Z', nonce: 'x' }));
    const r = await runCli(['run', file, '--quiet', '--resume'], env);
    expect(r.code, r.output).toBe(ExitStatus.error);
    expect(r.stderr.trimEnd()).toMatch(
      new RegExp(
        `^ambiqa run: run directory ${runDir} is in use by PID 4242 on host node-17\\.cluster \\(since 2026-01-01T00:00:00\\.000Z, last seen \\d+ s ago\\); one run folder has one writer — wait for that process to end, or remove ${lock} once it is known to be gone$`,
      ),
    );
    // Its holder died with its node (no heartbeat for three minutes): the next session takes over.
    const old = new Date(Date.now() - 180_000);
    utimesSync(lock, old, old);
    const ok = await runCli(['run', file, '--quiet', '--resume'], env);
    expect(ok.code, ok.output).toBe(ExitStatus.ok);
    expect(ok.stderr).toContain(`note: run directory ${runDir} was locked by PID 4242 on host node-17.cluster (since 2026-01-01T00:00:00.000Z), whose lock was not renewed for 120 s or more; taking the lock over`);
    expect(existsSync(lock)).toBe(false);
  }, 120_000);
});
