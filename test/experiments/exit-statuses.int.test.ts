import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitStatus } from '../../src/experiments/exit-status';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { runCli, startCli, waitFor } from '../helpers/cli';
import { writeAsqa, writeYaml } from './helpers/files';

/**
 * Every exit status of docs/cli.md through the real command (`node bin/ambiqa.mjs …`) against a
 * loopback OpenAI-compatible server: a scheduler, a CI job or a sweep reads nothing else.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-exit-'));
const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts') };
let server: FaultServer;
let data: string;

beforeAll(async () => {
  server = await startFaultServer();
  server.models = ['gen-model'];
  data = writeAsqa(dir, 4);
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A closed-book run on the loopback server, with a cache of its own (nothing replays between tests). */
function config(name: string, llm: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'gen-model', cache: join(dir, `${name}.sqlite`), maxRetries: 0, ...llm },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
    ...extra,
  });
}

const fail = (n: number) => Array.from({ length: n }, () => ({ kind: 'status' as const, status: 400, body: { error: { message: 'this prompt is refused' } } }));

describe('ambiqa run', () => {
  it('0: every selected question was answered', async () => {
    server.script = [];
    const r = await runCli(['run', config('clean'), '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.ok);
    expect(r.stdout).toMatch(/run clean FINISHED: 4 answered, 0 failed of 4 questions/);
    expect(r.stdout).not.toContain('exit status');
  });

  it('4: some questions failed; the summary says how many and why, grouped by cause', async () => {
    server.script = fail(2);
    const r = await runCli(['run', config('partial'), '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.someFailed);
    expect(r.stdout).toMatch(/run partial FINISHED: 2 answered, 2 failed of 4 questions/);
    expect(r.stdout).toMatch(/^ {2}failed \(2\): HTTP 400 from http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: this prompt is refused/m);
    expect(r.stdout).toContain('exit status 4: some questions failed');
  });

  it('5: no question was answered (the run still finishes and writes what it has)', async () => {
    server.script = fail(4);
    const r = await runCli(['run', config('none'), '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.noneAnswered);
    expect(r.stdout).toMatch(/run none FINISHED: 0 answered, 4 failed of 4 questions/);
    expect(r.stdout).toContain('exit status 5: no question was answered');
    // A resume tries the failed questions again: with the server healthy, all are answered.
    const again = await runCli(['run', config('none'), '--quiet', '--resume'], env);
    expect(again.code, again.output).toBe(ExitStatus.ok);
  });

  it('5 with --skip-preflight on a model the server does not serve (the unchecked run answers nothing)', async () => {
    const r = await runCli(['run', config('unserved', { model: 'no-such-model' }), '--quiet', '--skip-preflight'], env);
    expect(r.code, r.output).toBe(ExitStatus.noneAnswered);
    expect(r.stdout).toMatch(/failed \(4\): the server at .* does not serve model "no-such-model"/);
  });

  it('3: the cost cap stopped it (resumable)', async () => {
    server.script = [];
    // 11 prompt + 7 completion tokens at $1,000 per million: $0.018 a call; the second would pass $0.02.
    const file = config('capped', { pricing: { prompt: 1000, completion: 1000 } });
    const r = await runCli(['run', file, '--quiet', '--max-cost', '0.02'], env);
    expect(r.code, r.output).toBe(ExitStatus.costCap);
    expect(r.stdout).toContain('stopped: stopped by the cost cap');
  });

  it('130: SIGHUP (a closed terminal) stops it cleanly, resumable', async () => {
    server.script = [];
    server.okDelayMs = 1500;
    try {
      const cli = startCli(['run', config('hangup'), '--quiet'], env);
      const results = join(dir, 'artifacts', 'runs', 'hangup', 'results.jsonl');
      await waitFor(() => existsSync(results) && readFileSync(results, 'utf8').trim() !== '', 'a first answered question');
      cli.child.kill('SIGHUP');
      expect(await cli.exited, cli.output()).toBe(ExitStatus.interrupted);
      expect(cli.stdout()).toMatch(/run hangup KILLED/);
      expect(cli.stderr()).toContain('SIGHUP: stopping after writing what is done');
    } finally {
      server.okDelayMs = 0;
    }
  });

  it('1: input refused before any work; 2: a command line that does not parse', async () => {
    const bad = await runCli(['run', config('bad', {}, { pipeline: { name: 'no-such-pipeline' } })], env);
    expect(bad.code, bad.output).toBe(ExitStatus.error);
    expect(bad.stderr).toMatch(/pipeline\.name: unknown pipeline "no-such-pipeline"/);
    const usage = await runCli(['run', config('usage'), '--no-such-option'], env);
    expect(usage.code, usage.output).toBe(ExitStatus.usage);
  });
});

describe('sweep, merge and compare pass them on', () => {
  it('a sweep fails when a point fails, and says which', async () => {
    server.script = [];
    // The second point's prompt limit refuses every prompt: that point answers nothing.
    const file = config('sweep', {}, { sweep: { 'llm.maxPromptChars': [1_000_000, 10] } });
    const r = await runCli(['sweep', file, '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.noneAnswered);
    expect(r.stdout).toMatch(/^ {2}point maxPromptChars=10 FINISHED: 0 of 4 questions answered \(exit status 5: no question was answered; .*maxPromptChars=10\)$/m);
    expect(r.stdout).not.toMatch(/point maxPromptChars=1000000/);
  });

  it('merge: 4 when a shard has failed questions; compare: 4 when a compared run has', async () => {
    server.script = fail(1);
    const file = config('sharded');
    const s0 = await runCli(['run', file, '--quiet', '--shard', '0/2'], env);
    expect(s0.code, s0.output).toBe(ExitStatus.someFailed);
    const s1 = await runCli(['run', file, '--quiet', '--shard', '1/2'], env);
    expect(s1.code, s1.output).toBe(ExitStatus.ok);
    const runs = join(dir, 'artifacts', 'runs');
    const merged = await runCli(['merge', join(runs, 'sharded.shard-0of2'), join(runs, 'sharded.shard-1of2'), '--no-tracking'], env);
    expect(merged.code, merged.output).toBe(ExitStatus.someFailed);
    expect(merged.stdout).toMatch(/run sharded FINISHED: 3 answered, 1 failed of 4 questions/);

    const compared = await runCli(['compare', join(runs, 'clean'), join(runs, 'sharded'), '--no-tracking', '--out', join(dir, 'cmp', 'comparison.json')], env);
    expect(compared.code, compared.output).toBe(ExitStatus.someFailed);
    expect(compared.stdout).toContain('sharded: 1 of 4 questions failed (left out of its pairs)');
    expect(existsSync(join(dir, 'cmp', 'comparison.json'))).toBe(true);

    // Two clean runs compare with 0.
    const ok = await runCli(['compare', join(runs, 'clean'), join(runs, 'none'), '--no-tracking', '--out', join(dir, 'cmp2', 'comparison.json')], env);
    expect(ok.code, ok.output).toBe(ExitStatus.ok);
  });
});
