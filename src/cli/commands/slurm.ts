import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { artifactsDir, packageRoot } from '../../config/paths';
import { parsePositiveInt } from '../../experiments/cli-support';
import { registry } from '../../experiments/compose';
import { loadExperimentConfig } from '../../experiments/config';
import { ExitStatus } from '../../experiments/exit-status';
import { parseOverride } from '../../experiments/overrides';
import { runStarted } from '../../experiments/run-dir';
import { checkShardGroup } from '../../experiments/shard-group';
import { MAX_SHARDS } from '../../experiments/shard';
import {
  DEFAULT_CACHE_DIR,
  launchExitStatus,
  launchScripts,
  logTail,
  shardProgress,
  shellQuote,
  submitCommands,
  submitLaunch,
  TIME_LIMIT_GRACE_SECONDS,
  waitForLaunch,
  type SlurmLaunch,
} from '../../experiments/slurm';
import { runsDir } from '../../run-files';

export const summary = 'run an experiment as a Slurm job array of shards and a merge job (from MLflow); --wait follows it';

const usage = `usage: ambiqa slurm <config.yaml> --shards N [options]

Runs the experiment as a Slurm job array of N shards, each \`ambiqa run --shard auto/N --resume\`,
and a merge job that starts once every shard has succeeded (\`--dependency=afterok\`) and merges
them from MLflow (\`ambiqa merge --from-mlflow <group>\`) into artifacts/runs/<name>/ and one
MLflow parent run. The job scripts and logs go to artifacts/slurm/<group>/; sbatch submits them.

Every job logs to the MLflow server in MLFLOW_TRACKING_URI (required: it is how the merge finds
the shards), and sbatch passes the environment on (OPENAI_BASE_URL, OPENAI_API_KEY, …; no secret
is written into a script). Each shard keeps its LLM cache on its node's own disk.
A requeued shard (preemption, \`scontrol requeue\`) resumes its run; scancel, the time limit or a
preemption stops it cleanly (SIGTERM); resubmit unfinished shards with --group and --only.

options:
  --shards N            number of shards: array tasks 0..N-1 (required)
  --partition NAME      partition of every job
  --time LIMIT          time limit of every job (Slurm's format, e.g. 2:00:00); a shard gets
                        SIGTERM ${TIME_LIMIT_GRACE_SECONDS} s before a limit of 20 min or more (at the limit below
                        that), stops cleanly and resumes when requeued or resubmitted
  --account NAME        account to charge
  --cpus-per-task N     CPUs of each shard
  --mem SIZE            memory of each shard, e.g. 16G
  --gpus-per-task N     GPUs of each shard (--gres=gpu:N)
  --max-parallel K      run at most K shards at once (--array=…%K)
  --sbatch LINE         an extra #SBATCH line for every job, e.g. --sbatch qos=high or
                        --sbatch=--constraint=a100 (repeatable)
  --cache-dir DIR       node-local folder for the LLM caches (default ${DEFAULT_CACHE_DIR});
                        shell variables expand on the node; never a network file system
  --group GROUP         the launch's shard group (default <name>-<UTC date-time>); the same
                        group again resubmits shards of that launch
  --only LIST           submit only these shards, e.g. 1 or 1,3 (with --group)
  --name NAME           run name, as for \`ambiqa run\` (shards are <name>.shard-<i>of<N>)
  --set path=value      override a config field in every shard (repeatable)
  --limit N             answer only the first N selected questions
  --dry-run             print the job scripts and the sbatch commands; submit nothing
  --wait                follow the jobs until they end, printing where they stand; exit with
                        the worst status of the shards and the merge
  -h, --help            this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      shards: { type: 'string' },
      partition: { type: 'string' },
      time: { type: 'string' },
      account: { type: 'string' },
      'cpus-per-task': { type: 'string' },
      mem: { type: 'string' },
      'gpus-per-task': { type: 'string' },
      'max-parallel': { type: 'string' },
      sbatch: { type: 'string', multiple: true },
      'cache-dir': { type: 'string' },
      group: { type: 'string' },
      only: { type: 'string' },
      name: { type: 'string' },
      set: { type: 'string', multiple: true },
      limit: { type: 'string' },
      'dry-run': { type: 'boolean' },
      wait: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return ExitStatus.ok;
  }
  if (positionals.length !== 1) throw new AmbiqaError('ambiqa slurm: expected one config file', 'e.g. `npx ambiqa slurm experiments/toc-asqa.yaml --shards 8 --wait`');
  if (values.shards === undefined) throw new AmbiqaError('ambiqa slurm: --shards N is required', 'the number of array tasks, e.g. --shards 8');
  const shards = parsePositiveInt(values.shards, '--shards');
  if (shards > MAX_SHARDS) throw new AmbiqaError(`--shards ${shards}: at most ${MAX_SHARDS}`);
  const only = values.only?.split(',').map((x) => parseShardIndex(x, shards));
  if (only && values.group === undefined) {
    throw new AmbiqaError('ambiqa slurm: --only resubmits shards of an earlier launch: give its --group', 'the group is in the first launch\'s output and in artifacts/slurm/');
  }
  const cacheDir = values['cache-dir'] ?? DEFAULT_CACHE_DIR;
  if (/["\\]/.test(cacheDir)) throw new AmbiqaError(`--cache-dir ${cacheDir}: no double quotes or backslashes (it is written into the job script in double quotes)`);

  // The config is checked here, before anything is submitted, as each shard will load it.
  const configFile = resolve(positionals[0]!);
  const overrides = values.set ?? [];
  const config = loadExperimentConfig(configFile, registry, {
    overrides: overrides.map(parseOverride),
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(values.limit !== undefined ? { limit: parsePositiveInt(values.limit, '--limit') } : {}),
  });
  if (!config.tracking.enabled || process.env.AMBIQA_TRACKING === 'off') {
    throw new AmbiqaError('ambiqa slurm: tracking is off, but the merge job finds the shards in MLflow', 'drop tracking.enabled: false / AMBIQA_TRACKING=off');
  }
  const trackingUri = process.env.MLFLOW_TRACKING_URI?.trim();
  if (!trackingUri && !values['dry-run']) {
    throw new AmbiqaError(
      'ambiqa slurm: MLFLOW_TRACKING_URI is not set: every shard and the merge must log to one MLflow server that the compute nodes reach',
      'export MLFLOW_TRACKING_URI=http://<mlflow host>:5000 (sbatch passes it to the jobs)',
    );
  }
  const merged = join(runsDir(), config.name);
  if (runStarted(merged)) throw new AmbiqaError(`ambiqa slurm: the merged run ${merged} already exists`, 'pass --name <new-name>');

  const group = checkShardGroup(values.group ?? `${config.name}-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}`, '--group');
  const launchDir = join(artifactsDir(), 'slurm', group);
  const launch: SlurmLaunch = {
    configFile,
    config,
    shards,
    group,
    ...(only ? { only } : {}),
    runArgs: [
      ...(values.name !== undefined ? ['--name', values.name] : []),
      ...(values.limit !== undefined ? ['--limit', values.limit] : []),
      ...overrides.flatMap((o) => ['--set', o]),
    ],
    cacheDir,
    launchDir,
    workDir: process.cwd(),
    artifactsDir: artifactsDir(),
    node: process.execPath,
    cli: join(packageRoot, 'bin', 'ambiqa.mjs'),
    resources: {
      ...(values.partition !== undefined ? { partition: values.partition } : {}),
      ...(values.time !== undefined ? { time: values.time } : {}),
      ...(values.account !== undefined ? { account: values.account } : {}),
      ...(values['cpus-per-task'] !== undefined ? { cpusPerTask: parsePositiveInt(values['cpus-per-task'], '--cpus-per-task') } : {}),
      ...(values.mem !== undefined ? { mem: values.mem } : {}),
      ...(values['gpus-per-task'] !== undefined ? { gpusPerTask: parsePositiveInt(values['gpus-per-task'], '--gpus-per-task') } : {}),
      ...(values['max-parallel'] !== undefined ? { maxParallel: parsePositiveInt(values['max-parallel'], '--max-parallel') } : {}),
      extra: (values.sbatch ?? []).map((line) => (/^[-#]/.test(line) ? line : `--${line}`)),
    },
  };

  // Checked (and masked) before anything is printed, written or submitted; --dry-run prints
  // exactly the text a launch writes.
  const scripts = launchScripts(launch);
  if (values['dry-run']) {
    const [shardsCommand, mergeCommand] = submitCommands(launch);
    console.log(`# ${relativePath(launch.launchDir)}/shards.sbatch\n${scripts.shards}`);
    console.log(`# ${relativePath(launch.launchDir)}/merge.sbatch\n${scripts.merge}`);
    console.log(`# submitted with (nothing was submitted: --dry-run):\n${shardsCommand.map(shellQuote).join(' ')}\n${mergeCommand.map(shellQuote).join(' ')}`);
    if (!trackingUri) console.log('# note: MLFLOW_TRACKING_URI is not set; a real launch needs it');
    return ExitStatus.ok;
  }
  if (trackingUri && /\/\/(127\.|localhost[:/]|\[::1\])/.test(trackingUri)) {
    process.stderr.write(`note: MLFLOW_TRACKING_URI is ${trackingUri}: only jobs on this machine can reach it\n`);
  }

  const ids = await submitLaunch(launch);
  const tasks = only ?? Array.from({ length: shards }, (_, i) => i);
  console.log(
    [
      `submitted launch ${group}: shards job ${ids.shardsJobId} (${only ? `shards ${only.join(',')}` : `array 0-${shards - 1}`} of ${shards}), merge job ${ids.mergeJobId} (after every shard succeeds)`,
      `  scripts and logs: ${relativePath(launchDir)}/`,
      `  merged run:       ${relativePath(merged)}/ and MLflow experiment ${config.tracking.experiment} (ambiqa merge --from-mlflow ${group})`,
      ...(values.wait ? [] : [`  follow:           squeue -j ${ids.shardsJobId},${ids.mergeJobId}`]),
    ].join('\n'),
  );
  if (!values.wait) return ExitStatus.ok;

  process.stderr.write('waiting for the jobs (Ctrl-C stops waiting; the jobs go on)\n');
  const state = await waitForLaunch({
    ...ids,
    tasks,
    count: shards,
    intervalMs: Number(process.env.AMBIQA_SLURM_POLL_MS ?? 3000),
    print: (line) => console.log(line),
    progress: (index) => shardProgress(launch.artifactsDir, config.name, index, shards),
  });
  const status = launchExitStatus(state);
  const lines: string[] = [];
  for (const s of state.shards) {
    const log = join(launchDir, `shard-${s.index}.out`);
    lines.push(`shard ${s.index}/${shards}: ${s.state}, exit ${s.status ?? '?'}${describeStatus(s.status)}${s.status === ExitStatus.ok ? '' : `  log: ${relativePath(log)}`}`);
    if (s.status !== ExitStatus.ok) lines.push(...logTail(log).map((l) => `    ${l}`));
  }
  const m = state.merge;
  if (m.reason === 'DependencyNeverSatisfied') lines.push('merge: not run (a shard did not succeed)');
  else {
    lines.push(`merge: ${m.state}, exit ${m.status ?? '?'}${describeStatus(m.status)}${m.status === ExitStatus.ok ? `  merged run: ${relativePath(merged)}/` : `  log: ${relativePath(join(launchDir, 'merge.out'))}`}`);
    if (m.status !== ExitStatus.ok) lines.push(...logTail(join(launchDir, 'merge.out')).map((l) => `    ${l}`));
  }
  const unfinished = state.shards.filter((s) => s.status !== ExitStatus.ok).map((s) => s.index);
  if (unfinished.length > 0) {
    const again = ['npx', 'ambiqa', 'slurm', relativePath(configFile), '--shards', String(shards), '--group', group, '--only', unfinished.join(','), ...repeatedOptions(values), '--wait'];
    lines.push(`resubmit the unfinished shards (they resume their runs): ${again.map(shellQuote).join(' ')}`);
  }
  console.log(lines.join('\n'));
  return status;
}

function parseShardIndex(text: string, shards: number): number {
  const n = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || n >= shards) throw new AmbiqaError(`--only ${text}: shard indexes run 0..${shards - 1}`);
  return n;
}

const statusNames = new Map<number, string>(Object.entries(ExitStatus).map(([k, v]) => [v, k]));

function describeStatus(status: number | undefined): string {
  const name = status === undefined ? undefined : statusNames.get(status);
  return name && status !== ExitStatus.ok ? ` (${name})` : '';
}

/** The options of this launch that a resubmission of some of its shards repeats. */
function repeatedOptions(values: Record<string, string | string[] | boolean | undefined>): string[] {
  const out: string[] = [];
  for (const key of ['partition', 'time', 'account', 'cpus-per-task', 'mem', 'gpus-per-task', 'max-parallel', 'sbatch', 'cache-dir', 'name', 'set', 'limit']) {
    const value = values[key];
    for (const v of Array.isArray(value) ? value : typeof value === 'string' ? [value] : []) out.push(`--${key}=${v}`);
  }
  return out;
}

function relativePath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}
