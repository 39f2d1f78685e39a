import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonl } from '../../src/common/jsonl';
import { rowKey, type ExampleResult } from '../../src/run-files';
import { startCli } from '../helpers/cli';
import type { CallLine } from './helpers/files';
import { writeAsqa, writeYaml } from './helpers/files';

// `ambiqa run --trials 3` in a child process, stopped with Ctrl-C (SIGINT) part-way and resumed:
// the resumed run answers only the missing (question, trial) pairs, no provider call that had
// finished is made again (the scripted provider's call log, by process), and the files equal an
// uninterrupted run's. Needs dist (`npm run build`), as the other CLI tests do.

async function waitFor(condition: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('--trials, Ctrl-C and --resume (child process)', () => {
  it('repeats no finished trial and no finished call, and ends with the uninterrupted run\'s rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-trials-resume-'));
    const callLog = join(dir, 'calls.jsonl');
    const config = writeYaml(join(dir, 'trials.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 4) },
      // Sampled: each trial draws its own sample (indexes 0, 1000, 2000: replies 7 apart in the cycle are distinct).
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16, temperature: 0.7 } },
      llm: { provider: 'scripted', cycle: ['In 1990.', 'In 1991.', 'In 1992.', 'In 2001.', 'In 2002.', 'In 2003.', 'Nobody knows.'], latencyMs: 200, cache: join(dir, 'cache.sqlite'), callLog },
      tracking: { enabled: false },
      concurrency: 2,
    });
    const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: join(dir, 'artifacts') };
    const results = join(dir, 'artifacts', 'runs', 'trials', 'results.jsonl');

    const first = startCli(['run', config, '--trials', '3', '--quiet'], env);
    await waitFor(() => existsSync(results) && readJsonl(results).length >= 4, 'four finished answers');
    first.child.kill('SIGINT');
    expect(await first.exited, first.output()).toBe(130);
    const doneBefore = new Set(readJsonl<ExampleResult>(results).map(rowKey));
    expect(doneBefore.size).toBeGreaterThanOrEqual(4);
    expect(doneBefore.size).toBeLessThan(12);

    const second = startCli(['run', config, '--trials', '3', '--resume', '--quiet'], env);
    expect(await second.exited, second.output()).toBe(0);
    expect(second.stdout()).toMatch(/run trials FINISHED: 12 answered, 0 failed of 12 answers \(4 questions × 3 trials\)/);
    const resumed = readJsonl<ExampleResult>(results);

    const ref = startCli(['run', config, '--trials', '3', '--name', 'reference', '--quiet', '--set', `llm.cache=${join(dir, 'ref.sqlite')}`, '--set', `llm.callLog=${join(dir, 'ref-calls.jsonl')}`, '--set', 'llm.latencyMs=0'], env);
    expect(await ref.exited, ref.output()).toBe(0);
    const reference = readJsonl<ExampleResult>(join(dir, 'artifacts', 'runs', 'reference', 'results.jsonl'));
    const view = (r: ExampleResult) => ({ key: rowKey(r), trial: r.trial, output: r.output });
    expect(resumed.map(view)).toEqual(reference.map(view));
    expect(new Set(resumed.filter((r) => r.id === 'q00').map((r) => r.output)).size).toBeGreaterThan(1); // trials drew different samples

    // The scripted provider's calls, by process: none that finished in the first is made again,
    // and each (question, trial) has its one sampled call.
    const calls = readJsonl<CallLine>(callLog);
    const pids = [...new Set(calls.map((c) => c.pid))];
    expect(pids).toHaveLength(2);
    const finishedFirst = new Set(calls.filter((c) => c.pid === pids[0] && c.event === 'end').map((c) => c.key));
    const startedSecond = calls.filter((c) => c.pid === pids[1] && c.event === 'start').map((c) => c.key);
    expect(startedSecond.filter((k) => finishedFirst.has(k))).toEqual([]);
    expect(startedSecond.length).toBeLessThanOrEqual(12 - doneBefore.size + 2); // at most the 2 in flight again
    expect(new Set([...finishedFirst, ...startedSecond]).size).toBe(12);
    expect([...new Set(calls.map((c) => c.sampleIndex))].sort((a, b) => a - b)).toEqual([0, 1000, 2000]);
  }, 240_000);
});
