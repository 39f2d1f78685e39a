import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { readJsonl } from '../../src/common/jsonl';
import { buildReport } from '../../src/report/build';
import type { ExampleResult, RunMetrics } from '../../src/run-files';
import { writeYaml } from './helpers/files';
import { getRun, metric } from './helpers/mlflow';
import { methodCatalog } from '../../src/pipelines/registry';

// `ambiqa run` of ToC with a scripted model, through the real CLI, composer and MLflow server:
// every question's tree has one node whose answer is a gold DQ answer and one whose answer is
// not, and the judge says "True" to all of them. The judge cannot separate, and the run says so
// in metrics.json, in MLflow metrics, in its closing lines and in its report's figures.
const uri = inject('mlflowTrackingUri');

/** ASQA-layout questions that all share the same two gold DQ answers (1990 and 2000). */
function writeData(dir: string, n: number): { data: string; corpus: string } {
  const dev: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    dev[`q${String(i).padStart(2, '0')}`] = {
      ambiguous_question: `When did event ${i} happen?`,
      qa_pairs: [
        { question: `When did event ${i} first happen?`, short_answers: ['1990'], context: `Event ${i} first happened in 1990.`, wikipage: `Event ${i}` },
        { question: `When did event ${i} last happen?`, short_answers: ['2000'], context: `Event ${i} last happened in 2000.`, wikipage: `Event ${i}` },
      ],
      wikipages: [{ title: `Event ${i}`, url: '' }],
      annotations: [{ long_answer: `Event ${i} first happened in 1990 and last happened in 2000.`, knowledge: [] }],
    };
  }
  const data = join(dir, 'asqa.json');
  writeFileSync(data, JSON.stringify({ dev }));
  const corpus = join(dir, 'corpus.jsonl');
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ id: `p${i}`, title: `Event ${i}`, text: `Event ${i} first happened in 1990 and last happened in 2000.` }));
  writeFileSync(corpus, lines.join('\n') + '\n');
  return { data, corpus };
}

describe.skipIf(!uri && !process.env.CI)('judge diagnostics of a ToC run (real MLflow)', () => {
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI, png: process.env.AMBIQA_FIGURE_PNG };
  afterAll(() => {
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri], ['AMBIQA_FIGURE_PNG', saved.png]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('metrics.json judges, judge.toc.verify.* MLflow metrics, the closing line and the report figures', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judges-'));
    const experiment = `test-judges-${Date.now()}`;
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = uri;
    process.env.AMBIQA_FIGURE_PNG = '0';
    const { data, corpus } = writeData(dir, 12);
    const config = writeYaml(join(dir, 'toc-judges.yaml'), {
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'toc', options: { nShots: 0, maxNodes: 4, maxDepth: 1, nPassages: 1, pruning: true } },
      llm: {
        provider: 'scripted',
        replies: {
          'toc.rac': 'DQ 1: When did it first happen? DA 1: 1990\nDQ 2: When did it happen in the old calendar? DA 2: 1850',
          'toc.verify': 'True',
          'toc.answer': 'It first happened in 1990.',
        },
        cache: join(dir, 'cache.sqlite'),
      },
      retriever: { type: 'bm25', corpus },
      metrics: ['str_em'],
      tracking: { experiment },
    });
    const printed: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(args.join(' ')));
    try {
      expect(await runCommand([config, '--quiet'])).toBe(0);
    } finally {
      log.mockRestore();
    }
    const runDir = join(dir, 'artifacts', 'runs', 'toc-judges');

    // Each result carries its labelled judgments: the 1990 node right, the 1850 node wrong.
    const results = readJsonl<ExampleResult>(join(runDir, 'results.jsonl'));
    expect(results).toHaveLength(12);
    for (const r of results) {
      expect(r.judgments?.map((j) => [j.purpose, j.p, j.label])).toEqual([
        ['toc.verify', 1, true],
        ['toc.verify', 1, false],
      ]);
    }

    const metrics = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')) as RunMetrics;
    const d = metrics.judges!['toc.verify'];
    expect(d).toMatchObject({ judgments: 24, labelled: 24, positives: 12, negatives: 12, auc: 0.5, aucCiLow: 0.5, aucCiHigh: 0.5, brier: 0.5, shareAtLeastHalf: 1, separates: false });
    expect(d.verdict).toContain('so a threshold sweep of this judge cannot show an effect');

    // The closing lines say so.
    const closing = printed.join('\n');
    expect(closing).toContain(`judge ${d.verdict} (24 of 24 judgments labelled, Brier 0.500)`);

    // MLflow has the metrics.
    const runId = JSON.parse(readFileSync(join(runDir, 'mlflow.json'), 'utf8')).runId as string;
    const run = await getRun(uri, runId);
    expect(metric(run, 'judge.toc.verify.auc')).toBe(0.5);
    expect(metric(run, 'judge.toc.verify.auc_ci_low')).toBe(0.5);
    expect(metric(run, 'judge.toc.verify.auc_ci_high')).toBe(0.5);
    expect(metric(run, 'judge.toc.verify.brier')).toBe(0.5);
    expect(metric(run, 'judge.toc.verify.labelled')).toBe(24);
    expect(metric(run, 'judge.toc.verify.judgments')).toBe(24);
    expect(metric(run, 'judge.toc.verify.mean_p_pos')).toBe(1);
    expect(metric(run, 'judge.toc.verify.mean_p_neg')).toBe(1);
    expect(metric(run, 'judge.toc.verify.share_ge_half')).toBe(1);
    expect(metric(run, 'judge.toc.verify.separates')).toBe(0);

    // The report of the run shows the reliability diagram and the histogram, with the verdict.
    const report = buildReport(runDir, { methods: methodCatalog() });
    const names = report.figures.figures.map((f) => f.name);
    expect(names).toContain('judge-reliability-toc-verify');
    expect(names).toContain('judge-p-histogram-toc-verify');
    expect(report.html).toContain('id="fig-judge-reliability-toc-verify"');
    expect(report.html).toContain('<h2>Judges</h2>');
    expect(report.html).toContain('a threshold sweep of this judge cannot show an effect');

    // Two shards merged: the judges are recomputed over all questions, equal to the whole run's.
    for (const i of [0, 1]) expect(await runCommand([config, '--shard', `${i}/2`, '--no-tracking', '--quiet'])).toBe(0);
    const shards = [0, 1].map((i) => join(dir, 'artifacts', 'runs', `toc-judges.shard-${i}of2`));
    const shardJudges = shards.map((s) => (JSON.parse(readFileSync(join(s, 'metrics.json'), 'utf8')) as RunMetrics).judges!['toc.verify'].judgments);
    expect(shardJudges.reduce((a, b) => a + b, 0)).toBe(24);
    expect(await mergeCommand([...shards, '--name', 'merged', '--no-tracking'])).toBe(0);
    const merged = JSON.parse(readFileSync(join(dir, 'artifacts', 'runs', 'merged', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(merged.judges).toEqual(metrics.judges);
  }, 240_000);
});
