import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { run as reproduceCommand } from '../../src/cli/commands/reproduce';
import { run as runCommand } from '../../src/cli/commands/run';
import { AmbiqaError } from '../../src/errors';
import { closeSession } from '../../src/experiments/session';
import { sha256Path } from '../../src/experiments/provenance';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, listArtifacts, tag } from './helpers/mlflow';

/**
 * `ambiqa reproduce` as the command runs it (its `run(argv)`, stdout read): an MLflow run id
 * reproduced on "machine B" (another artifacts folder) from the files and checksums the run
 * stored on the tests' real MLflow server; the exit statuses 0 (every output identical) and 6
 * (some changed, a loopback endpoint asked again with --live).
 *
 * The clone running the tests may have uncommitted changes, which reproduce rightly refuses; the
 * tests pass `--allow-different commit` (the commit check itself is tested in reproduce.test.ts).
 */
const uri = inject('mlflowTrackingUri');

async function command(args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  try {
    const code = await reproduceCommand(args);
    return { code, out: lines.join('\n') };
  } finally {
    spy.mockRestore();
  }
}

describe.skipIf(!uri && !process.env.CI)('ambiqa reproduce (real MLflow, loopback endpoint)', () => {
  const keys = ['AMBIQA_ARTIFACTS_DIR', 'MLFLOW_TRACKING_URI'] as const;
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-reproduce-cli-'));
  const machineA = join(dir, 'machine-a');
  const machineB = join(dir, 'machine-b');
  const experiment = `test-reproduce-${Date.now()}`;
  const data = writeAsqa(dir, 5);
  let server: FaultServer;

  beforeAll(async () => {
    server = await startFaultServer();
  });
  afterAll(async () => {
    await server.close();
    await closeSession();
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('reproduces an MLflow run by id on another machine: its files fetched and checked, every output identical', async () => {
    const config = writeYaml(join(dir, 'rp.yaml'), {
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'scripted', cycle: ['In 1991.', 'In 1994 and 2004.', 'Never.'], cache: join(dir, 'cache.sqlite') },
      metrics: ['str_em'],
      tracking: { experiment, traces: false },
    });
    process.env.AMBIQA_ARTIFACTS_DIR = machineA;
    process.env.MLFLOW_TRACKING_URI = uri;
    expect(await runCommand([config, '--name', 'rp', '--quiet'])).toBe(0);
    const runId = JSON.parse(readFileSync(join(machineA, 'runs', 'rp', 'mlflow.json'), 'utf8')).runId as string;

    // What the run recorded is on the server: provenance.json among its files, checksums as tags.
    const run = await getRun(uri, runId);
    expect(tag(run, 'ambiqa.data.dataset.sha256')).toBe(sha256Path(data));
    expect(tag(run, 'ambiqa.uploads')).toMatch(/provenance\.json=[0-9a-f]{64}/);
    expect(await listArtifacts(uri, runId)).toContain('provenance.json');

    process.env.AMBIQA_ARTIFACTS_DIR = machineB;
    const { code, out } = await command([runId, '--allow-different', 'commit', '--quiet']);
    expect(out).toContain('5/5 outputs identical');
    expect(code).toBe(0);
    expect(existsSync(join(machineB, 'reproductions', '.mlflow', runId, 'provenance.json'))).toBe(true);
  }, 240_000);

  it('exits 6 when an endpoint answers differently with --live, 0 when replayed from the cache; refuses a bad --allow-different', async () => {
    server.replyFor = () => 'In 1990.';
    const config = writeYaml(join(dir, 'ep.yaml'), {
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'loopback', cache: { path: join(dir, 'ep-cache.sqlite') } },
      metrics: ['str_em'],
      tracking: { enabled: false },
    });
    process.env.AMBIQA_ARTIFACTS_DIR = machineA;
    expect(await runCommand([config, '--name', 'ep', '--quiet', '--skip-preflight'])).toBe(0);
    const runDir = join(machineA, 'runs', 'ep');

    server.replyFor = () => 'In 1999.';
    const replayed = await command([runDir, '--allow-different', 'commit', '--quiet']);
    expect(replayed.out).toContain('5/5 outputs identical');
    expect(replayed.code).toBe(0);

    const live = await command([runDir, '--allow-different', 'commit', '--live', '--quiet']);
    expect(live.out).toContain('0/5 outputs identical (5 changed)');
    expect(live.out).toMatch(/q00: changed output: recorded "In 1990\.", here "In 1999\."/);
    expect(live.out).toMatch(/str_em: recorded \d+\.\d, here \d+\.\d, paired Δ/);
    expect(live.code).toBe(6);

    await expect(reproduceCommand([runDir, '--allow-different', 'modle'])).rejects.toThrow(AmbiqaError);
  }, 240_000);
});
