import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A hostile MLflow server on loopback: it answers the few REST calls `merge --from-mlflow` makes
 * (experiments/search, runs/search, runs/get, artifact downloads) with whatever the test planted —
 * run names with `../`, shard tags of any size, artifacts of any size, page tokens that never
 * end. Every request is counted, so a test can tell a bounded loop from one that ran away.
 */
export interface FakeRun {
  runId: string;
  runName: string;
  status?: string;
  tags: Record<string, string>;
  /** File name → bytes, served under the run's artifact root. */
  artifacts: Record<string, Buffer>;
}

export interface FakeMlflow {
  uri: string;
  runs: FakeRun[];
  /** When set, runs/search answers every page with this token (a server whose pages never end). */
  endlessPageToken?: string;
  /** When set, every artifact download answers this many bytes of `x`, streamed. */
  artifactBytes?: number;
  requests: { search: number; artifacts: number };
  close(): Promise<void>;
}

export async function startFakeMlflow(runs: FakeRun[] = []): Promise<FakeMlflow> {
  const state: FakeMlflow = { uri: '', runs, requests: { search: 0, artifacts: 0 }, close: async () => undefined };
  const raw = (run: FakeRun) => ({
    info: {
      run_id: run.runId,
      run_name: run.runName,
      experiment_id: '1',
      status: run.status ?? 'FINISHED',
      start_time: 1,
      artifact_uri: `mlflow-artifacts:/1/${run.runId}/artifacts`,
      lifecycle_stage: 'active',
    },
    data: { tags: Object.entries(run.tags).map(([key, value]) => ({ key, value })) },
  });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (value: unknown) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(value));
    };
    req.resume();
    if (url.pathname === '/health') return res.end('OK');
    if (url.pathname === '/api/2.0/mlflow/experiments/search') {
      return json({ experiments: [{ experiment_id: '1', name: 'hostile', artifact_location: 'mlflow-artifacts:/1', lifecycle_stage: 'active' }] });
    }
    if (url.pathname === '/api/2.0/mlflow/experiments/get') {
      return json({ experiment: { experiment_id: '1', name: 'hostile', artifact_location: 'mlflow-artifacts:/1', lifecycle_stage: 'active' } });
    }
    if (url.pathname === '/api/2.0/mlflow/runs/search') {
      state.requests.search++;
      if (state.endlessPageToken !== undefined) return json({ runs: [], next_page_token: `${state.endlessPageToken}-${state.requests.search}` });
      return json({ runs: state.runs.map(raw) });
    }
    if (url.pathname === '/api/2.0/mlflow/runs/get') {
      const run = state.runs.find((r) => r.runId === url.searchParams.get('run_id'));
      if (!run) {
        res.statusCode = 404;
        return json({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no such run' });
      }
      return json({ run: raw(run) });
    }
    const m = /^\/api\/2\.0\/mlflow-artifacts\/artifacts\/1\/([^/]+)\/artifacts\/(.+)$/.exec(url.pathname);
    if (m) {
      state.requests.artifacts++;
      if (state.artifactBytes !== undefined) {
        // Streamed without a content-length, as a server that lies about nothing but size would.
        let left = state.artifactBytes;
        const chunk = Buffer.alloc(1 << 20, 'x');
        const pump = () => {
          while (left > 0) {
            const piece = chunk.subarray(0, Math.min(chunk.length, left));
            left -= piece.length;
            if (!res.write(piece)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => undefined);
        return pump();
      }
      const run = state.runs.find((r) => r.runId === m[1]);
      const data = run?.artifacts[decodeURIComponent(m[2]!)];
      if (!data) {
        res.statusCode = 404;
        return json({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no such artifact' });
      }
      return res.end(data);
    }
    res.statusCode = 404;
    json({ error_code: 'ENDPOINT_NOT_FOUND', message: url.pathname });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
