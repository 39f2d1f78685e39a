import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { redactText } from '../common/secrets';
import { quoteForDisplay } from '../common/safe-name';
import { readRunJson } from '../run-files';
import { ExitStatus, worstExitStatus } from './exit-status';
import type { ExperimentConfig } from './config';

/**
 * `ambiqa slurm`: one experiment as a Slurm job array of shards plus a merge job that runs when
 * every shard has succeeded (`--dependency=afterok`), merging from MLflow.
 *
 * What each shard does is an ordinary `ambiqa run … --shard auto/N --shard-group <group>
 * --resume`: a requeued task (preemption, `scontrol requeue`, a node failure) or a resubmitted one
 * continues its run dir, and SIGTERM (scancel, the time limit, a preemption) stops it as Ctrl-C
 * does. Run dirs sit under the artifacts folder (on a cluster, the shared file system the clone
 * is on: JSONL appended by one writer); the LLM cache, SQLite in WAL mode, sits on the node's own
 * disk, because SQLite's locking is not safe over a network file system.
 */
export interface SlurmLaunch {
  /** Absolute path of the experiment config. */
  configFile: string;
  /** The config as loaded (no shard): its name and tracking experiment. */
  config: ExperimentConfig;
  shards: number;
  group: string;
  /** Submit only these shard indexes (a resubmission of some shards of an earlier launch). */
  only?: number[];
  /** Passed on to every shard's `ambiqa run`. */
  runArgs: string[];
  /** Node-local folder for the shards' LLM caches; shell variables expand on the node. */
  cacheDir: string;
  /** Where the job scripts and logs go (`<artifacts>/slurm/<group>`). */
  launchDir: string;
  /** The working directory of every job (where `ambiqa slurm` ran). */
  workDir: string;
  artifactsDir: string;
  /** `node` and `bin/ambiqa.mjs`, as absolute paths. */
  node: string;
  cli: string;
  resources: SlurmResources;
}

export interface SlurmResources {
  partition?: string;
  /** Slurm's time format: minutes, `H:MM:SS`, `D-HH:MM`, … */
  time?: string;
  account?: string;
  cpusPerTask?: number;
  mem?: string;
  gpusPerTask?: number;
  /** At most this many shards at once (`--array=…%K`). */
  maxParallel?: number;
  /** Extra `#SBATCH` lines, e.g. `--qos=high`, for the shards and the merge. */
  extra: string[];
}

/** The node-local default: `$TMPDIR` (often a per-node scratch disk on clusters) or /tmp. */
export const DEFAULT_CACHE_DIR = '${TMPDIR:-/tmp}/ambiqa-$(id -un)';

/**
 * Seconds before the time limit at which Slurm sends SIGTERM to a shard (`--signal=B:TERM@…`):
 * the shard then writes its files and uploads them to MLflow before the limit, instead of relying
 * on the site's KillWait (often 30 s) between the limit's SIGTERM and the SIGKILL. Only for limits
 * of 20 minutes or more; a shorter job keeps Slurm's own SIGTERM at the limit.
 */
export const TIME_LIMIT_GRACE_SECONDS = 120;

/** Slurm's time formats (`M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`) in seconds; undefined for `UNLIMITED` or what does not parse. */
export function slurmTimeSeconds(text: string): number | undefined {
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  const [days, a, b, c] = [m[1], m[2], m[3], m[4]].map((x) => (x === undefined ? undefined : Number(x)));
  if (days !== undefined) return days * 86400 + a! * 3600 + (b ?? 0) * 60 + (c ?? 0);
  if (c !== undefined) return a! * 3600 + b! * 60 + c;
  if (b !== undefined) return a! * 60 + b;
  return a! * 60;
}

export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** `0-7`, `0-7%2`, `1,3`: the shards to run. */
export function arraySpec(shards: number, only?: number[], maxParallel?: number): string {
  const base = only && only.length > 0 ? [...new Set(only)].sort((a, b) => a - b).join(',') : `0-${shards - 1}`;
  return maxParallel ? `${base}%${maxParallel}` : base;
}

export function shardsScriptPath(launch: Pick<SlurmLaunch, 'launchDir'>): string {
  return join(launch.launchDir, 'shards.sbatch');
}

export function mergeScriptPath(launch: Pick<SlurmLaunch, 'launchDir'>): string {
  return join(launch.launchDir, 'merge.sbatch');
}

/**
 * A value written into a job script: one line, no NUL and no other control character. A newline
 * in `--partition` put a command of its own on the next line, which bash ran as the script's
 * header ran (and any non-`#SBATCH` line makes sbatch ignore the `#SBATCH` lines after it).
 * Checked before anything is written or submitted; every value is also shell-quoted where it is
 * written (sbatch reads quotes in `#SBATCH` lines as the shell does).
 */
export function checkScriptValue(value: string, what: string): string {
  const bad = /[\u0000-\u001f\u007f]/.exec(value);
  if (bad) {
    // Shown from a little before the character, so a long path is not cut before it.
    const shown = bad.index > 40 ? `…${value.slice(bad.index - 40)}` : value;
    throw new AmbiqaError(
      `${what} ${quoteForDisplay(shown, 80)}: holds a control character (${bad[0] === '\n' ? 'a newline' : bad[0] === '\u0000' ? 'a NUL' : `\\x${bad[0].charCodeAt(0).toString(16).padStart(2, '0')}`}); a value written into a job script must be one line`,
    );
  }
  return value;
}

/** `--name=value` with the value quoted: what an `#SBATCH` line holds. */
function sbatchOption(name: string, value: string): string {
  return `--${name}=${shellQuote(value)}`;
}

/**
 * An extra `#SBATCH` line from `--sbatch`: `--name` or `--name=value` (`-x value` forms are not
 * taken: their value could not be quoted apart from the option).
 */
function extraOption(line: string): string {
  const bare = line.replace(/^#SBATCH\s+/, '').trim();
  const m = /^--([A-Za-z][A-Za-z0-9-]*)(?:=([\s\S]*))?$/.exec(bare);
  if (!m) throw new AmbiqaError(`--sbatch ${quoteForDisplay(line, 60)}: expected an sbatch option as --name or --name=value (e.g. --sbatch qos=high)`);
  return m[2] === undefined ? `--${m[1]}` : sbatchOption(m[1]!, m[2]);
}

function sbatchLines(r: SlurmResources, forShards: boolean): string[] {
  const lines: string[] = [];
  if (r.partition) lines.push(sbatchOption('partition', r.partition));
  if (r.account) lines.push(sbatchOption('account', r.account));
  if (r.time) lines.push(sbatchOption('time', r.time));
  if (forShards) {
    if (r.cpusPerTask) lines.push(`--cpus-per-task=${r.cpusPerTask}`);
    if (r.mem) lines.push(sbatchOption('mem', r.mem));
    if (r.gpusPerTask) lines.push(`--gres=gpu:${r.gpusPerTask}`);
    const limit = r.time ? slurmTimeSeconds(r.time) : undefined;
    if (limit !== undefined && limit >= 1200) lines.push(`--signal=B:TERM@${TIME_LIMIT_GRACE_SECONDS}`);
  }
  lines.push(...r.extra.map(extraOption));
  return lines.map((l) => `#SBATCH ${l}`);
}

/**
 * The `--set` that puts one LLM section's cache on node-local disk, keeping its mode; none for a
 * section whose cache is off. The path is a shell expression, expanded on the node.
 */
function cacheOverride(section: 'llm' | 'judge', value: ExperimentConfig['llm'] | undefined): string | undefined {
  if (!value) return undefined;
  if (value.provider === 'scripted') return `--set "${section}.cache=$cache_file"`;
  const mode = (value as { cache?: { mode?: string } }).cache?.mode ?? 'use';
  if (mode === 'off') return undefined;
  // The path in YAML double quotes: a `'` in the cache folder broke the single-quoted form (the
  // folder may hold neither `"` nor `\`, checked in `checkLaunch`).
  return mode === 'use' ? `--set "${section}.cache=$cache_file"` : `--set "${section}.cache={mode: ${mode}, path: \\"$cache_file\\"}"`;
}

/** The array job: one task per shard, each an `ambiqa run` of its shard. */
export function shardsScript(launch: SlurmLaunch): string {
  const name = launch.config.name;
  const run = [
    shellQuote(launch.node),
    shellQuote(launch.cli),
    'run',
    shellQuote(launch.configFile),
    `--shard auto/${launch.shards}`,
    `--shard-group ${shellQuote(launch.group)}`,
    '--resume',
    '--quiet',
    ...[cacheOverride('llm', launch.config.llm), cacheOverride('judge', launch.config.judge)].filter((x): x is string => x !== undefined),
    ...launch.runArgs.map(shellQuote),
  ];
  return [
    '#!/bin/bash',
    `# ambiqa slurm: ${launch.shards} shards of ${shellQuote(name)} (launch ${shellQuote(launch.group)}); the merge job is merge.sbatch`,
    `#SBATCH --job-name=${shellQuote(`ambiqa-${name}`)}`,
    `#SBATCH --array=${arraySpec(launch.shards, undefined, launch.resources.maxParallel)}`,
    `#SBATCH --output=${shellQuote(join(launch.launchDir, 'shard-%a.out'))}`,
    // A requeued or resubmitted task appends to its log instead of replacing the earlier attempt's.
    '#SBATCH --open-mode=append',
    '#SBATCH --requeue',
    ...sbatchLines(launch.resources, true),
    'set -euo pipefail',
    `cd ${shellQuote(launch.workDir)}`,
    `export AMBIQA_ARTIFACTS_DIR=${shellQuote(launch.artifactsDir)}`,
    '# The LLM cache (SQLite, WAL) on this node\'s disk: never on a network file system.',
    `cache_dir="${launch.cacheDir}/${launch.group}"`,
    'mkdir -p "$cache_dir"',
    'cache_file="$cache_dir/shard-${SLURM_ARRAY_TASK_ID}.sqlite"',
    'echo "ambiqa slurm: shard ${SLURM_ARRAY_TASK_ID} of ' + launch.shards + ', job ${SLURM_JOB_ID:-?} on $(hostname) (requeued ${SLURM_RESTART_COUNT:-0} times), LLM cache $cache_file"',
    '# exec: scancel, the time limit and a preemption signal ambiqa itself (SIGTERM stops it like Ctrl-C).',
    `exec ${run.join(' \\\n  ')}`,
    '',
  ].join('\n');
}

/** The merge job: runs after every shard succeeded, reading the shards from MLflow. */
export function mergeScript(launch: SlurmLaunch): string {
  const merge = [
    shellQuote(launch.node),
    shellQuote(launch.cli),
    'merge',
    `--from-mlflow ${shellQuote(launch.group)}`,
    `--experiment ${shellQuote(launch.config.tracking.experiment)}`,
  ];
  return [
    '#!/bin/bash',
    `# ambiqa slurm: merges the ${launch.shards} shards of ${shellQuote(launch.config.name)} (launch ${shellQuote(launch.group)}) from MLflow`,
    `#SBATCH --job-name=${shellQuote(`ambiqa-${launch.config.name}-merge`)}`,
    `#SBATCH --output=${shellQuote(join(launch.launchDir, 'merge.out'))}`,
    '#SBATCH --open-mode=append',
    '#SBATCH --cpus-per-task=1',
    ...sbatchLines(launch.resources, false),
    'set -euo pipefail',
    `cd ${shellQuote(launch.workDir)}`,
    `export AMBIQA_ARTIFACTS_DIR=${shellQuote(launch.artifactsDir)}`,
    `exec ${merge.join(' ')}`,
    '',
  ].join('\n');
}

/** The two `sbatch` command lines; `<shards job id>` stands for the first one's answer. */
export function submitCommands(launch: SlurmLaunch, shardsJobId = '<shards job id>'): [string[], string[]] {
  return [
    ['sbatch', '--parsable', `--array=${arraySpec(launch.shards, launch.only, launch.resources.maxParallel)}`, shardsScriptPath(launch)],
    ['sbatch', '--parsable', `--dependency=afterok:${shardsJobId}`, '--kill-on-invalid-dep=yes', mergeScriptPath(launch)],
  ];
}

// ---------------------------------------------------------------------------------- running Slurm

export type Exec = (command: string, args: string[]) => Promise<string>;

/** Runs a Slurm client command; its stderr becomes the error's message. */
export const execSlurm: Exec = (command, args) =>
  new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(
          new AmbiqaError(
            `${command} not found: ambiqa slurm submits and follows jobs with Slurm's client commands`,
            'run it where sbatch, squeue and scontrol work (a login node), or install them (Debian: slurm-client)',
          ),
        );
      }
      reject(new AmbiqaError(`${command} ${args.join(' ')}: ${(stderr || error.message).trim().split('\n').slice(-3).join(' | ')}`));
    });
  });

/** `sbatch --parsable` prints `<job id>` or `<job id>;<cluster>`. */
export function parseJobId(output: string): string {
  const m = /^\s*(\d+)/.exec(output);
  if (!m) throw new AmbiqaError(`sbatch answered ${JSON.stringify(output.trim())}, not a job id`);
  return m[1]!;
}


/**
 * Every value of the launch that is written into a script, checked (see `checkScriptValue`);
 * an AmbiqaError in one line naming the first bad one. Called before anything is written.
 */
export function checkLaunch(launch: SlurmLaunch): void {
  const r = launch.resources;
  const values: Array<[string | undefined, string]> = [
    [r.partition, '--partition'],
    [r.account, '--account'],
    [r.time, '--time'],
    [r.mem, '--mem'],
    ...r.extra.map((l): [string, string] => [l, '--sbatch']),
    [launch.cacheDir, '--cache-dir'],
    [launch.artifactsDir, 'AMBIQA_ARTIFACTS_DIR'],
    [launch.launchDir, 'the launch folder'],
    [launch.workDir, 'the working directory'],
    [launch.configFile, 'the config path'],
    [launch.node, 'the node executable'],
    [launch.cli, 'the ambiqa executable'],
    [launch.group, '--group'],
    [launch.config.name, 'the run name'],
    [launch.config.tracking.experiment, 'tracking.experiment'],
    ...launch.runArgs.map((a): [string, string] => [a, 'a run argument']),
  ];
  for (const [value, what] of values) if (value !== undefined) checkScriptValue(value, what);
  if (/["\\`]/.test(launch.cacheDir)) {
    throw new AmbiqaError(`--cache-dir ${JSON.stringify(launch.cacheDir)}: no double quotes, backslashes or backquotes (it is written into the job script in double quotes)`);
  }
  for (const l of r.extra) extraOption(l);
}

/**
 * The two job scripts exactly as they are written: checked, then masked as everything the CLI
 * prints is (a `--set` value holding a known secret reads `[redacted]`), so `--dry-run` shows
 * byte for byte what a launch writes, and no secret lands in a file.
 */
export function launchScripts(launch: SlurmLaunch): { shards: string; merge: string } {
  checkLaunch(launch);
  return { shards: redactText(shardsScript(launch)), merge: redactText(mergeScript(launch)) };
}

const launchRecordSchema = z.strictObject({
  group: z.string(),
  config: z.string(),
  name: z.string(),
  shards: z.number().int().positive(),
  experiment: z.string(),
  submissions: z.array(z.strictObject({ at: z.string(), array: z.string(), shardsJobId: z.string(), mergeJobId: z.string() })),
});

/** The launch's `launch.json` when there is one; refused in one line when it is not one ambiqa wrote. */
export function readLaunchRecord(path: string): LaunchRecord | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    const text = readFileSync(path, 'utf8');
    if (text.length > 4 * 1024 * 1024) throw new Error('larger than 4 MiB');
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AmbiqaError(`${path}: not a launch record (${(error as Error).message.split('\n')[0]})`, 'move it away, or give this launch another --group');
  }
  const result = launchRecordSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new AmbiqaError(`${path}: not a launch record (${issue.path.join('.') || 'top level'}: ${issue.message})`, 'move it away, or give this launch another --group');
  }
  return result.data;
}

/** Writes a file in full under a temporary name and renames it into place, with `mode`. */
function writeScript(path: string, text: string, mode: number): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode); // the umask may have narrowed it; an existing file kept its own mode
  renameSync(tmp, path);
}

export type LaunchRecord = z.infer<typeof launchRecordSchema>;

/** Writes the scripts, submits the shards and the merge after them; returns the job ids. */
export async function submitLaunch(launch: SlurmLaunch, exec: Exec = execSlurm): Promise<{ shardsJobId: string; mergeJobId: string }> {
  // Everything that can be refused is refused before the first file or submission.
  const scripts = launchScripts(launch);
  const recordPath = join(launch.launchDir, 'launch.json');
  const earlier = readLaunchRecord(recordPath);
  mkdirSync(launch.launchDir, { recursive: true, mode: 0o700 });
  // 0700: the scripts name the run's paths and arguments; only their owner runs them.
  writeScript(shardsScriptPath(launch), scripts.shards, 0o700);
  writeScript(mergeScriptPath(launch), scripts.merge, 0o700);
  const [shardsCommand] = submitCommands(launch);
  const shardsJobId = parseJobId(await exec(shardsCommand[0]!, shardsCommand.slice(1)));
  const [, mergeCommand] = submitCommands(launch, shardsJobId);
  let mergeJobId: string;
  try {
    mergeJobId = parseJobId(await exec(mergeCommand[0]!, mergeCommand.slice(1)));
  } catch (error) {
    throw new AmbiqaError(
      `the shards are submitted (job ${shardsJobId}), but the merge job is not: ${(error as Error).message}`,
      `submit it by hand: ${mergeCommand.map(shellQuote).join(' ')}`,
    );
  }
  const record: LaunchRecord = earlier ?? { group: launch.group, config: launch.configFile, name: launch.config.name, shards: launch.shards, experiment: launch.config.tracking.experiment, submissions: [] };
  record.submissions.push({ at: new Date().toISOString(), array: arraySpec(launch.shards, launch.only, launch.resources.maxParallel), shardsJobId, mergeJobId });
  writeFileSync(recordPath, JSON.stringify(record, null, 2) + '\n');
  return { shardsJobId, mergeJobId };
}

// ---------------------------------------------------------------------------------- following it

/** One job (or array task) as `scontrol show job -o` describes it. */
export interface JobRecord {
  jobId: string;
  /** Array tasks this record stands for (a pending array is one record for all of its tasks). */
  tasks: number[];
  state: string;
  reason: string;
  exitCode: number;
  signal: number;
}

/** `0-7%2`, `1,3`, `0-6:2` → the task ids. */
export function expandTaskIds(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.replace(/%\d+$/, '').split(',')) {
    const m = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!m) continue;
    const from = Number(m[1]);
    const to = m[2] !== undefined ? Number(m[2]) : from;
    const step = m[3] !== undefined ? Number(m[3]) : 1;
    for (let t = from; t <= to; t += step) out.push(t);
  }
  return out;
}

export function parseJobRecords(output: string): JobRecord[] {
  const field = (line: string, key: string) => new RegExp(`(?:^|\\s)${key}=(\\S*)`).exec(line)?.[1];
  return output
    .split('\n')
    .filter((line) => /(?:^|\s)JobId=\d+/.test(line))
    .map((line) => {
      const [code, signal] = (field(line, 'ExitCode') ?? '0:0').split(':').map(Number);
      const taskSpec = field(line, 'ArrayTaskId');
      return {
        jobId: field(line, 'JobId')!,
        tasks: taskSpec ? expandTaskIds(taskSpec) : [],
        state: field(line, 'JobState') ?? 'UNKNOWN',
        reason: field(line, 'Reason') ?? 'None',
        exitCode: code ?? 0,
        signal: signal ?? 0,
      };
    });
}

const finalStates = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'PREEMPTED', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE', 'OUT_OF_MEMORY']);

/**
 * The exit status (src/experiments/exit-status.ts) of a job that has ended, or undefined while
 * it has not. ambiqa's own status when the job got to exit; a job stopped from outside
 * (cancelled, out of time, preempted) without one counts as interrupted; a lost node or memory
 * as an error.
 */
export function jobExitStatus(job: Pick<JobRecord, 'state' | 'exitCode' | 'signal'>): number | undefined {
  if (!finalStates.has(job.state)) return undefined;
  if (job.exitCode !== 0) return job.exitCode;
  switch (job.state) {
    case 'COMPLETED':
      return ExitStatus.ok;
    case 'CANCELLED':
    case 'TIMEOUT':
    case 'PREEMPTED':
    case 'DEADLINE':
      return ExitStatus.interrupted;
    default:
      return ExitStatus.error;
  }
}

export interface ShardState {
  index: number;
  state: string;
  reason: string;
  /** Set once the task has ended. */
  status?: number;
}

export interface LaunchState {
  shards: ShardState[];
  merge: { state: string; reason: string; status?: number };
}

/** Where each submitted shard and the merge stand, from `scontrol show job`. */
export async function launchState(ids: { shardsJobId: string; mergeJobId: string; tasks: number[] }, exec: Exec = execSlurm): Promise<LaunchState> {
  const show = async (id: string) => {
    try {
      return parseJobRecords(await exec('scontrol', ['show', 'job', '-o', id]));
    } catch (error) {
      // A job the controller has forgotten (MinJobAge after it ended) is not an error of the launch.
      if (/Invalid job id/i.test((error as Error).message)) return [];
      throw error;
    }
  };
  const records = await show(ids.shardsJobId);
  const shards = ids.tasks.map((index): ShardState => {
    const record = records.find((r) => r.tasks.includes(index));
    if (!record) return { index, state: 'UNKNOWN', reason: 'not known to scontrol' };
    const status = jobExitStatus(record);
    return { index, state: record.state, reason: record.reason, ...(status !== undefined ? { status } : {}) };
  });
  const merge = (await show(ids.mergeJobId))[0];
  const mergeStatus = merge ? jobExitStatus(merge) : undefined;
  return {
    shards,
    merge: merge ? { state: merge.state, reason: merge.reason, ...(mergeStatus !== undefined ? { status: mergeStatus } : {}) } : { state: 'UNKNOWN', reason: 'not known to scontrol' },
  };
}

/** Is there nothing left to wait for? */
export function launchDone(state: LaunchState): boolean {
  const shardsDone = state.shards.every((s) => s.status !== undefined || s.state === 'UNKNOWN');
  return shardsDone && (state.merge.status !== undefined || state.merge.state === 'UNKNOWN');
}

/**
 * The launch's exit status: the worst of its shards' and its merge's. A merge that never ran
 * because a shard failed adds nothing (the shard's status says it); an unknown job is an error.
 */
export function launchExitStatus(state: LaunchState): number {
  const statuses = state.shards.map((s) => s.status ?? ExitStatus.error);
  const neverRan = state.merge.reason === 'DependencyNeverSatisfied';
  if (!neverRan) statuses.push(state.merge.status ?? ExitStatus.error);
  return worstExitStatus(statuses);
}

/** `done/total` of a shard's run dir, when it is readable from here (a shared file system). */
export function shardProgress(artifactsDir: string, name: string, index: number, count: number): string | undefined {
  try {
    const state = readRunJson(join(artifactsDir, 'runs', `${name}.shard-${index}of${count}`, 'run.json'), 'state');
    return state ? `${state.done}/${state.total}` : undefined;
  } catch {
    return undefined;
  }
}

export function describeLaunchState(state: LaunchState, progress: (index: number) => string | undefined = () => undefined, count?: number): string {
  const shards = state.shards.map((s) => {
    const done = progress(s.index);
    const detail = s.state === 'PENDING' ? ` (${s.reason})` : '';
    return `${s.index}${count ? `/${count}` : ''} ${s.state}${detail}${done ? ` ${done}` : ''}`;
  });
  const merge = `${state.merge.state}${state.merge.state === 'PENDING' || state.merge.state === 'CANCELLED' ? ` (${state.merge.reason})` : ''}`;
  return `shards: ${shards.join(', ')}; merge: ${merge}`;
}

export interface WaitOptions {
  shardsJobId: string;
  mergeJobId: string;
  tasks: number[];
  intervalMs?: number;
  exec?: Exec;
  /** A line whenever the picture changes. */
  print: (line: string) => void;
  progress?: (index: number) => string | undefined;
  count?: number;
  signal?: AbortSignal;
}

/** Polls until every shard and the merge have ended; returns the last state seen. */
export async function waitForLaunch(options: WaitOptions): Promise<LaunchState> {
  const started = Date.now();
  let last = '';
  let failures = 0;
  for (;;) {
    let state: LaunchState;
    try {
      state = await launchState(options, options.exec);
      failures = 0;
    } catch (error) {
      // A controller that is briefly busy or restarting: keep waiting a while.
      if (++failures >= 10) throw error;
      await sleep(options.intervalMs ?? 3000, options.signal);
      continue;
    }
    const line = describeLaunchState(state, options.progress, options.count);
    if (line !== last) {
      options.print(`[${Math.round((Date.now() - started) / 1000)}s] ${line}`);
      last = line;
    }
    if (launchDone(state)) return state;
    await sleep(options.intervalMs ?? 3000, options.signal);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** The last lines of a shard's log, to show why it failed. */
export function logTail(path: string, lines = 5): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines);
}
