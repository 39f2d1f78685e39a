import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run as slurmCommand } from '../../src/cli/commands/slurm';
import { AmbiqaError } from '../../src/errors';
import { ExitStatus } from '../../src/experiments/exit-status';
import { parseOverride } from '../../src/experiments/overrides';
import type { ExperimentConfig } from '../../src/experiments/config';
import {
  arraySpec,
  expandTaskIds,
  jobExitStatus,
  launchExitStatus,
  launchState,
  mergeScript,
  parseJobId,
  parseJobRecords,
  shardsScript,
  slurmTimeSeconds,
  submitLaunch,
  waitForLaunch,
  type Exec,
  type SlurmLaunch,
} from '../../src/experiments/slurm';
import { writeAsqa, writeYaml } from './helpers/files';

// The job scripts `ambiqa slurm` writes, run by bash with a stand-in for node that prints the
// arguments it got (so quoting and the node-side expansion are what bash really does), and the
// reading of `scontrol show job -o` output captured from Slurm 22.05.

const fixtures = join(__dirname, 'fixtures');
const scratch = mkdtempSync(join(tmpdir(), 'ambiqa-slurm-scripts-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const tempDir = () => mkdtempSync(join(scratch, 'case-'));

function launchFor(dir: string, config: Partial<ExperimentConfig> = {}, extra: Partial<SlurmLaunch> = {}): SlurmLaunch {
  // A stand-in for node: prints its arguments as JSON, one per line.
  const node = join(dir, 'fake-node');
  writeFileSync(node, '#!/bin/bash\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
  chmodSync(node, 0o755);
  return {
    configFile: join(dir, 'my exp.yaml'),
    config: {
      name: 'toc',
      llm: { provider: 'openai-compatible', cache: { mode: 'use', path: '/shared/x.sqlite' } },
      tracking: { experiment: 'asqa-dev', enabled: true, traces: true, tags: {} },
      ...config,
    } as unknown as ExperimentConfig,
    shards: 4,
    group: 'toc-20261205-1200',
    runArgs: ['--set', "pipeline.options.note=it's two words", '--name', 'toc'],
    cacheDir: join(dir, 'node local'),
    launchDir: join(dir, 'launch'),
    workDir: dir,
    artifactsDir: join(dir, 'artifacts'),
    node,
    cli: '/repo/bin/ambiqa.mjs',
    resources: { partition: 'gpu', time: '2:00:00', cpusPerTask: 4, gpusPerTask: 1, mem: '16G', extra: ['--qos=high', '#SBATCH --constraint=a100'] },
    ...extra,
  };
}

/** Runs a generated script with bash as Slurm would on a node, returning the fake node's argv. */
function runScript(script: string, dir: string, env: Record<string, string>): string[] {
  const path = join(dir, 'job.sh');
  writeFileSync(path, script);
  const out = execFileSync('bash', [path], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  return out.trimEnd().split('\n').filter((l) => !l.startsWith('ambiqa slurm:'));
}

describe('the shards job script', () => {
  it('has the array, requeue and the resources a lab asks for as #SBATCH lines', () => {
    const dir = tempDir();
    const script = shardsScript(launchFor(dir));
    const sbatch = script.split('\n').filter((l) => l.startsWith('#SBATCH '));
    expect(sbatch).toEqual([
      '#SBATCH --job-name=ambiqa-toc',
      '#SBATCH --array=0-3',
      `#SBATCH --output=${join(dir, 'launch', 'shard-%a.out')}`,
      '#SBATCH --open-mode=append',
      '#SBATCH --requeue',
      '#SBATCH --partition=gpu',
      '#SBATCH --time=2:00:00',
      '#SBATCH --cpus-per-task=4',
      '#SBATCH --mem=16G',
      '#SBATCH --gres=gpu:1',
      '#SBATCH --signal=B:TERM@120',
      '#SBATCH --qos=high',
      '#SBATCH --constraint=a100',
    ]);
    // sbatch reads #SBATCH lines only before the first command.
    const firstCommand = script.split('\n').findIndex((l) => l && !l.startsWith('#'));
    expect(script.split('\n').slice(firstCommand).some((l) => l.startsWith('#SBATCH'))).toBe(false);
    execFileSync('bash', ['-n'], { input: script });
  });

  it('runs `ambiqa run --shard auto/N` with the group, --resume, and the LLM cache on the node-local disk', () => {
    const dir = tempDir();
    const launch = launchFor(dir);
    const argv = runScript(shardsScript(launch), dir, { SLURM_ARRAY_TASK_ID: '2', SLURM_JOB_ID: '77' });
    const cacheFile = join(dir, 'node local', 'toc-20261205-1200', 'shard-2.sqlite');
    expect(argv).toEqual([
      '/repo/bin/ambiqa.mjs',
      'run',
      join(dir, 'my exp.yaml'),
      '--shard',
      'auto/4',
      '--shard-group',
      'toc-20261205-1200',
      '--resume',
      '--quiet',
      '--set',
      `llm.cache=${cacheFile}`,
      '--set',
      "pipeline.options.note=it's two words",
      '--name',
      'toc',
    ]);
    // The cache override keeps the config's mode (parsed as `ambiqa run` parses --set).
    expect(parseOverride(argv[10]!).value).toBe(cacheFile);
  });

  it('keeps a cache mode other than use, leaves a cache that is off alone, and moves a judge: section\'s cache too', () => {
    const dir = tempDir();
    const refresh = launchFor(dir, {
      llm: { provider: 'openai-compatible', cache: { mode: 'refresh', path: '/x' } },
      judge: { provider: 'scripted', cache: '/y' },
    } as Partial<ExperimentConfig>, { runArgs: [] });
    const argv = runScript(shardsScript(refresh), dir, { SLURM_ARRAY_TASK_ID: '0' });
    const sets = argv.flatMap((a, i) => (argv[i - 1] === '--set' ? [parseOverride(a)] : []));
    const cacheFile = join(dir, 'node local', 'toc-20261205-1200', 'shard-0.sqlite');
    expect(sets.map((o) => [o.path.join('.'), o.value])).toEqual([
      ['llm.cache', { mode: 'refresh', path: cacheFile }],
      ['judge.cache', cacheFile],
    ]);

    const off = launchFor(dir, { llm: { provider: 'openai-compatible', cache: { mode: 'off', path: '/x' } } } as Partial<ExperimentConfig>, { runArgs: [] });
    expect(runScript(shardsScript(off), dir, { SLURM_ARRAY_TASK_ID: '0' })).not.toContain('--set');
  });

  it('writes no environment value into the script (secrets reach the jobs through sbatch\'s environment)', () => {
    const dir = tempDir();
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-test-do-not-write-1234';
    try {
      const launch = launchFor(dir);
      expect(shardsScript(launch) + mergeScript(launch)).not.toContain('sk-test-do-not-write-1234');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });

  it('gives the early SIGTERM only to limits long enough to spare two minutes', () => {
    expect([slurmTimeSeconds('30'), slurmTimeSeconds('5:30'), slurmTimeSeconds('2:00:00'), slurmTimeSeconds('1-12'), slurmTimeSeconds('1-0:30:15')]).toEqual([
      1800, 330, 7200, 129600, 88215,
    ]);
    expect(slurmTimeSeconds('UNLIMITED')).toBeUndefined();
    const dir = tempDir();
    const short = launchFor(dir, {}, { resources: { time: '10', extra: [] } });
    expect(shardsScript(short)).toContain('#SBATCH --time=10');
    expect(shardsScript(short)).not.toContain('--signal');
  });
});

describe('the merge job script', () => {
  it('merges the group from MLflow in the config\'s experiment, without the shards\' GPUs', () => {
    const dir = tempDir();
    const launch = launchFor(dir);
    const script = mergeScript(launch);
    expect(script).toContain('#SBATCH --partition=gpu');
    expect(script).not.toContain('--gres');
    expect(runScript(script, dir, {})).toEqual(['/repo/bin/ambiqa.mjs', 'merge', '--from-mlflow', 'toc-20261205-1200', '--experiment', 'asqa-dev']);
  });
});

describe('submitting', () => {
  it('submits the array, then the merge after it (afterok, cancelled if a shard fails), and records both ids', async () => {
    const dir = tempDir();
    const calls: string[][] = [];
    const exec: Exec = async (command, args) => {
      calls.push([command, ...args]);
      return calls.length === 1 ? '4242\n' : '4243;cluster\n';
    };
    const launch = launchFor(dir, {}, { only: [3, 1] });
    expect(await submitLaunch(launch, exec)).toEqual({ shardsJobId: '4242', mergeJobId: '4243' });
    expect(calls).toEqual([
      ['sbatch', '--parsable', '--array=1,3', join(dir, 'launch', 'shards.sbatch')],
      ['sbatch', '--parsable', '--dependency=afterok:4242', '--kill-on-invalid-dep=yes', join(dir, 'launch', 'merge.sbatch')],
    ]);
    const record = JSON.parse(readFileSync(join(dir, 'launch', 'launch.json'), 'utf8'));
    expect(record).toMatchObject({ group: 'toc-20261205-1200', shards: 4, experiment: 'asqa-dev', submissions: [{ array: '1,3', shardsJobId: '4242', mergeJobId: '4243' }] });
  });

  it('says which shards job is out when the merge cannot be submitted, and how to submit it', async () => {
    const dir = tempDir();
    const exec: Exec = async (_command, args) => {
      if (args.some((a) => a.startsWith('--dependency'))) throw new AmbiqaError('sbatch: error: Invalid account');
      return '51\n';
    };
    const error = await submitLaunch(launchFor(dir), exec).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AmbiqaError);
    expect((error as AmbiqaError).message).toBe('the shards are submitted (job 51), but the merge job is not: sbatch: error: Invalid account');
    expect((error as AmbiqaError).hint).toContain('--dependency=afterok:51');
  });

  it('reads the job id of --parsable and the array specs', () => {
    expect(parseJobId('123\n')).toBe('123');
    expect(parseJobId('123;big\n')).toBe('123');
    expect(() => parseJobId('sbatch: error: nope')).toThrow(AmbiqaError);
    expect(arraySpec(4)).toBe('0-3');
    expect(arraySpec(4, [2, 0, 2], 2)).toBe('0,2%2');
    expect(expandTaskIds('0-6:2')).toEqual([0, 2, 4, 6]);
    expect(expandTaskIds('0-2%2')).toEqual([0, 1, 2]);
    expect(expandTaskIds('1,3-4')).toEqual([1, 3, 4]);
  });
});

describe('following a launch', () => {
  it('reads scontrol\'s records: pending tasks of an array, running and cancelled ones, the merge waiting on its dependency', () => {
    const records = parseJobRecords(readFileSync(join(fixtures, 'scontrol-array.txt'), 'utf8'));
    expect(records.map((r) => [r.jobId, r.tasks, r.state, r.reason, r.exitCode])).toEqual([
      ['14', [2], 'PENDING', 'JobArrayTaskLimit', 0],
      ['17', [1], 'CANCELLED', 'None', 130],
      ['16', [0], 'RUNNING', 'None', 0],
    ]);
    const [merge] = parseJobRecords(readFileSync(join(fixtures, 'scontrol-merge.txt'), 'utf8'));
    expect(merge).toMatchObject({ jobId: '15', tasks: [], state: 'PENDING', reason: 'Dependency' });
  });

  it('maps how a job ended to the exit-status table', () => {
    const status = (state: string, exitCode = 0, signal = 0) => jobExitStatus({ state, exitCode, signal });
    expect(status('RUNNING')).toBeUndefined();
    expect(status('COMPLETING')).toBeUndefined();
    expect(status('COMPLETED')).toBe(ExitStatus.ok);
    expect(status('FAILED', 4)).toBe(ExitStatus.someFailed);
    expect(status('CANCELLED', 130)).toBe(ExitStatus.interrupted); // scancel of a running shard: ambiqa's own 130
    expect(status('CANCELLED')).toBe(ExitStatus.interrupted); // cancelled before it started
    expect(status('TIMEOUT')).toBe(ExitStatus.interrupted);
    expect(status('PREEMPTED')).toBe(ExitStatus.interrupted);
    expect(status('NODE_FAIL')).toBe(ExitStatus.error);
    expect(status('OUT_OF_MEMORY', 0, 9)).toBe(ExitStatus.error);
  });

  it('the launch exits with its worst status; a merge cancelled because a shard failed adds nothing', () => {
    const shards = [
      { index: 0, state: 'COMPLETED', reason: 'None', status: 0 },
      { index: 1, state: 'CANCELLED', reason: 'None', status: 130 },
    ];
    expect(launchExitStatus({ shards, merge: { state: 'CANCELLED', reason: 'DependencyNeverSatisfied', status: 130 } })).toBe(130);
    expect(launchExitStatus({ shards: [shards[0]!], merge: { state: 'FAILED', reason: 'NonZeroExitCode', status: 1 } })).toBe(1);
    expect(launchExitStatus({ shards: [shards[0]!], merge: { state: 'COMPLETED', reason: 'None', status: 0 } })).toBe(0);
  });

  it('polls until every shard and the merge have ended, printing each change once', async () => {
    const arrays = [
      'JobId=9 ArrayJobId=9 ArrayTaskId=0-1 JobState=PENDING Reason=None ExitCode=0:0',
      'JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=RUNNING Reason=None ExitCode=0:0\nJobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=RUNNING Reason=None ExitCode=0:0',
      'JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=RUNNING Reason=None ExitCode=0:0\nJobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=RUNNING Reason=None ExitCode=0:0',
      'JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\nJobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=4:0',
    ];
    const merges = ['JobId=11 JobState=PENDING Reason=Dependency ExitCode=0:0', 'JobId=11 JobState=PENDING Reason=Dependency ExitCode=0:0', 'JobId=11 JobState=PENDING Reason=Dependency ExitCode=0:0', null];
    let poll = 0;
    const exec: Exec = async (_command, args) => {
      const id = args[args.length - 1];
      if (id === '9') return arrays[Math.min(poll, arrays.length - 1)]!;
      const merge = merges[Math.min(poll++, merges.length - 1)];
      if (merge === null) throw new AmbiqaError('scontrol show job -o 11: slurm_load_jobs error: Invalid job id specified');
      return merge!;
    };
    const printed: string[] = [];
    const state = await waitForLaunch({ shardsJobId: '9', mergeJobId: '11', tasks: [0, 1], count: 2, intervalMs: 1, exec, print: (l) => printed.push(l.replace(/^\[\d+s\] /, '')) });
    expect(printed).toEqual([
      'shards: 0/2 PENDING (None), 1/2 PENDING (None); merge: PENDING (Dependency)',
      'shards: 0/2 RUNNING, 1/2 RUNNING; merge: PENDING (Dependency)',
      'shards: 0/2 COMPLETED, 1/2 FAILED; merge: UNKNOWN',
    ]);
    expect(state.shards.map((s) => s.status)).toEqual([0, 4]);
    // The merge was forgotten by the controller, so its outcome is unknown: an error.
    expect(launchExitStatus(state)).toBe(ExitStatus.error);
    expect(await launchState({ shardsJobId: '9', mergeJobId: '11', tasks: [0, 1] }, exec)).toMatchObject({ merge: { state: 'UNKNOWN' } });
  });
});

describe('ambiqa slurm (the command, before anything is submitted)', () => {
  const keys = ['MLFLOW_TRACKING_URI', 'AMBIQA_ARTIFACTS_DIR', 'AMBIQA_TRACKING'] as const;
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  afterAll(() => {
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  function setup(tracking: Record<string, unknown> = { experiment: 'slurm-cli' }) {
    const dir = tempDir();
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    delete process.env.AMBIQA_TRACKING;
    const config = writeYaml(join(dir, 'exp.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 3) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted' },
      metrics: ['str_em'],
      tracking,
    });
    return { dir, config };
  }

  async function printed(argv: string[]): Promise<{ status: number; out: string }> {
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.map(String).join(' ')));
    try {
      return { status: await slurmCommand(argv), out: lines.join('\n') };
    } finally {
      log.mockRestore();
    }
  }

  it('--dry-run prints both scripts and the sbatch commands, and writes and submits nothing', async () => {
    const { dir, config } = setup();
    delete process.env.MLFLOW_TRACKING_URI;
    const { status, out } = await printed([config, '--shards', '3', '--group', 'g1', '--partition', 'cpu', '--dry-run']);
    expect(status).toBe(0);
    expect(out).toContain('#SBATCH --array=0-2');
    expect(out).toContain('--shard auto/3');
    expect(out).toContain('merge --from-mlflow g1 --experiment slurm-cli');
    expect(out).toContain(`sbatch --parsable --array=0-2 ${join(dir, 'artifacts', 'slurm', 'g1', 'shards.sbatch')}`);
    expect(out).toContain('MLFLOW_TRACKING_URI is not set; a real launch needs it');
    expect(existsSync(join(dir, 'artifacts', 'slurm'))).toBe(false);
  });

  it('refuses a launch the merge could not finish, before submitting', async () => {
    const { config } = setup();
    delete process.env.MLFLOW_TRACKING_URI;
    await expect(slurmCommand([config, '--shards', '2'])).rejects.toThrow('MLFLOW_TRACKING_URI is not set');
    process.env.MLFLOW_TRACKING_URI = 'http://mlflow.invalid:5000';
    await expect(slurmCommand([config, '--shards', '2', '--only', '1'])).rejects.toThrow('--only resubmits shards of an earlier launch: give its --group');
    await expect(slurmCommand([config, '--shards', '2', '--group', 'g', '--only', '2'])).rejects.toThrow('--only 2: shard indexes run 0..1');
    await expect(slurmCommand([config])).rejects.toThrow('--shards N is required');
    await expect(slurmCommand([config, '--shards', '2', '--cache-dir', '/tmp/"x"'])).rejects.toThrow('no double quotes');
    await expect(slurmCommand([config, '--shards', '2', '--group', "g' or 1=1"])).rejects.toThrow('a shard group is letters, digits');
    const off = setup({ experiment: 'slurm-cli', enabled: false });
    await expect(slurmCommand([off.config, '--shards', '2'])).rejects.toThrow('tracking is off, but the merge job finds the shards in MLflow');
  });

  it('refuses when the merged run already exists', async () => {
    const { dir, config } = setup();
    process.env.MLFLOW_TRACKING_URI = 'http://mlflow.invalid:5000';
    mkdirSync(join(dir, 'artifacts', 'runs', 'exp'), { recursive: true });
    writeFileSync(join(dir, 'artifacts', 'runs', 'exp', 'config.yaml'), 'name: exp\n');
    await expect(slurmCommand([config, '--shards', '2'])).rejects.toThrow(`the merged run ${join(dir, 'artifacts', 'runs', 'exp')} already exists`);
  });
});
