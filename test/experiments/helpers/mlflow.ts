/**
 * Read-only views of the real MLflow server through its REST API, for assertions. Deliberately
 * not ambiqa's own client, so that what the tests see is what any MLflow user would see.
 */
export interface RestRun {
  info: { run_id: string; run_name: string; status: string; experiment_id: string };
  data: { params?: Array<{ key: string; value: string }>; tags?: Array<{ key: string; value: string }>; metrics?: Array<{ key: string; value: number; step: number }> };
}

async function call<T>(uri: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${uri}/api/2.0/mlflow/${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function experimentId(uri: string, name: string): Promise<string> {
  const r = await call<{ experiment: { experiment_id: string } }>(uri, `experiments/get-by-name?experiment_name=${encodeURIComponent(name)}`);
  return r.experiment.experiment_id;
}

export async function searchRuns(uri: string, experiment: string, filter = ''): Promise<RestRun[]> {
  const id = await experimentId(uri, experiment);
  const r = await call<{ runs?: RestRun[] }>(uri, 'runs/search', { experiment_ids: [id], filter, max_results: 1000 });
  return r.runs ?? [];
}

export async function getRun(uri: string, runId: string): Promise<RestRun> {
  return (await call<{ run: RestRun }>(uri, `runs/get?run_id=${runId}`)).run;
}

export async function listArtifacts(uri: string, runId: string): Promise<string[]> {
  const r = await call<{ files?: Array<{ path: string }> }>(uri, `artifacts/list?run_id=${runId}`);
  return (r.files ?? []).map((f) => f.path);
}

export function tag(run: RestRun, key: string): string | undefined {
  return run.data.tags?.find((t) => t.key === key)?.value;
}

export function metric(run: RestRun, key: string): number | undefined {
  return run.data.metrics?.find((m) => m.key === key)?.value;
}

export function param(run: RestRun, key: string): string | undefined {
  return run.data.params?.find((p) => p.key === key)?.value;
}
