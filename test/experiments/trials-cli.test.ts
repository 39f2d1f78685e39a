/**
 * `--trials k` on the real `ambiqa run` and `ambiqa sweep` commands (in process, the scripted
 * provider of a config file with its call log and its own LLM cache): the flag reaches the run
 * loop, each trial of a sampled call is a call of its own, a greedy call is made once and replayed
 * in the other trials, and a bad value is refused in one line before any call.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import YAML from 'yaml';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { readJsonl } from '../../src/common/jsonl';
import { AmbiqaError } from '../../src/errors';
import type { ProviderCallLogLine } from '../../src/llm/providers/scripted-config';
import type { ExampleResult } from '../../src/run-files';
import { writeAsqa, writeYaml } from './helpers/files';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-trials-cli-'));
const saved = process.env.AMBIQA_ARTIFACTS_DIR;
let data: string;

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  data = writeAsqa(dir, 3);
});
afterAll(() => {
  if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = saved;
});

function config(name: string, temperature: number, extra: Record<string, unknown> = {}): { file: string; callLog: string } {
  const callLog = join(dir, `${name}.calls.jsonl`);
  const file = writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0, temperature } },
    llm: { provider: 'scripted', cycle: ['1990', '1991', '1992', '2000', '2001'], callLog, cache: join(dir, `${name}.sqlite`) },
    metrics: ['str_em'],
    tracking: { enabled: false },
    ...extra,
  });
  return { file, callLog };
}

const starts = (callLog: string) => readJsonl<ProviderCallLogLine>(callLog).filter((l) => l.event === 'start');

async function quietly(fn: () => Promise<number>): Promise<{ code: number; out: string }> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    const code = await fn();
    return { code, out: log.mock.calls.map((c) => c.join(' ')).join('\n') };
  } finally {
    log.mockRestore();
  }
}

describe('--trials', () => {
  it('ambiqa run --trials 3: every question answered three times, each sampled trial a call of its own', async () => {
    const { file, callLog } = config('sampled', 0.7);
    const { code, out } = await quietly(() => runCommand([file, '--trials', '3', '--quiet', '--skip-preflight']));
    expect(code).toBe(0);
    expect(out).toMatch(/run sampled FINISHED: 9 answered, 0 failed of 9 answers \(3 questions × 3 trials\)/);
    const runDir = join(dir, 'artifacts', 'runs', 'sampled');
    const rows = readJsonl<ExampleResult>(join(runDir, 'results.jsonl'));
    expect(rows.map((r) => `${r.id}/${r.trial}`)).toEqual(['q00/0', 'q00/1', 'q00/2', 'q01/0', 'q01/1', 'q01/2', 'q02/0', 'q02/1', 'q02/2']);
    expect(starts(callLog).map((l) => l.sampleIndex).sort((a, b) => a - b)).toEqual([0, 0, 0, 1000, 1000, 1000, 2000, 2000, 2000]);
    // The flag is recorded in the run's config: a resume without it is refused as a changed config.
    expect(YAML.parse(readFileSync(join(runDir, 'config.yaml'), 'utf8')).trials).toBe(3);
  });

  it('greedy calls are made once: the other trials replay them from the cache', async () => {
    const { file, callLog } = config('greedy', 0);
    const { code } = await quietly(() => runCommand([file, '--trials', '2', '--quiet', '--skip-preflight']));
    expect(code).toBe(0);
    const rows = readJsonl<ExampleResult>(join(dir, 'artifacts', 'runs', 'greedy', 'results.jsonl'));
    expect(rows).toHaveLength(6);
    expect(starts(callLog).map((l) => l.sampleIndex)).toEqual([0, 0, 0]);
    // Trial 1 says the same as trial 0, at no cost.
    for (const id of ['q00', 'q01', 'q02']) {
      const [a, b] = rows.filter((r) => r.id === id);
      expect(b!.output).toBe(a!.output);
      expect(b!.usage.cacheHits).toBe(1);
    }
  });

  it('ambiqa sweep --trials 2: every point of the grid answers each question twice', async () => {
    const { file } = config('swept', 0.7, { sweep: { 'pipeline.options.temperature': [0.5, 0.9] } });
    const { code } = await quietly(() => sweepCommand([file, '--trials', '2', '--quiet', '--skip-preflight']));
    expect(code).toBe(0);
    const runs = join(dir, 'artifacts', 'sweeps', 'swept', 'runs');
    const points = readdirSync(runs);
    expect(points).toHaveLength(2);
    for (const point of points) {
      const rows = readJsonl<ExampleResult>(join(runs, point, 'results.jsonl'));
      expect(rows.map((r) => r.trial)).toEqual([0, 1, 0, 1, 0, 1]);
    }
  });

  it('a bad value is refused in one line naming the option, before any call', async () => {
    const { file, callLog } = config('bad', 0.7);
    const refused = async (args: string[]) => {
      try {
        await runCommand([file, ...args]);
      } catch (error) {
        expect(error).toBeInstanceOf(AmbiqaError);
        return (error as AmbiqaError).message;
      }
      throw new Error('expected a refusal');
    };
    expect(await refused(['--trials', '0'])).toBe('--trials 0: must be a positive whole number');
    expect(await refused(['--trials', 'two'])).toBe('--trials two: must be a positive whole number');
    expect(await refused(['--trials', '101'])).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: trials: .*100`));
    expect(existsSync(callLog)).toBe(false);
  });
});
