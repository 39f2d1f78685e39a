import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run as scoreCommand } from '../../src/cli/commands/score';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { readJsonl } from '../../src/common/jsonl';
import { readResults, type RunMetrics } from '../../src/run-files';
import { writeAsqa, writeYaml } from './helpers/files';
import { getRun, listArtifacts, metric, searchRuns, tag, type RestRun } from './helpers/mlflow';

// The check: `ambiqa score --run <sweep dir> --metrics <one more>` adds the metric to
// every point's metrics.json and MLflow run, and to the sweep's summary and parent run, without
// any question answered again. An ASQA sweep (closed-book on the scripted provider, two answer
// styles) scored with STR-EM only gets ROUGE-Lsum, which needs no model; read back through
// MLflow's REST API (not ambiqa's client) and the provider's own call log.
const uri = inject('mlflowTrackingUri');
const Q = 3;

describe.skipIf(!uri && !process.env.CI)('ambiqa score --run <sweep> (real MLflow)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-rescore-sweep-'));
  const experiment = `test-rescore-${Date.now()}`;
  const callLog = join(dir, 'calls.jsonl');
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI, tracking: process.env.AMBIQA_TRACKING };
  let sweepDir: string;
  let parentId: string;
  let children: RestRun[];
  let before: { calls: number; children: RestRun[] };

  const childRuns = async (): Promise<RestRun[]> =>
    (await searchRuns(uri, experiment)).filter((r) => tag(r, 'mlflow.parentRunId') === parentId).sort((a, b) => a.info.run_name.localeCompare(b.info.run_name));
  const pointDir = (run: RestRun): string => tag(run, 'ambiqa.run_dir')!;
  const metricsOf = (runDir: string): RunMetrics => JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')) as RunMetrics;

  beforeAll(async () => {
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = uri;
    delete process.env.AMBIQA_TRACKING;
    const config = writeYaml(join(dir, 'styles.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, Q) },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 32 } },
      // The reply depends on the prompt, which the answer style changes: the points differ.
      llm: { provider: 'scripted', cycle: ['Event 0 first happened in 1990.', 'It happened in 2001 and again in 2010.', 'Event 2 first happened in 1992, and last in 2002.'], cache: join(dir, 'cache.sqlite'), callLog },
      metrics: ['str_em'],
      reader: 'none',
      tracking: { experiment },
      sweep: { 'pipeline.options.answerStyle': ['long', 'short'] },
    });
    expect(await sweepCommand([config, '--quiet'])).toBe(0);
    const parents = (await searchRuns(uri, experiment)).filter((r) => tag(r, 'ambiqa.sweep.role') === 'parent');
    expect(parents).toHaveLength(1);
    parentId = parents[0]!.info.run_id;
    sweepDir = tag(parents[0]!, 'ambiqa.sweep_dir')!;
    before = { calls: readJsonl(callLog).length, children: await childRuns() };
    expect(before.children).toHaveLength(2);
    for (const c of before.children) expect(metric(c, 'rougeLsum')).toBeUndefined();

    expect(await scoreCommand(['--run', sweepDir, '--metrics', 'rougeLsum'])).toBe(0);
    children = await childRuns();
  }, 300_000);

  afterAll(() => {
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri], ['AMBIQA_TRACKING', saved.tracking]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('answers no question again: no provider call, the outputs as they were', () => {
    expect(readJsonl(callLog)).toHaveLength(before.calls);
    expect(before.calls).toBe(2 * 2 * Q); // start and end of one call per question and point
  });

  it("adds the metric to every point's rows and metrics.json, with its scoring entry", () => {
    for (const c of children) {
      const runDir = pointDir(c);
      const m = metricsOf(runDir);
      const rows = readResults(join(runDir, 'results.jsonl'));
      expect(rows).toHaveLength(Q);
      for (const r of rows) expect(r.scores.rougeLsum).toMatchObject({ scoredBy: 'score-1' });
      const mean = rows.reduce((s, r) => s + r.scores.rougeLsum!.value!, 0) / Q;
      expect(m.metrics.rougeLsum!.mean).toBeCloseTo(mean, 9);
      expect(m.metrics.str_em).toBeDefined();
      expect(m.scoring).toEqual([expect.objectContaining({ id: 'score-1', metrics: ['rougeLsum'] })]);
    }
    // The two points answered differently, so their ROUGE-Lsum differs: each was scored from its own rows.
    const [a, b] = children.map((c) => metricsOf(pointDir(c)).metrics.rougeLsum!.mean);
    expect(a).not.toBe(b);
  });

  it("updates each point's own MLflow run: the new metric, the scoring tags, the new files, status FINISHED", async () => {
    expect(children.map((c) => c.info.run_id).sort()).toEqual(before.children.map((c) => c.info.run_id).sort());
    for (const [i, c] of children.entries()) {
      const m = metricsOf(pointDir(c));
      expect(c.info.status).toBe('FINISHED');
      expect(metric(c, 'rougeLsum')).toBe(m.metrics.rougeLsum!.mean);
      expect(metric(c, 'rougeLsum_ci_high')).toBe(m.metrics.rougeLsum!.ciHigh);
      expect(metric(c, 'str_em')).toBe(metric(before.children[i]!, 'str_em'));
      expect(tag(c, 'ambiqa.scoring.last')).toBe('score-1');
      expect(JSON.parse(tag(c, 'ambiqa.scoring.score-1')!)).toEqual(m.scoring![0]);
      expect(tag(c, 'ambiqa.uploads')).toMatch(/metrics\.json=[0-9a-f]{64}/);
      // The metrics.json on the server is the rewritten one.
      const res = await fetch(`${uri}/get-artifact?path=metrics.json&run_uuid=${c.info.run_id}`);
      expect(res.ok).toBe(true);
      expect(((await res.json()) as RunMetrics).scoring).toEqual(m.scoring);
    }
  });

  it("writes the sweep's summary again and updates its parent run", async () => {
    const summary = JSON.parse(readFileSync(join(sweepDir, 'summary.json'), 'utf8')) as Array<{ label: string; metrics: RunMetrics; reference?: boolean; paired?: Array<{ metric: string }> }>;
    expect(summary.map((r) => r.label)).toEqual(['answerStyle=long', 'answerStyle=short']);
    for (const row of summary) expect(row.metrics.metrics.rougeLsum).toBeDefined();
    expect(summary[1]!.paired!.map((p) => p.metric)).toContain('rougeLsum');
    expect(readFileSync(join(sweepDir, 'summary.md'), 'utf8')).toContain('rougeLsum');
    expect(existsSync(join(sweepDir, 'comparison.json'))).toBe(true);

    const parent = await getRun(uri, parentId);
    expect(parent.info.status).toBe('FINISHED');
    const scoring = JSON.parse(tag(parent, 'ambiqa.scoring.last')!) as { metrics: string[]; runs: Record<string, string> };
    expect(scoring.metrics).toEqual(['rougeLsum']);
    expect(Object.values(scoring.runs)).toEqual(['score-1', 'score-1']);
    // One rougeLsum point per sweep point in the parent's history (step = point index), each the point's value.
    const res = await fetch(`${uri}/api/2.0/mlflow/metrics/get-history?run_id=${parentId}&metric_key=rougeLsum`);
    const history = ((await res.json()) as { metrics: Array<{ step: number; value: number }> }).metrics;
    expect(history.map((h) => h.step).sort()).toEqual([0, 1]);
    for (const row of summary) {
      const step = row.label === 'answerStyle=long' ? 0 : 1;
      expect(history.find((h) => h.step === step)!.value).toBe(row.metrics.metrics.rougeLsum!.mean);
    }
    expect(await listArtifacts(uri, parentId)).toEqual(expect.arrayContaining(['summary.json', 'summary.md', 'summary.csv']));
  });
});
