import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { readJsonl } from '../../src/common/jsonl';
import { AmbiqaError } from '../../src/errors';
import type { ExampleResult } from '../../src/run-files';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, searchRuns, tag } from './helpers/mlflow';

// The multi-machine example of docs/experiments.md (it was the README's), run as written: the
// shell block under "Spreading a run over machines" is parsed here (exports, the `seq | parallel` shard command, the rsync step,
// the merge command), and its commands run on one machine whose shards share `artifacts/` (so
// the rsync step has nothing to copy). What stands in for the cluster: the inference service is
// a local OpenAI-compatible server, the MLflow server is the tests' real one, and
// experiments/toc-asqa.yaml is a closed-book config of the same file name (ToC itself needs the
// corpus and embedding models, which are not what this test is about). If the page's names,
// paths or flags stop matching the CLI, this fails.
const uri = inject('mlflowTrackingUri');
const root = resolve(__dirname, '../..');

interface ReadmeExample {
  exported: string[];
  shardIndexes: number[];
  parallelEnv: string[];
  runArgs: string[];
  rsync: string;
  mergeArgs: string[];
}

function readmeExample(): ReadmeExample {
  const readme = readFileSync(join(root, 'docs', 'experiments.md'), 'utf8');
  const section = readme.slice(readme.indexOf('**Spreading a run over machines**'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/experiments.md: no ```sh block after "Spreading a run over machines"');
  const lines = block.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const exportLine = lines.find((l) => l.startsWith('export '))!;
  const parallelLine = lines.find((l) => /^seq \d+ \d+ \| parallel /.test(l))!;
  const seq = /^seq (\d+) (\d+)/.exec(parallelLine)!;
  const quoted = /'([^']+)'\s*$/.exec(parallelLine)![1]!;
  const run = quoted.replace(/^cd ambiqa && /, '');
  const mergeLine = lines.find((l) => l.startsWith('npx ambiqa merge '))!;
  return {
    exported: exportLine.replace(/^export /, '').split(/\s+/).map((kv) => kv.split('=')[0]!),
    shardIndexes: Array.from({ length: Number(seq[2]) - Number(seq[1]) + 1 }, (_, i) => Number(seq[1]) + i),
    parallelEnv: [...parallelLine.matchAll(/--env (\S+)/g)].map((m) => m[1]!),
    runArgs: run.split(/\s+/),
    rsync: lines.find((l) => l.includes('rsync'))!,
    mergeArgs: mergeLine.split(/\s+/).slice(3),
  };
}

/** A shell glob over one path segment, as sh would expand it (here: `*` and `?` in the last part). */
function expandGlob(pattern: string): string[] {
  if (!/[*?]/.test(pattern)) return [pattern];
  const re = new RegExp(`^${basename(pattern).replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')}$`);
  const matches = readdirSync(dirname(pattern)).filter((n) => re.test(n)).sort();
  return matches.length > 0 ? matches.map((n) => join(dirname(pattern), n)) : [pattern];
}

describe('the multi-machine example of docs/experiments.md', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-readme-shards-'));
  const saved: Record<string, string | undefined> = {};
  const setEnv = (k: string, v: string) => {
    if (!(k in saved)) saved[k] = process.env[k];
    process.env[k] = v;
  };
  let server: FaultServer;
  beforeAll(async () => {
    server = await startFaultServer();
  });
  afterAll(async () => {
    await server.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  // The README's paths are relative to a clone; here they are relative to `dir`.
  const local = (arg: string) => (/^(artifacts|experiments)\//.test(arg) ? join(dir, arg) : arg);

  it('parses: every exported variable reaches the remote shards, and the rsync step fills artifacts/runs/', () => {
    const ex = readmeExample();
    expect(ex.exported.sort()).toEqual([...ex.parallelEnv].sort());
    expect(ex.rsync).toMatch(/rsync -a "\$h:ambiqa\/artifacts\/runs\/" artifacts\/runs\//);
    expect(ex.runArgs.slice(0, 3)).toEqual(['npx', 'ambiqa', 'run']);
  });

  it.skipIf(!uri && !process.env.CI)('runs as written: shards on a shared artifacts dir, merged into one MLflow parent with nested shard runs', async () => {
    const ex = readmeExample();
    const experiment = `readme-shards-${Date.now()}`;
    mkdirSync(join(dir, 'experiments'), { recursive: true });
    writeYaml(join(dir, 'experiments', 'toc-asqa.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 7) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { cache: join(dir, 'llm-cache.sqlite') },
      metrics: ['str_em', 'rougeL'],
      tracking: { experiment },
    });
    setEnv('AMBIQA_ARTIFACTS_DIR', join(dir, 'artifacts'));
    const values: Record<string, string> = { MLFLOW_TRACKING_URI: uri, OPENAI_BASE_URL: server.url, OPENAI_MODEL: 'readme-model' };
    for (const name of ex.exported) {
      expect(values[name], `the example exports ${name}; the test has no local stand-in for it`).toBeDefined();
      setEnv(name, values[name]!);
    }

    for (const i of ex.shardIndexes) {
      const args = ex.runArgs.slice(3).map((a) => local(a.replaceAll('{}', String(i))));
      expect(await runCommand(args)).toBe(0);
    }
    const mergeArgs = ex.mergeArgs.flatMap((a) => expandGlob(local(a)));
    expect(mergeArgs.filter((a) => a.includes('.shard-'))).toHaveLength(ex.shardIndexes.length);
    expect(await mergeCommand(mergeArgs)).toBe(0);

    const name = ex.mergeArgs[ex.mergeArgs.indexOf('--name') + 1]!;
    const merged = join(dir, 'artifacts', 'runs', name);
    const results = readJsonl<ExampleResult>(join(merged, 'results.jsonl'));
    expect(results).toHaveLength(7);
    expect(results.every((r) => !r.error && r.output.startsWith('echo:'))).toBe(true);

    const parentId = JSON.parse(readFileSync(join(merged, 'mlflow.json'), 'utf8')).runId as string;
    expect((await getRun(uri, parentId)).info.status).toBe('FINISHED');
    const runs = await searchRuns(uri, experiment);
    const children = runs.filter((r) => tag(r, 'mlflow.parentRunId') === parentId);
    expect(children).toHaveLength(ex.shardIndexes.length);
    expect(children.every((c) => c.info.status === 'FINISHED')).toBe(true);
    expect(runs).toHaveLength(ex.shardIndexes.length + 1);
  }, 240_000);

  it('the old naming (`--name toc-s0` merged as artifacts/runs/toc-s0) gets a hint naming the shard dir', async () => {
    const runs = join(dir, 'artifacts-old', 'runs');
    mkdirSync(join(runs, 'toc-s0.shard-0of4'), { recursive: true });
    let error: unknown;
    try {
      await mergeCommand([join(runs, 'toc-s0'), '--no-tracking']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AmbiqaError);
    expect((error as AmbiqaError).message).toContain('is not a run directory');
    expect((error as AmbiqaError).hint).toContain(`did you mean ${join(runs, 'toc-s0.shard-0of4')}`);
    expect(existsSync(join(runs, 'toc-s0'))).toBe(false);
  });
});
