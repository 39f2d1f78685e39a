import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { run as indexCommand } from '../../src/cli/commands/index';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as slurmCommand } from '../../src/cli/commands/slurm';
import { readJsonl } from '../../src/common/jsonl';
import { AmbiqaError } from '../../src/errors';
import type { LaunchRecord } from '../../src/experiments/slurm';
import { luceneRuntime } from '../../src/retrieval/lucene/searcher';
import type { Trace } from '../../src/trace/types';
import { scoreValues, type ExampleResult, type RunMetrics, type RunState } from '../../src/run-files';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { localSlurmUnavailable, startLocalSlurm, stepFiles, type LocalSlurm } from '../helpers/slurm';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, param, searchRuns, tag } from './helpers/mlflow';

/**
 * `ambiqa slurm` against a real Slurm: Debian's slurmctld and slurmd (22.05) with munge, started
 * on localhost by the test (test/helpers/slurm.ts), the tests' MLflow server, and a local
 * OpenAI-compatible server standing in for the inference service, which counts every request.
 *
 * 1. The Slurm block of docs/experiments.md, run as written: two shards as a job array, the merge
 *    job after them, merged from MLflow: the same results, metrics and CIs as an unsharded run,
 *    in artifacts/runs/ and in MLflow; each question asked once; the caches on "node-local" disk.
 * 2. A second launch whose shard 1 is stopped with `scancel` mid-run: `--wait` exits 130, the
 *    merge never runs and `merge --from-mlflow` refuses the launch; the resubmission command that
 *    `--wait` printed finishes it, and no question that had finished is asked again.
 *
 * 3. A third launch whose shard 1 is requeued mid-run (`scontrol requeue`, what a preemption with
 *    requeue does): the task runs again, resumes its run dir and MLflow run, and the same `--wait`
 *    ends with the launch merged.
 * 4. The Lucene block of docs/experiments.md ("One Lucene index for every shard"): an index built
 *    with its `ambiqa index` line, `serve-index` on the node, and its `ambiqa slurm` line: both
 *    shards answer from the one index through serve-index's searcher (no other searcher runs over
 *    it), the index folder is unchanged, and the merge equals an unsharded run with a searcher of
 *    its own. Needs `npx ambiqa setup --only lucene`: skipped without it, failed under CI.
 *
 * Without the Slurm packages (or root) the test is skipped, saying why; under CI that fails, as a
 * missing MLflow server does for the tracking tests.
 */
const uri = inject('mlflowTrackingUri');
const unavailable = localSlurmUnavailable();
if (unavailable) {
  if (process.env.CI) throw new Error(`the Slurm test cannot run: ${unavailable}`);
  console.log(`skipping the Slurm test: ${unavailable}`);
}
const root = resolve(__dirname, '../..');
const QUESTIONS = 6;

interface SlurmExample {
  exported: string[];
  args: string[];
}

/** The first sh block under "### Slurm" in docs/experiments.md: its exports and its `ambiqa slurm` line. */
function slurmExample(): SlurmExample {
  const page = readFileSync(join(root, 'docs', 'experiments.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(page.slice(page.indexOf('### Slurm')))?.[1];
  if (!block) throw new Error('docs/experiments.md: no ```sh block after "### Slurm"');
  const lines = block.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const exportLine = lines.find((l) => l.startsWith('export '))!;
  const slurmLine = lines.find((l) => l.startsWith('npx ambiqa slurm '))!;
  return { exported: exportLine.replace(/^export /, '').split(/\s+/).map((kv) => kv.split('=')[0]!), args: slurmLine.trim().split(/\s+/) };
}

/** Words of a command line as sh splits them (single quotes, as `shellQuote` writes them). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /'((?:[^']|'\\'')*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line))) words.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]!);
  return words;
}

/** The question a request to the stand-in service was about (`When did event <i> happen?`). */
function questionOf(body: Record<string, unknown>): string {
  const messages = (body.messages as Array<{ content: string }> | undefined) ?? [];
  return /event (\d+)/.exec(messages.map((m) => m.content).join('\n'))?.[1] ?? '?';
}

async function captured(fn: () => Promise<number>): Promise<{ status: number; output: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')));
  try {
    return { status: await fn(), output: lines.join('\n') };
  } finally {
    log.mockRestore();
  }
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The Lucene runtime (`npx ambiqa setup --only lucene`), or why the Lucene launch cannot run. */
let lucene: { java: string; jar: string } | undefined;
let luceneUnavailable: string | undefined;
try {
  lucene = luceneRuntime();
} catch (error) {
  luceneUnavailable = (error as Error).message;
  console.log(`skipping the Slurm test's Lucene launch: ${luceneUnavailable}`);
}

/**
 * The sh block under "One Lucene index for every shard" in docs/experiments.md: its command
 * lines (comments dropped, continuations joined), each split into words.
 */
function luceneExample(): string[][] {
  const page = readFileSync(join(root, 'docs', 'experiments.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(page.slice(page.indexOf('One Lucene index for every shard')))?.[1];
  if (!block) throw new Error('docs/experiments.md: no ```sh block after "One Lucene index for every shard"');
  return block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(/\s+/));
}

/** The planted passages of writeAsqa's questions ("When did event <i> happen?"), with DPR-like numeric ids. */
const plantedId = (i: number) => String(21_000_000 + i);
const plantedText = (i: number) => `Event ${i} first happened in ${1990 + i} and last happened in ${2000 + i}, the chronicle records.`;

/** A small psgs_w100.tsv: filler passages (no word of the questions) and one planted passage per question. */
function writeDprTsv(path: string, questions: number): void {
  const words = 'river stone garden window season market letter bridge morning island harvest lantern village sound'.split(' ');
  const rows = ['id\ttext\ttitle'];
  for (let i = 1; i <= 80; i++) rows.push(`${i}\t${Array.from({ length: 30 }, (_, j) => words[(i * 5 + j * 3) % words.length]).join(' ')}\tFiller ${i}`);
  for (let i = 0; i < questions; i++) rows.splice(1 + i * 11, 0, `${plantedId(i)}\t${plantedText(i)}\tEvent ${i}`);
  writeFileSync(path, `${rows.join('\n')}\n`);
}

/** Every file and folder under `dir` with its size, mtime, ctime and (files) sha256: any write changes it. */
function folderState(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    const st = statSync(d);
    out[`${relative(dir, d) || '.'}/`] = `mtime ${st.mtimeMs} ctime ${st.ctimeMs}`;
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      const s = statSync(path);
      if (s.isDirectory()) walk(path);
      else out[relative(dir, path)] = `${s.size} bytes, mtime ${s.mtimeMs} ctime ${s.ctimeMs}, sha256 ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

/**
 * Anserini searchers (`io.anserini.api.RestServer` JVMs) running now whose index config sits
 * under `under`: pid → config path. ambiqa writes a searcher's config in its process's TMPDIR,
 * so the folder says who started it (the test gives each party a TMPDIR of its own).
 */
function searchersUnder(under: string): Map<number, string> {
  const found = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended meanwhile
    }
    if (!args.includes('io.anserini.api.RestServer')) continue;
    const config = args[args.indexOf('--index-config') + 1] ?? '';
    if (config.startsWith(`${under}/`)) found.set(Number(entry), config);
  }
  return found;
}

/** Samples `searchersUnder` every 200 ms (a JVM that answers a search lives for seconds) until stopped. */
function watchSearchers(under: string): { stop(): Map<number, string> } {
  const seen = new Map<number, string>();
  const sample = () => searchersUnder(under).forEach((config, pid) => seen.set(pid, config));
  sample();
  const timer = setInterval(sample, 200);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return seen;
    },
  };
}

/** `ambiqa serve-index <dir>` as a user starts it on the node; resolves with the URL it prints. */
function startServeIndex(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; log: () => string }> {
  const child = spawn(process.execPath, [join(root, 'bin', 'ambiqa.mjs'), 'serve-index', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`serve-index printed no URL within 120 s: ${err}`));
    }, 120_000);
    child.once('exit', (code) => reject(new Error(`serve-index exited (${code}): ${err}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /^(http:\/\/\S+)\n/m.exec(out)?.[1];
      if (url) {
        clearTimeout(timer);
        resolveUrl({ child, url, log: () => err });
      }
    });
  });
}

describe.skipIf(unavailable !== undefined || (!uri && !process.env.CI))('ambiqa slurm on a real Slurm (job array, afterok merge from MLflow, scancel and resubmit)', () => {
  const example = slurmExample();
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-slurm-test-'));
  const artifacts = join(dir, 'artifacts');
  const runs = join(artifacts, 'runs');
  const nodeTmp = join(dir, 'node-tmp');
  const experiment = `test-slurm-${Date.now()}`;
  const partition = example.args[example.args.indexOf('--partition') + 1]!;
  const saved: Record<string, string | undefined> = {};
  const setEnv = (k: string, v: string) => {
    if (!(k in saved)) saved[k] = process.env[k];
    process.env[k] = v;
  };
  let cluster: LocalSlurm | undefined;
  let server: FaultServer;
  let config: string;
  const view = (r: ExampleResult) => ({ id: r.id, index: r.index, output: r.output, metrics: scoreValues(r) });
  const whole = () => readJsonl<ExampleResult>(join(runs, 'whole', 'results.jsonl')).map(view);
  const metricsOf = (run: string) => JSON.parse(readFileSync(join(runs, run, 'metrics.json'), 'utf8')) as RunMetrics;
  const mlflowRunId = (run: string) => JSON.parse(readFileSync(join(runs, run, 'mlflow.json'), 'utf8')).runId as string;
  const mlflowMetrics = async (runId: string) =>
    Object.fromEntries(((await getRun(uri, runId)).data.metrics ?? []).filter((m) => m.key !== 'wall_seconds').map((m) => [m.key, m.value]));
  const launchRecord = (group: string) => JSON.parse(readFileSync(join(artifacts, 'slurm', group, 'launch.json'), 'utf8')) as LaunchRecord;
  const groupOf = (output: string) => /submitted launch (\S+):/.exec(output)?.[1] ?? '';
  const docArgs = () => example.args.slice(3).map((a) => (a.startsWith('experiments/') ? join(dir, a) : a));

  beforeAll(async () => {
    server = await startFaultServer();
    cluster = await startLocalSlurm({ partition, gpus: 2 });
    mkdirSync(join(dir, 'experiments'));
    mkdirSync(nodeTmp);
    config = writeYaml(join(dir, 'experiments', 'toc-asqa.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, QUESTIONS) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { cache: join(dir, 'llm-cache.sqlite') },
      metrics: ['str_em', 'rougeL'],
      // One question at a time, so that a shard is reliably stopped between questions' calls.
      concurrency: 1,
      tracking: { experiment, traces: false },
    });
    const values: Record<string, string> = { MLFLOW_TRACKING_URI: uri, OPENAI_BASE_URL: server.url, OPENAI_MODEL: 'slurm-test-model' };
    for (const name of example.exported) {
      expect(values[name], `the Slurm example exports ${name}; the test has no local stand-in for it`).toBeDefined();
      setEnv(name, values[name]!);
    }
    setEnv('AMBIQA_ARTIFACTS_DIR', artifacts);
    setEnv('SLURM_CONF', cluster.env.SLURM_CONF);
    setEnv('AMBIQA_SLURM_POLL_MS', '500');
    // The shards would draw PNG figures with chromium for MLflow: seconds of CPU this test is not about.
    setEnv('AMBIQA_FIGURE_PNG', '0');
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    await server?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('runs the docs\' launch: two shards and a merge from MLflow equal to the unsharded run, each question asked once', async () => {
    // The reference: the same config unsharded, on its own cache.
    expect(await runCommand([config, '--name', 'whole', '--quiet', '--set', 'llm.provider=openai-compatible', '--set', `llm.cache=${join(dir, 'whole.sqlite')}`])).toBe(0);
    const before = server.requests.length;

    // TMPDIR is the jobs' node-local disk (sbatch passes the environment on).
    setEnv('TMPDIR', nodeTmp);
    const { status, output } = await captured(() => slurmCommand(docArgs()));
    expect(status, output).toBe(0);
    const group = groupOf(output);
    expect(output).toMatch(/shard 0\/2: COMPLETED, exit 0\nshard 1\/2: COMPLETED, exit 0\nmerge: COMPLETED, exit 0/);

    const merged = 'toc-asqa';
    expect(readJsonl<ExampleResult>(join(runs, merged, 'results.jsonl')).map(view)).toEqual(whole());
    expect(metricsOf(merged).metrics).toEqual(metricsOf('whole').metrics); // CIs included
    expect(metricsOf(merged).n).toBe(QUESTIONS);
    const parentId = mlflowRunId(merged);
    expect(await mlflowMetrics(parentId)).toEqual(await mlflowMetrics(mlflowRunId('whole')));
    const children = (await searchRuns(uri, experiment)).filter((r) => tag(r, 'mlflow.parentRunId') === parentId);
    expect(children.map((c) => [tag(c, 'ambiqa.shard'), tag(c, 'ambiqa.shard_group'), c.info.status]).sort()).toEqual([
      ['0/2', group, 'FINISHED'],
      ['1/2', group, 'FINISHED'],
    ]);

    // Each question asked once, by the shard that owns it.
    const asked = server.requests.slice(before).map((r) => questionOf(r.body));
    expect(asked.sort()).toEqual(Array.from({ length: QUESTIONS }, (_, i) => String(i)));
    // The shards' caches on the node-local disk, none in the artifacts (the shared storage).
    const caches = join(nodeTmp, 'ambiqa-root', group);
    expect(readdirSync(caches).filter((f) => f.endsWith('.sqlite')).sort()).toEqual(['shard-0.sqlite', 'shard-1.sqlite']);
    expect(readdirSync(join(runs, 'toc-asqa.shard-0of2')).some((f) => f.endsWith('.sqlite'))).toBe(false);
    // The jobs ran what `ambiqa slurm` submitted, under the docs' partition.
    const record = launchRecord(group);
    expect(record.submissions).toHaveLength(1);
    expect(await cluster!.command('scontrol', ['show', 'job', '-o', record.submissions[0]!.mergeJobId])).toContain(`Partition=${partition}`);
  }, 300_000);

  it('a shard stopped by scancel mid-run: exit 130, no merge, refused from MLflow; the printed resubmission finishes it without asking a finished question again', async () => {
    // Slow answers, so that shard 1 is surely between questions when scancel reaches it.
    server.okDelayMs = 2500;
    const before = server.requests.length;
    const launch = captured(() => slurmCommand([...docArgs(), '--name', 'cut', '--gpus-per-task', '1']));
    const shardDir = join(runs, 'cut.shard-1of2');
    await waitFor(() => existsSync(join(shardDir, 'results.jsonl')) && readJsonl(join(shardDir, 'results.jsonl')).length >= 1, 'shard 1 to finish a question');
    const group = readdirSync(join(artifacts, 'slurm')).find((g) => g.startsWith('cut-'))!;
    const jobId = launchRecord(group).submissions[0]!.shardsJobId;
    await cluster!.command('scancel', [`${jobId}_1`]);
    const first = await launch;
    server.okDelayMs = 0;
    expect(first.status, first.output).toBe(130);
    expect(first.output).toContain('shard 1/2: CANCELLED, exit 130 (interrupted)');
    expect(first.output).toContain('merge: not run (a shard did not succeed)');
    const state = JSON.parse(readFileSync(join(shardDir, 'run.json'), 'utf8')) as RunState;
    expect(state.status).toBe('KILLED');
    const runId = mlflowRunId('cut.shard-1of2');
    expect((await getRun(uri, runId)).info.status).toBe('KILLED');
    const finishedBefore = new Set(readJsonl<ExampleResult>(join(shardDir, 'results.jsonl')).map((r) => r.id));
    expect(finishedBefore.size).toBeGreaterThanOrEqual(1);
    expect(finishedBefore.size).toBeLessThan(QUESTIONS / 2);

    // The launch cannot be merged as it stands.
    const refusal = await mergeCommand(['--from-mlflow', group]).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(AmbiqaError);
    expect((refusal as AmbiqaError).message).toBe(`--from-mlflow ${group}: missing shard 1/2 (run ${runId} is KILLED)`);

    // The command `--wait` printed, run as printed.
    const line = /resubmit the unfinished shards \(they resume their runs\): (.*)/.exec(first.output)?.[1];
    expect(line, first.output).toBeDefined();
    const words = shellWords(line!);
    expect(words.slice(0, 3)).toEqual(['npx', 'ambiqa', 'slurm']);
    expect(words).toEqual(expect.arrayContaining(['--group', group, '--only', '1', '--gpus-per-task=1', '--name=cut']));
    const resubmittedAt = server.requests.length;
    const second = await captured(() => slurmCommand(words.slice(3)));
    expect(second.status, second.output).toBe(0);

    // Equal to the unsharded run; one MLflow run for shard 1 over both sessions.
    expect(readJsonl<ExampleResult>(join(runs, 'cut', 'results.jsonl')).map(view)).toEqual(whole());
    expect(metricsOf('cut').metrics).toEqual(metricsOf('whole').metrics);
    expect(mlflowRunId('cut.shard-1of2')).toBe(runId);
    expect(JSON.parse(readFileSync(join(shardDir, 'run.json'), 'utf8'))).toMatchObject({ status: 'FINISHED', sessions: 2, done: QUESTIONS / 2 });
    expect(readFileSync(join(artifacts, 'slurm', group, 'shard-1.out'), 'utf8').match(/^ambiqa slurm: shard 1 of 2/gm)).toHaveLength(2);

    // No question that shard 1 had finished was asked again; every question was answered.
    // writeAsqa's question q0<i> is "When did event <i> happen?".
    const finishedNumbers = new Set([...finishedBefore].map((id) => String(Number(id.slice(1)))));
    const askedAgain = server.requests.slice(resubmittedAt).map((r) => questionOf(r.body));
    expect(askedAgain.length).toBeGreaterThan(0);
    expect(askedAgain.filter((q) => finishedNumbers.has(q))).toEqual([]);
    const askedAll = server.requests.slice(before).map((r) => questionOf(r.body));
    expect(new Set(askedAll).size).toBe(QUESTIONS);
    // At most the question in flight at the scancel is asked twice.
    expect(askedAll.length).toBeLessThanOrEqual(QUESTIONS + 1);
  }, 300_000);

  it('a shard requeued mid-run (as a preemption with requeue does) resumes its run, and the same launch ends merged', async () => {
    server.okDelayMs = 2500;
    const launch = captured(() => slurmCommand([...docArgs(), '--name', 'rq']));
    const shardDir = join(runs, 'rq.shard-1of2');
    await waitFor(() => existsSync(join(shardDir, 'results.jsonl')) && readJsonl(join(shardDir, 'results.jsonl')).length >= 1, 'shard 1 to finish a question');
    const group = readdirSync(join(artifacts, 'slurm')).find((g) => g.startsWith('rq-'))!;
    const jobId = launchRecord(group).submissions[0]!.shardsJobId;
    const runId = mlflowRunId('rq.shard-1of2');
    await cluster!.command('scontrol', ['requeue', `${jobId}_1`]);
    const requeuedAt = server.requests.length;
    const finishedBefore = new Set(readJsonl<ExampleResult>(join(shardDir, 'results.jsonl')).map((r) => String(Number(r.id.slice(1)))));
    // Slurm holds a requeued job for about two minutes (its BeginTime): slurmd revokes the first
    // attempt's credential, and refuses ("Job credential revoked", the task then FAILS) any
    // credential issued up to the same second. The test releases the task early, so it waits for
    // what Slurm's delay covers: the first attempt has ended (the shard wrote and uploaded its
    // state, its log says so) and the clock has moved past the second of the revocation.
    const log = join(artifacts, 'slurm', group, 'shard-1.out');
    await waitFor(() => existsSync(log) && readFileSync(log, 'utf8').includes('exit status 130'), 'the first attempt of shard 1 to end');
    let record = '';
    const deadline = Date.now() + 60_000;
    while (!/JobState=PENDING .*Reason=BeginTime/.test(record)) {
      if (Date.now() > deadline) throw new Error(`shard 1 did not go back to pending: ${record}`);
      await new Promise((r) => setTimeout(r, 200));
      record = await cluster!.command('scontrol', ['show', 'job', '-o', `${jobId}_1`]);
    }
    await new Promise((r) => setTimeout(r, 2000));
    await cluster!.command('scontrol', ['update', `JobId=${jobId}_1`, 'StartTime=now']);
    server.okDelayMs = 0;
    const { status, output } = await launch;
    expect(status, output).toBe(0);
    expect(output).toContain('merge: COMPLETED, exit 0');

    expect(readJsonl<ExampleResult>(join(runs, 'rq', 'results.jsonl')).map(view)).toEqual(whole());
    expect(metricsOf('rq').metrics).toEqual(metricsOf('whole').metrics);
    // The same run dir and MLflow run, in two sessions; the log kept both attempts.
    expect(mlflowRunId('rq.shard-1of2')).toBe(runId);
    expect(JSON.parse(readFileSync(join(shardDir, 'run.json'), 'utf8'))).toMatchObject({ status: 'FINISHED', sessions: 2, done: QUESTIONS / 2 });
    expect(readFileSync(join(artifacts, 'slurm', group, 'shard-1.out'), 'utf8')).toMatch(/shard 1 of 2, job \d+ on .* \(requeued 1 times\)/);
    const askedAgain = server.requests.slice(requeuedAt).map((r) => questionOf(r.body));
    expect(askedAgain.filter((q) => finishedBefore.has(q))).toEqual([]);
  }, 300_000);

  it.skipIf(luceneUnavailable !== undefined && !process.env.CI)(
    'the docs\' Lucene launch: both shards read one index, read-only, through the one searcher serve-index announced; merged equal to an unsharded run',
    async () => {
      if (!lucene) throw new Error(`the Slurm test's Lucene launch cannot run: ${luceneUnavailable}`);
      // The runtime by path, as the docs allow, and a cache folder of the test's own: serve-index
      // announces its searcher there, and sbatch passes all three to the jobs.
      setEnv('AMBIQA_ANSERINI_JAR', lucene.jar);
      setEnv('AMBIQA_JAVA', lucene.java);
      const cache = join(dir, 'cache');
      setEnv('AMBIQA_CACHE_DIR', cache);
      // The docs' block; its /shared/wiki/ is a folder of the test's ("shared storage").
      const wiki = join(dir, 'shared', 'wiki');
      mkdirSync(wiki, { recursive: true });
      const commands = luceneExample().map((words) => words.map((w) => w.replace(/^\/shared\/wiki\//, `${wiki}/`).replace(/=\/shared\/wiki\//, `=${wiki}/`)));
      const docIndex = commands.find((c) => c[2] === 'index')!;
      const docServe = commands.find((c) => c[2] === 'serve-index')!;
      const docLaunch = commands.find((c) => c[2] === 'slurm')!;
      expect(commands.map((c) => c.slice(0, 3).join(' '))).toEqual(['npx ambiqa setup', 'npx ambiqa index', 'npx ambiqa serve-index', 'npx ambiqa slurm']);
      const index = docIndex[docIndex.indexOf('--out') + 1]!;
      writeDprTsv(docIndex[docIndex.indexOf('dpr-tsv') + 1]!, QUESTIONS);
      // `npx ambiqa setup --only lucene` is this test's precondition (luceneRuntime above).
      expect(await indexCommand(docIndex.slice(3))).toBe(0);
      const pristine = folderState(index);

      // A retrieving config: vanilla RAG over the top 2 passages; the docs' --set lines add the retriever.
      const ragConfig = writeYaml(join(dir, 'experiments', 'rag-asqa.yaml'), {
        dataset: { name: 'asqa', path: join(dir, 'asqa.json') },
        pipeline: { name: 'vanilla-rag', options: { nShots: 0, nPassages: 2, poolSize: 2, maxTokens: 16 } },
        llm: { cache: join(dir, 'rag-llm-cache.sqlite') },
        metrics: ['str_em', 'rougeL'],
        concurrency: 1,
        tracking: { experiment, traces: false },
      });
      const sets = docLaunch.flatMap((w, i) => (docLaunch[i - 1] === '--set' ? ['--set', w] : []));
      expect(sets).toContain(`retriever.index=${index}`);

      // One searcher for the node: serve-index on it, before the shards start there. It starts
      // while the reference runs, announcing in the cache folder the shards will see, not in the
      // reference run's.
      const runTmp = join(dir, 'run-tmp');
      const serveTmp = join(dir, 'serve-tmp');
      for (const d of [runTmp, serveTmp]) mkdirSync(d);
      expect(docServe.slice(3)).toEqual([index, '&']);
      const serving = startServeIndex(docServe.slice(3, -1), { ...process.env, TMPDIR: serveTmp });
      serving.catch(() => undefined); // awaited below; a failure meanwhile is no unhandled rejection
      try {
        // The reference: unsharded, through a searcher of its own (TMPDIR says whose a searcher is).
        setEnv('AMBIQA_CACHE_DIR', join(dir, 'run-cache'));
        setEnv('TMPDIR', runTmp);
        let watch = watchSearchers(runTmp);
        expect(await runCommand([ragConfig, '--name', 'lucene-whole', '--quiet', '--no-tracking', ...sets, '--set', `llm.cache=${join(dir, 'lucene-whole.sqlite')}`])).toBe(0);
        expect(watch.stop().size, 'the reference run started one searcher').toBe(1);
        expect(searchersUnder(runTmp).size, 'the reference run\'s searcher stopped with it').toBe(0);

        const served = await serving;
        setEnv('AMBIQA_CACHE_DIR', cache);
        const before = server.requests.length;
        setEnv('TMPDIR', nodeTmp);
        watch = watchSearchers(dir);
        const args = docLaunch.slice(3).map((w, i, all) => (all[i - 1] === '--shards' ? '2' : w.startsWith('experiments/') ? ragConfig : w));
        const { status, output } = await captured(() => slurmCommand([...args, '--name', 'lucene']));
        const launchSearchers = watch.stop();
        expect(status, output).toBe(0);
        expect(output).toMatch(/shard 0\/2: COMPLETED, exit 0\nshard 1\/2: COMPLETED, exit 0\nmerge: COMPLETED, exit 0/);
        const group = groupOf(output);

        // One searcher served the launch: serve-index's; no shard started a JVM of its own.
        expect([...launchSearchers.values()].map((c) => relative(dir, c).split('/')[0])).toEqual(['serve-tmp']);
        for (const shard of [0, 1]) {
          const log = readFileSync(join(artifacts, 'slurm', group, `shard-${shard}.out`), 'utf8');
          expect(log).toContain(`lucene: using the searcher ambiqa serve-index runs at ${served.url}`);
          expect(log).not.toContain('lucene: starting a searcher');
        }

        // Both shards answered from the index: each question's planted passage first, its text in the prompt.
        const traceOf = (run: string) => readJsonl<Trace>(join(runs, run, 'traces.jsonl'));
        const answered: string[] = [];
        for (const shard of [0, 1]) {
          const traces = traceOf(`lucene.shard-${shard}of2`);
          expect(traces).toHaveLength(QUESTIONS / 2);
          for (const t of traces) {
            const i = Number(t.questionId.slice(1));
            expect(t.retrievals.map((r) => r.retriever)).toEqual(['bm25:lucene']);
            expect(t.retrievals[0]!.hits[0]!.id).toBe(plantedId(i));
            answered.push(t.questionId);
          }
        }
        expect(answered.sort()).toEqual(Array.from({ length: QUESTIONS }, (_, i) => `q${String(i).padStart(2, '0')}`));
        const asked = server.requests.slice(before);
        expect(asked.map((r) => questionOf(r.body)).sort()).toEqual(Array.from({ length: QUESTIONS }, (_, i) => String(i)));
        for (const r of asked) expect(JSON.stringify(r.body.messages)).toContain(plantedText(Number(questionOf(r.body))));

        // The merge equals the unsharded run (the stand-in model echoes its prompt: same passages, same answers).
        expect(readJsonl<ExampleResult>(join(runs, 'lucene', 'results.jsonl')).map(view)).toEqual(
          readJsonl<ExampleResult>(join(runs, 'lucene-whole', 'results.jsonl')).map(view),
        );
        expect(metricsOf('lucene').metrics).toEqual(metricsOf('lucene-whole').metrics);
        const hitsOf = (run: string) => traceOf(run).map((t) => [t.questionId, t.retrievals.map((r) => r.hits)]);
        expect(hitsOf('lucene')).toEqual(hitsOf('lucene-whole'));
        // The shards say in MLflow which index they read (its commit point's checksum).
        const segments = Object.keys(pristine).find((f) => /^segments_\d+$/.test(f))!;
        const commitSha = createHash('sha256').update(readFileSync(join(index, segments))).digest('hex');
        for (const shard of [0, 1]) {
          const run = await getRun(uri, mlflowRunId(`lucene.shard-${shard}of2`));
          expect([param(run, 'retriever.engine'), param(run, 'retriever.index'), param(run, 'retriever.index.sha256')]).toEqual(['lucene', index, commitSha]);
        }
      } finally {
        const served = await serving.catch(() => undefined);
        if (served && served.child.exitCode === null) {
          served.child.kill('SIGTERM');
          await new Promise<void>((r) => served.child.once('exit', () => r()));
        }
      }
      const served = await serving;
      expect(served.child.exitCode, served.log()).toBe(0);
      expect(searchersUnder(dir).size, 'serve-index\'s searcher stopped with it').toBe(0);
      expect(readdirSync(join(cache, 'lucene', 'searchers')), 'serve-index withdrew its announcement').toEqual([]);
      // Nothing wrote to the index: not a file, not a lock, not a timestamp.
      expect(folderState(index)).toEqual(pristine);
    },
    300_000,
  );

  it('leaves nothing behind: no job step, no daemon, no folder', async () => {
    const c = cluster!;
    expect((await c.command('squeue', ['-h'])).trim()).toBe('');
    expect(stepFiles(c)).toEqual([]);
    expect([...searchersUnder(dir).keys()], 'a Lucene searcher still runs').toEqual([]);
    await c.stop();
    cluster = undefined;
    expect(existsSync(c.dir)).toBe(false);
    for (const pid of c.pids) expect(() => process.kill(pid, 0), `process ${pid} still runs`).toThrow();
  }, 120_000);
});
