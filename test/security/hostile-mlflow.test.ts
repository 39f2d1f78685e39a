import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { AmbiqaError } from '../../src/errors';
import { parseShard } from '../../src/experiments/shard';
import { sha256, SHARD_GROUP_TAG, SHARD_TAG, UPLOADS_TAG } from '../../src/experiments/shard-group';
import { MlflowClient, pageGuard } from '../../src/tracking/client';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';
import { startFakeMlflow, type FakeMlflow, type FakeRun } from './helpers/fake-mlflow';

/**
 * `merge --from-mlflow` against a hostile MLflow server on loopback (issue 43): a shard run named
 * with `../`, a shard count of 300000, a page token that never ends, an artifact larger than
 * anything a run writes, a file changed on the server. Each must end in one short line, with no
 * file outside the merge's own folder and no half-merged folder left behind.
 */
// Named indirectly: test/global-setup.ts starts a real MLflow server for files that mention it.
const TRACKING_URI = ['MLFLOW', 'TRACKING', 'URI'].join('_');
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-hostile-mlflow-'));
const keys = ['AMBIQA_ARTIFACTS_DIR', TRACKING_URI, 'AMBIQA_TRACKING'];
const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
let server: FakeMlflow | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => {
  for (const k of keys) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Every file under `root`, relative to it. */
function filesUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(root.length + 1))
    .sort();
}

async function refusal(args: string[]): Promise<string> {
  const error = await mergeCommand(args).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AmbiqaError);
  return (error as Error).message;
}

// The files of one real shard (a scripted run, tracking off), served by the fake server.
const files: Record<string, Buffer> = {};
beforeAll(async () => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'machine-a');
  const config = writeYaml(join(dir, 'sec.yaml'), {
    dataset: { name: 'asqa', path: writeAsqa(dir, 3) },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', cycle: ['In 1991.'], cache: join(dir, 'cache.sqlite') },
    metrics: ['str_em'],
    tracking: { enabled: false },
  });
  expect(await runCommand([config, '--name', 'sec', '--shard', '0/1', '--quiet'])).toBe(0);
  const shardDir = join(dir, 'machine-a', 'runs', 'sec.shard-0of1');
  for (const f of ['config.yaml', 'results.jsonl', 'traces.jsonl', 'metrics.json']) files[f] = readFileSync(join(shardDir, f));
});

function shardRun(overrides: Partial<FakeRun> & { group: string }): FakeRun {
  return {
    runId: overrides.runId ?? 'r0',
    runName: overrides.runName ?? 'sec.shard-0of1',
    tags: {
      [SHARD_GROUP_TAG]: overrides.group,
      [SHARD_TAG]: '0/1',
      [UPLOADS_TAG]: Object.entries(files)
        .map(([f, data]) => `${f}=${sha256(data)}`)
        .join(' '),
      ...overrides.tags,
    },
    artifacts: overrides.artifacts ?? files,
  };
}

/** Machine B: an empty artifacts folder inside `dir`, so that anything written outside it shows. */
function machineB(name: string): string {
  const root = join(dir, name);
  process.env.AMBIQA_ARTIFACTS_DIR = join(root, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  return root;
}

describe('merge --from-mlflow against a hostile server', () => {
  it('a shard run named ../…/victim: the merged name is refused in one line, and nothing is written anywhere', async () => {
    const root = machineB('b-traversal');
    const victim = join(root, 'victim');
    server = await startFakeMlflow([shardRun({ group: 'g-trav', runName: `../../../../../../../../../..${victim}` })]);
    process.env[TRACKING_URI] = server.uri;
    const message = await refusal(['--from-mlflow', 'g-trav']);
    expect(message).toMatch(/^MLflow run r0's name "\.\.\/\.\.\/.*" cannot name a file or folder/);
    expect(message.split('\n')).toHaveLength(1);
    expect(filesUnder(root)).toEqual([]);
    // A --name from the command line is held to the same rule.
    expect(await refusal(['--from-mlflow', 'g-trav', '--name', '../escape'])).toMatch(/^--name "\.\.\/escape" cannot name a file or folder/);
    expect(filesUnder(root)).toEqual([]);
  });

  it('with --name, the same shard is merged into shards/shard-0of1 inside the merged folder: no file outside it', async () => {
    const root = machineB('b-renamed');
    const victim = join(root, 'victim');
    server = await startFakeMlflow([shardRun({ group: 'g-named', runName: `../../../../../../../../../..${victim}` })]);
    process.env[TRACKING_URI] = server.uri;
    expect(await mergeCommand(['--from-mlflow', 'g-named', '--name', 'merged'])).toBe(0);
    const written = filesUnder(root);
    expect(written.length).toBeGreaterThan(5);
    for (const f of written) expect(f.startsWith(join('artifacts', 'runs', 'merged') + '/')).toBe(true);
    expect(written).toContain(join('artifacts', 'runs', 'merged', 'shards', 'shard-0of1', 'results.jsonl'));
    expect(existsSync(victim)).toBe(false);
  });

  it('a shard tag of 0/300000 is refused in one short line, without three hundred thousand missing shards', async () => {
    const root = machineB('b-count');
    server = await startFakeMlflow([shardRun({ group: 'g-count', tags: { [SHARD_TAG]: '0/300000' } })]);
    process.env[TRACKING_URI] = server.uri;
    const message = await refusal(['--from-mlflow', 'g-count']);
    expect(message).toBe("--from-mlflow g-count: run r0 is in the group but has no valid ambiqa.shard tag ('0/300000': the number of shards must be at most 10000)");
    expect(message.length).toBeLessThan(400);
    expect(filesUnder(root)).toEqual([]);
    expect(() => parseShard('0/300000')).toThrow('the number of shards must be at most 10000');
    // A tag of megabytes is shown cut, not echoed whole.
    expect(() => parseShard('7'.repeat(5_000_000))).toThrow(/^'7{40}…' is not a shard spec/);
  });

  it('a file changed on the server (checksum mismatch) leaves no folder behind, not even the staging one', async () => {
    const root = machineB('b-tampered');
    server = await startFakeMlflow([shardRun({ group: 'g-tamper', artifacts: { ...files, 'results.jsonl': Buffer.from('{"id":"evil"}\n') } })]);
    process.env[TRACKING_URI] = server.uri;
    const message = await refusal(['--from-mlflow', 'g-tamper']);
    expect(message).toContain('results.jsonl on the server does not match its checksum');
    expect(filesUnder(root)).toEqual([]);
    expect(existsSync(join(root, 'artifacts', 'runs')) ? readdirSync(join(root, 'artifacts', 'runs')) : []).toEqual([]);
  });

  it('page tokens that never end stop after a bounded number of pages, in one line', async () => {
    server = await startFakeMlflow([]);
    server.endlessPageToken = 'again';
    // The default bound is 1 000 pages; 50 here keeps the test fast.
    const client = new MlflowClient({ uri: server.uri, maxPages: 50 });
    const error = await client.searchAllRuns({ experimentIds: ['1'] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/runs\/search: the server's page tokens go on past 50 pages; stopped$/);
    expect(server.requests.search).toBe(51);
  });

  it('a page token repeated is refused at its second appearance', () => {
    const next = pageGuard('x: runs/search');
    expect(next('t1')).toBe('t1');
    expect(next('t2')).toBe('t2');
    expect(() => next('t1')).toThrow("x: runs/search: the server's page tokens repeat; stopped");
    expect(next(undefined)).toBeUndefined();
  });

  it('an artifact larger than the limit is refused as it streams, without holding it', async () => {
    server = await startFakeMlflow([shardRun({ group: 'g-big' })]);
    server.artifactBytes = 64 * 1024 * 1024; // 64 MiB against a limit of 4 MiB
    const client = new MlflowClient({ uri: server.uri, maxArtifactBytes: 4 * 1024 * 1024 });
    const error = await client.downloadArtifact('r0', 'results.jsonl').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe(`${server.uri}: artifact GET: the server's reply is larger than 4194304 bytes, the most ambiqa reads`);
  });
});
