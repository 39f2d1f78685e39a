import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { readJsonl } from '../../src/common/jsonl';
import { buildReport } from '../../src/report/build';
import type { Trace } from '../../src/trace/types';
import { writeCorpus, writeHotpot, writeYaml, type CallLine } from './helpers/files';
import { getRun, listArtifacts, metric, param, searchRuns, tag, type RestRun } from './helpers/mlflow';
import { methodCatalog } from '../../src/pipelines/registry';

// A Verify-and-Edit threshold sweep with the scripted provider, the real MiniLM embedder, BM25 and
// the real MLflow server: the structure (one parent, a nested child per threshold) and the cache
// reuse (the n samples drawn once for all five thresholds) are read back through MLflow's REST API
// and the provider's own call log.
const uri = inject('mlflowTrackingUri');
const Q = 4;
const N = 5;

describe.skipIf(!uri && !process.env.CI)('ambiqa sweep (VE threshold, real MLflow)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-sweep-'));
  const experiment = `test-sweep-${Date.now()}`;
  const callLog = join(dir, 'calls.jsonl');
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI };
  let parent: RestRun;
  let children: RestRun[];

  beforeAll(async () => {
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = uri;
    const config = writeYaml(join(dir, 've-threshold.yaml'), {
      dataset: { name: 'hotpotqa-adversarial', path: writeHotpot(dir, Q) },
      pipeline: { name: 'verify-edit', options: { n: N, nShots: 0, verifyShots: 0 } },
      llm: {
        provider: 'scripted',
        // Three different answers cycling over the samples: votes 2/2/1, consistency 0.4.
        cycle: ['Festival is in Paris. So the answer is Paris.', 'It is in Lyon. So the answer is Lyon.', 'It is held in Nice. So the answer is Nice.'],
        replies: {
          've.verifying-question': 'Where is the festival held?',
          've.verifying-answer': 'The festival is held in Paris.',
          've.answer': 'The festival is held in Paris. So the answer is Paris.',
        },
        cache: join(dir, 'cache.sqlite'),
        callLog,
      },
      retriever: { type: 'bm25', corpus: writeCorpus(dir) },
      tracking: { experiment },
      // The reference of the paired deltas: threshold 3 (the default would be the first point).
      sweep: { 'pipeline.options.threshold': [1, 2, 3, 4, 5], reference: 3 },
    });
    expect(await sweepCommand([config, '--quiet'])).toBe(0);
    const runs = await searchRuns(uri, experiment);
    const parents = runs.filter((r) => tag(r, 'ambiqa.sweep.role') === 'parent');
    expect(parents).toHaveLength(1);
    parent = parents[0];
    children = runs
      .filter((r) => tag(r, 'mlflow.parentRunId') === parent.info.run_id)
      .sort((a, b) => Number(param(a, 'pipeline.options.threshold')) - Number(param(b, 'pipeline.options.threshold')));
  }, 300_000);

  afterAll(() => {
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('makes one parent run with a nested, finished child run per threshold', async () => {
    expect(runsOf(children, 'pipeline.options.threshold')).toEqual(['1', '2', '3', '4', '5']);
    expect(children.every((c) => c.info.status === 'FINISHED')).toBe(true);
    expect((await getRun(uri, parent.info.run_id)).info.status).toBe('FINISHED');
    expect(param(parent, 'sweep.pipeline.options.threshold')).toBe('[1,2,3,4,5]');
    expect(param(parent, 'pipeline.options.threshold')).toBeUndefined(); // swept, so not a parent param
    for (const c of children) {
      expect(metric(c, 'n')).toBe(Q);
      expect(await listArtifacts(uri, c.info.run_id)).toEqual(expect.arrayContaining(['results.jsonl', 'traces.jsonl', 'metrics.json', 'config.yaml']));
    }
  });

  it('edits exactly when the votes fall below the threshold', () => {
    const edited = children.map((c) => {
      const runDir = tag(c, 'ambiqa.run_dir')!;
      return readJsonl<Trace>(join(runDir, 'traces.jsonl')).map((t) => (t.decisions as unknown as { edited: boolean }).edited);
    });
    // 2 votes of 5 for the majority: thresholds 1 and 2 keep it, 3..5 edit.
    expect(edited).toEqual([1, 2, 3, 4, 5].map((th) => Array(Q).fill(th > 2)));
  });

  it('draws the n samples once for all five thresholds (shared LLM cache)', () => {
    const ends = readJsonl<CallLine>(callLog).filter((c) => c.event === 'end');
    const byPurpose = (p: string) => ends.filter((c) => c.purpose === p).length;
    expect(byPurpose('ve.cot')).toBe(Q * N); // not 5 × Q × N
    // MLflow says the same: the first threshold paid for every sample, the others replayed them.
    expect(metric(children[0], 'cache_hits')).toBe(0);
    for (const c of children.slice(1)) expect(metric(c, 'cache_hits')).toBeGreaterThanOrEqual(Q * N);
    // The edit calls are paid once too (threshold 3), and replayed at 4 and 5.
    const editCalls = ends.filter((c) => c.purpose !== 've.cot').length;
    expect(editCalls).toBeGreaterThan(0);
    expect(metric(children[3], 'cache_hits')).toBe(metric(children[3], 'llm_calls')! - Q + Q * N);
    expect(metric(children[4], 'cache_hits')).toBe(metric(children[3], 'cache_hits'));
  });

  it('puts a summary table on the parent run and in the sweep dir', async () => {
    const sweepDir = tag(parent, 'ambiqa.sweep_dir')!;
    const md = readFileSync(join(sweepDir, 'summary.md'), 'utf8');
    // The header starts with the swept field and the metrics; usage and decision columns follow.
    expect(md).toMatch(/\| threshold \| n \| em \| f1 \|.*\| llm_calls \| cache_hits \|/);
    expect(md.split('\n').filter((l) => /^\| [1-5] \|/.test(l))).toHaveLength(5);
    const csv = readFileSync(join(sweepDir, 'summary.csv'), 'utf8').trim().split('\n');
    expect(csv).toHaveLength(6);
    expect(existsSync(join(sweepDir, 'runs', 'threshold=3', 'results.jsonl'))).toBe(true);
    expect(await listArtifacts(uri, parent.info.run_id)).toEqual(expect.arrayContaining(['summary.md', 'summary.csv', 'summary.json']));
    // One point per threshold in the parent's metric history, at step = the threshold itself (the
    // ablation curve MLflow's chart view draws), each equal to that child's own metric.
    for (const key of ['cache_hits', 'em']) {
      const res = await fetch(`${uri}/api/2.0/mlflow/metrics/get-history?run_id=${parent.info.run_id}&metric_key=${key}`);
      const history = ((await res.json()) as { metrics: Array<{ step: number; value: number }> }).metrics;
      expect(history.map((m) => m.step).sort()).toEqual([1, 2, 3, 4, 5]);
      for (const c of children) {
        const threshold = Number(param(c, 'pipeline.options.threshold'));
        expect(tag(c, 'ambiqa.sweep.pipeline.options.threshold')).toBe(String(threshold));
        expect(history.find((m) => m.step === threshold)?.value).toBe(metric(c, key));
      }
    }
    expect(tag(parent, 'ambiqa.sweep.step')).toBe('pipeline.options.threshold');
  });

  it('speaks in paired deltas against the reference point: summary, comparison file and parent metrics', async () => {
    const sweepDir = tag(parent, 'ambiqa.sweep_dir')!;
    const md = readFileSync(join(sweepDir, 'summary.md'), 'utf8');
    expect(md).toContain('Δ em vs reference [95% CI] p');
    const summary = JSON.parse(readFileSync(join(sweepDir, 'summary.json'), 'utf8')) as Array<{ label: string; reference?: boolean; paired?: Array<{ metric: string; n: number; meanDelta: number; baseline: string }> }>;
    expect(summary.filter((r) => r.reference).map((r) => r.label)).toEqual(['threshold=3']);
    for (const row of summary.filter((r) => !r.reference)) {
      const em = row.paired!.find((p) => p.metric === 'em')!;
      expect(em.n).toBe(Q);
      expect(em.baseline).toMatch(/threshold=3$/);
    }
    expect(md.split('\n').find((l) => /^\| 3 \|/.test(l))).toContain('reference');
    expect(existsSync(join(sweepDir, 'comparison.json'))).toBe(true);
    // The sweep's report shows the deltas beside each point's values.
    const report = buildReport(sweepDir, { methods: methodCatalog() }).html;
    expect(report).toContain('<th class="num">Δ em vs reference</th>');
    expect(report).toContain('<td class="num note">reference</td>');
    expect(await listArtifacts(uri, parent.info.run_id)).toEqual(expect.arrayContaining(['comparison.json', 'comparison.html']));
    // Every question is in every point, so each point's paired mean delta is the difference of
    // the two children's own means; the reference is 0 with a zero-width band.
    const reference = children[2];
    for (const key of ['delta.em', 'delta.em.ci_low', 'delta.em.ci_high']) {
      const res = await fetch(`${uri}/api/2.0/mlflow/metrics/get-history?run_id=${parent.info.run_id}&metric_key=${key}`);
      const history = ((await res.json()) as { metrics: Array<{ step: number; value: number }> }).metrics;
      expect(history.map((m) => m.step).sort()).toEqual([1, 2, 3, 4, 5]);
      expect(history.find((m) => m.step === 3)?.value).toBe(0);
      if (key === 'delta.em') {
        for (const c of children) {
          const step = Number(param(c, 'pipeline.options.threshold'));
          expect(history.find((m) => m.step === step)?.value).toBeCloseTo(metric(c, 'em')! - metric(reference, 'em')!, 9);
        }
      }
    }
  });
});

function runsOf(runs: RestRun[], key: string): Array<string | undefined> {
  return runs.map((r) => param(r, key));
}
