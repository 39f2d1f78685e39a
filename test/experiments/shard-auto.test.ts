import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { AmbiqaError } from '../../src/errors';
import { resolveShardSpec } from '../../src/experiments/shard';
import { writeAsqa, writeYaml } from './helpers/files';

// `--shard auto`: the index (and count) a scheduler gives a process, as Slurm 22.05 sets the
// variables for `sbatch --array` (checked on a real Slurm in test/experiments/slurm.int.test.ts) and
// as Kubernetes sets JOB_COMPLETION_INDEX in an indexed Job's pods.

function refusal(spec: string, env: NodeJS.ProcessEnv): AmbiqaError {
  try {
    resolveShardSpec(spec, env);
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    return error as AmbiqaError;
  }
  throw new Error(`--shard ${spec} was accepted`);
}

describe('--shard auto', () => {
  it('leaves i/N as it is', () => {
    expect(resolveShardSpec('1/4', {})).toBe('1/4');
  });

  it('reads a Slurm array task: the task id is the index, the array 0..N-1 says N', () => {
    const env = { SLURM_JOB_ID: '12', SLURM_ARRAY_JOB_ID: '11', SLURM_ARRAY_TASK_ID: '1', SLURM_ARRAY_TASK_COUNT: '2', SLURM_ARRAY_TASK_MIN: '0', SLURM_ARRAY_TASK_MAX: '1' };
    expect(resolveShardSpec('auto', env)).toBe('1/2');
    expect(resolveShardSpec('auto/2', env)).toBe('1/2');
  });

  it('keeps a resubmitted task (`sbatch --array=3`) shard 3 of 8 when the count is given', () => {
    const env = { SLURM_ARRAY_TASK_ID: '3', SLURM_ARRAY_TASK_COUNT: '1', SLURM_ARRAY_TASK_MIN: '3', SLURM_ARRAY_TASK_MAX: '3' };
    expect(resolveShardSpec('auto/8', env)).toBe('3/8');
    // Without it the array does not say how many shards there are: refused, not guessed.
    const e = refusal('auto', env);
    expect(e.message).toContain('task ids run 3..3 (1 tasks), not 0..0');
    expect(e.hint).toContain('--shard auto/N');
  });

  it('reads a Kubernetes indexed Job\'s JOB_COMPLETION_INDEX with the count given once', () => {
    expect(resolveShardSpec('auto/8', { JOB_COMPLETION_INDEX: '7' })).toBe('7/8');
    const e = refusal('auto', { JOB_COMPLETION_INDEX: '7' });
    expect(e.message).toContain('JOB_COMPLETION_INDEX=7');
    expect(e.hint).toContain('--shard auto/N');
    expect(refusal('auto/4', { JOB_COMPLETION_INDEX: '4' }).message).toContain('JOB_COMPLETION_INDEX=4, but there are 4 shards');
  });

  it('refuses clearly where no scheduler set a shard', () => {
    const e = refusal('auto', { HOME: '/root' });
    expect(e.message).toContain('neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX (a Kubernetes indexed Job) is set');
    expect(e.hint).toContain('--shard i/N');
    expect(refusal('auto', { SLURM_JOB_ID: '5' }).message).toContain('this is Slurm job 5, but not a job array');
    expect(refusal('auto/0', { SLURM_ARRAY_TASK_ID: '0' }).message).toContain('positive whole number');
    expect(refusal('auto/x', { SLURM_ARRAY_TASK_ID: '0' }).message).toContain('positive whole number');
  });
});

describe('ambiqa run --shard auto', () => {
  const keys = ['SLURM_ARRAY_TASK_ID', 'SLURM_ARRAY_TASK_COUNT', 'SLURM_ARRAY_TASK_MIN', 'SLURM_ARRAY_TASK_MAX', 'AMBIQA_ARTIFACTS_DIR'] as const;
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-shard-auto-'));
    dirs.push(dir);
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    const config = writeYaml(join(dir, 'auto.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 5) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', reply: 'In 1990.', cache: join(dir, 'cache.sqlite') },
      tracking: { enabled: false },
    });
    return { dir, config };
  }

  it('runs the array task\'s shard under its i/N name, and refuses --shard-group without a shard', async () => {
    const { dir, config } = setup();
    Object.assign(process.env, { SLURM_ARRAY_TASK_ID: '1', SLURM_ARRAY_TASK_COUNT: '2', SLURM_ARRAY_TASK_MIN: '0', SLURM_ARRAY_TASK_MAX: '1' });
    expect(await runCommand([config, '--shard', 'auto', '--quiet'])).toBe(0);
    expect(existsSync(join(dir, 'artifacts', 'runs', 'auto.shard-1of2', 'results.jsonl'))).toBe(true);
    await expect(runCommand([config, '--shard-group', 'g1', '--quiet'])).rejects.toThrow('--shard-group goes with --shard');
    await expect(runCommand([config, '--shard', '0/2', '--shard-group', "x' or 1=1", '--quiet'])).rejects.toThrow('a shard group is letters, digits');
  });

  it('outside a job array, stops before anything is written', async () => {
    const { dir, config } = setup();
    for (const k of keys.slice(0, 4)) delete process.env[k];
    await expect(runCommand([config, '--shard', 'auto', '--quiet'])).rejects.toThrow('no scheduler gave this process a shard');
    expect(existsSync(join(dir, 'artifacts'))).toBe(false);
  });
});
