import { scoreValues } from '../../src/run-files';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/config/paths';
import type { ExperimentInput } from '../../src/experiments/config';
import { resumeInProcess, runInProcess, scoreRun } from '../../src/experiments/session';
import { useIsolatedSession } from '../helpers/session-env';

/**
 * In-process runs (what `run` from 'ambiqa' does in a notebook kernel): the scripted model with
 * a latency, so that a SIGINT lands mid-run; the process must survive it, and the same call
 * again must resume the run.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-session-'));

function config(latencyMs: number, reply = 'an answer'): ExperimentInput {
  return {
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json') },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    // The model name is part of the LLM cache key: another reply needs another name.
    llm: { provider: 'scripted', reply, latencyMs, model: `scripted-${reply.replace(/ /g, '-')}`, cache: join(dir, 'llm-cache.sqlite') },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  };
}

useIsolatedSession(dir);

describe('in-process runs', () => {
  it('runs, survives a SIGINT mid-run (KILLED), and the same call resumes it', async () => {
    const first = runInProcess(config(300), { name: 'interrupted' });
    // The SIGINT lands once the first answer is written, with the second in flight (300 ms each):
    // a fixed delay found none written yet when the machine was busy (load average 20).
    const results = join(dir, 'artifacts', 'runs', 'interrupted', 'results.jsonl');
    const poll = setInterval(() => {
      if (existsSync(results) && readFileSync(results, 'utf8').includes('\n')) {
        clearInterval(poll);
        process.emit('SIGINT', 'SIGINT');
      }
    }, 10);
    const stopped = await first.finally(() => clearInterval(poll));
    expect(stopped.status).toBe('KILLED');
    const doneBefore = stopped.results.filter((r) => r.error === undefined).length;
    expect(doneBefore).toBeGreaterThan(0);
    expect(doneBefore).toBeLessThan(6);

    const again = await runInProcess(config(300), { name: 'interrupted' });
    expect(again.status).toBe('FINISHED');
    expect(again.results).toHaveLength(6);
    expect(again.answeredNow).toBe(6 - doneBefore);
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  it('refuses a re-run with a different config unless asked for a fresh run', async () => {
    await expect(runInProcess(config(0, 'another answer'), { name: 'interrupted' })).rejects.toThrow(/exists with a different config \(.*llm\.reply/);
    const fresh = await runInProcess(config(0, 'another answer'), { name: 'interrupted', existing: 'fresh' });
    expect(fresh.status).toBe('FINISHED');
    expect(fresh.answeredNow).toBe(6);
    expect(fresh.results.map((r) => r.output)).toEqual(Array(6).fill('another answer'));
  });

  it('resumes by name and scores a run again from its directory', async () => {
    const resumed = await resumeInProcess('interrupted');
    expect(resumed.status).toBe('FINISHED');
    expect(resumed.answeredNow).toBe(0);
    const scored = await scoreRun('interrupted', { metrics: ['str_em', 'rougeL'] });
    expect(scored.perQuestion.size).toBe(6);
    for (const r of resumed.results) expect(scored.perQuestion.get(r.id)!.str_em).toBe(scoreValues(r).str_em);
    expect(Object.keys(scored.aggregate).sort()).toEqual(['rougeL', 'str_em']);
  });
});
