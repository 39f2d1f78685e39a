import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { venvDir } from '../../src/config/paths';
import { readJsonl } from '../../src/common/jsonl';
import type { ExampleResult } from '../../src/run-files';
import { mlflowExecutable, startLocalServer, type LocalServer } from '../../src/tracking/server';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';
import { startFaultServer, type FaultServer } from '../llm/fault-server';

// A model that echoes the API key into every reply (and every error), a key in a variable whose
// name says nothing about secrets (MYVAR), a real MLflow server on a store of its own: after a
// run, a report attached to MLflow and a replay from the cache with the key gone from the
// environment, not one byte of the key is in the run dirs, the cache, the MLflow store, the
// report or anything the CLI printed.
const root = resolve(__dirname, '../..');
const KEY = 'qz7-live-9f3b2c71d0a84e5e-TOPSECRET';
const hasMlflow = existsSync(mlflowExecutable(venvDir()));

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/ambiqa.mjs'), ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((done) => child.on('exit', (code) => done({ code, output })));
}

/** Occurrences of `needle` in every file under `dir`, by path (bytes, so SQLite files count too). */
function occurrences(dir: string, needle: string): Record<string, number> {
  const found: Record<string, number> = {};
  const visit = (p: string): void => {
    const st = statSync(p);
    if (st.isDirectory()) return readdirSync(p).forEach((n) => visit(join(p, n)));
    const data = readFileSync(p);
    let n = 0;
    for (let at = data.indexOf(needle); at >= 0; at = data.indexOf(needle, at + 1)) n++;
    if (n > 0) found[p] = n;
  };
  if (existsSync(dir)) visit(dir);
  return found;
}

describe.skipIf(!hasMlflow && !process.env.CI)('a hostile endpoint that echoes the API key', () => {
  let server: FaultServer;
  let mlflow: LocalServer;
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-hostile-'));
  const store = join(dir, 'mlflow-store');
  beforeAll(async () => {
    server = await startFaultServer();
    server.echoKey = true;
    mlflow = await startLocalServer({ storeDir: store, venv: venvDir() });
  }, 300_000);
  afterAll(async () => {
    await server?.close();
    await mlflow?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves 0 bytes of it in the run dir, the cache, MLflow, the report and stdout/stderr', async () => {
    const artifacts = join(dir, 'artifacts');
    const cache = join(dir, 'cache.sqlite');
    const config = writeYaml(join(dir, 'hostile.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 4) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'echo-model', apiKeyEnv: 'MYVAR', cache, timeoutSeconds: 10 },
      metrics: ['str_em', 'rougeL'],
      tracking: { experiment: 'hostile' },
    });
    const { MYVAR: _m, OPENAI_API_KEY: _o, ...clean } = process.env;
    // The tracking URI variable is named indirectly: test/global-setup.ts starts a shared server
    // for any test file that mentions it, and this test brings its own (to search its store).
    const base = { ...clean, AMBIQA_ARTIFACTS_DIR: artifacts, [['MLFLOW', 'TRACKING', 'URI'].join('_')]: mlflow.uri };
    // One retried 500 and one question failed by a 400, both quoting the key back.
    server.script = [{ kind: 'status', status: 500 }, { kind: 'status', status: 400 }];
    const first = await cli(['run', config, '--name', 'hostile'], { ...base, MYVAR: KEY });
    expect(first.output).toMatch(/run hostile FINISHED/);

    // The endpoint did get the key and did echo it: the masking below is not vacuous.
    expect(server.requests.every((r) => r.authorization === `Bearer ${KEY}`)).toBe(true);
    const results = readJsonl<ExampleResult>(join(artifacts, 'runs', 'hostile', 'results.jsonl'));
    expect(results.filter((r) => r.output.includes('[your key is [redacted]]'))).toHaveLength(3);
    expect(results.filter((r) => r.error)).toHaveLength(1);

    const report = join(dir, 'report.html');
    const rep = await cli(['report', join(artifacts, 'runs', 'hostile'), '--out', report, '--mlflow', '--no-png', '--traces', 'full'], {
      ...base,
      MYVAR: KEY,
    });
    expect(rep.code, rep.output).toBe(0);
    expect(readFileSync(report, 'utf8')).toContain('[redacted]');

    // Replayed from the cache with no key in the environment: still nothing to leak.
    const requestsBefore = server.requests.length;
    const replay = await cli(['run', config, '--name', 'replay'], base);
    expect(replay.output).toMatch(/run replay FINISHED/);
    const replayed = readJsonl<ExampleResult>(join(artifacts, 'runs', 'replay', 'results.jsonl'));
    const answered = new Map(results.filter((r) => !r.error).map((r) => [r.id, r.output]));
    expect(replayed.filter((r) => answered.has(r.id)).map((r) => r.output)).toEqual([...answered.values()]);
    // Only the question that failed is asked again.
    expect(server.requests.length - requestsBefore).toBe(1);

    for (const where of [artifacts, cache, store, report]) expect(occurrences(where, KEY), where).toEqual({});
    for (const output of [first.output, rep.output, replay.output]) expect(output).not.toContain(KEY);
  }, 300_000);
});
