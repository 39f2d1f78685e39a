import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { venvDir } from '../../src/config/paths';
import { describeError } from '../../src/errors';
import { MlflowClient } from '../../src/tracking/client';
import { mlflowExecutable, resolveTrackingUri, startLocalServer } from '../../src/tracking/server';
import { tempDir, uniqueName } from './helpers';

const hasVenv = existsSync(mlflowExecutable(venvDir()));
if (!hasVenv) console.warn(`[server tests] skipped: ${mlflowExecutable(venvDir())} is missing (run \`npx ambiqa setup\` or set AMBIQA_VENV_DIR)`);

describe('local MLflow server', () => {
  it('explains a missing venv and how to get one', async () => {
    const error = await startLocalServer({ venv: join(tempDir(), 'no-venv') }).catch((e: unknown) => e);
    const text = describeError(error);
    expect(text).toMatch(/MLflow is not installed: .*no-venv\/bin\/mlflow does not exist/);
    expect(text).toContain('npx ambiqa setup');
    expect(text).toContain('MLFLOW_TRACKING_URI');
  });

  it('uses MLFLOW_TRACKING_URI as given, without starting anything', async () => {
    const saved = process.env.MLFLOW_TRACKING_URI;
    process.env.MLFLOW_TRACKING_URI = 'http://mlflow.example:5000/';
    try {
      expect(await resolveTrackingUri()).toEqual({ uri: 'http://mlflow.example:5000', source: 'env' });
    } finally {
      if (saved === undefined) delete process.env.MLFLOW_TRACKING_URI;
      else process.env.MLFLOW_TRACKING_URI = saved;
    }
  });

  it.skipIf(!hasVenv)(
    'starts from the venv with its store under artifacts/mlflow, serves artifacts, and dies with its parent even on SIGKILL',
    async () => {
      const artifacts = tempDir();
      const env: NodeJS.ProcessEnv = { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts, AMBIQA_VENV_DIR: venvDir() };
      delete env.MLFLOW_TRACKING_URI;
      const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'tracking', 'fixtures', 'start-server.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const uri = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]) as string);
        });
        child.on('exit', (code) => reject(new Error(`fixture exited ${code}: ${stderr}`)));
      });
      expect(uri).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stderr).toContain(`MLflow UI: ${uri}`);

      const client = new MlflowClient(uri);
      const experimentId = await client.getOrCreateExperiment(uniqueName('local'));
      const run = await client.createRun({ experimentId, runName: 'local' });
      await client.uploadArtifact(run.info.runId, 'hello.txt', 'hi');
      expect(existsSync(join(artifacts, 'mlflow', 'mlflow.db'))).toBe(true);
      expect(existsSync(join(artifacts, 'mlflow', 'artifacts', experimentId, run.info.runId, 'artifacts', 'hello.txt'))).toBe(true);

      child.kill('SIGKILL');
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && (await client.isHealthy(1000))) await new Promise((r) => setTimeout(r, 500));
      expect(await client.isHealthy(1000)).toBe(false);
    },
    300_000,
  );
});
