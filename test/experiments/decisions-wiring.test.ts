import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunMetrics } from '../../src/run-files';
import { runExperiment } from '../../src/experiments/runner';
import { summaryCsv, summaryMarkdown } from '../../src/experiments/summary';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import type { Pipeline } from '../../src/pipelines/types';
import { renderRunReport } from '../../src/report/render';
import { TraceRecorder } from '../../src/trace/recorder';
import type { Trace } from '../../src/trace/types';
import { readJsonl } from '../../src/common/jsonl';
import { baseConfig, exactMatchComponents, FakeTracking, makeExamples } from './helpers/fixtures';
import { methodCatalog } from '../../src/pipelines/registry';

const root = mkdtempSync(join(tmpdir(), 'ambiqa-decisions-'));

/** A judge-then-answer pipeline: one graded judgment per question, the answer is the verdict. */
const judgingPipeline: Pipeline = {
  name: 'closed-book',
  async answer(example, ctx) {
    const rec = new TraceRecorder('closed-book', example, ctx.llm);
    const j = await rec.llm.judge({ prompt: `Is ${example.question} answerable?`, labels: ['Yes', 'No'], purpose: 'test.judge' });
    const output = j.p >= 0.5 ? 'yes' : 'no';
    return { output, answer: output, trace: rec.finish({ kind: 'baseline', passageIds: [] }, output, output) };
  },
};

describe('decision statistics in the run outputs', () => {
  it('metrics.json, MLflow metrics and the judge_mode param carry them', async () => {
    const dir = join(root, 'run');
    // P(yes) = 0.2 for even items, 0.8 for odd ones (from the item number in the question).
    const provider = new ScriptedProvider(['unused'], 'scripted-model', (request) =>
      Number(/item (\d+)/.exec(request.messages[0].content)?.[1] ?? 0) % 2 === 0 ? 0.2 : 0.8,
    );
    const tracking = new FakeTracking();
    const examples = makeExamples(4);
    await runExperiment({
      config: baseConfig({ concurrency: 1 }),
      runDir: dir,
      components: exactMatchComponents(examples, judgingPipeline, new LlmClient(provider)),
      tracking: async () => tracking,
    });
    const traces = readJsonl<Trace>(join(dir, 'traces.jsonl'));
    const ps = traces.map((t) => t.llmCalls[0].judge!.p);
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics.decisions).toMatchObject({
      decision_parse_failure_rate: 0,
      decision_fallback_rate: 0,
    });
    expect(metrics.decisions!.decision_p_yes_test_judge).toBeCloseTo(ps.reduce((a, b) => a + b, 0) / ps.length);
    expect(metrics.settings?.judge_mode).toBe('probability');
    const run = tracking.runs.get('run-1')!;
    expect(run.metrics.at(-1)!.metrics.decision_p_yes_test_judge).toBeCloseTo(metrics.decisions!.decision_p_yes_test_judge);
    expect(run.params.judge_mode).toBe('probability');

    // The report shows them.
    const html = renderRunReport({ name: 'run', config: {}, results: readJsonl(join(dir, 'results.jsonl')), traces, metrics }, methodCatalog());
    expect(html).toContain('<h2>Decisions</h2>');
    expect(html).toContain('decision_p_yes_test_judge');
  });

  it('a provider without probabilities: judge_mode text, fallback rate 1', async () => {
    const dir = join(root, 'text');
    const provider = new ScriptedProvider(() => 'No.');
    const tracking = new FakeTracking();
    await runExperiment({
      config: baseConfig({ concurrency: 1 }),
      runDir: dir,
      components: exactMatchComponents(makeExamples(2), judgingPipeline, new LlmClient(provider)),
      tracking: async () => tracking,
    });
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics.settings?.judge_mode).toBe('text');
    expect(metrics.decisions!.decision_fallback_rate).toBe(1);
    expect(tracking.runs.get('run-1')!.params.judge_mode).toBe('text');
  });

  it('the sweep summary table has a column per decision statistic', () => {
    const axes = [{ label: 'pruneThreshold', path: 'pipeline.options.pruneThreshold', values: [0.3, 0.7] }];
    const metrics = (prune: number): RunMetrics => ({
      n: 10,
      metrics: { str_em: { mean: 30, ciLow: 20, ciHigh: 40, n: 10 } },
      usage: { llm_calls: 50, prompt_tokens: 1000, completion_tokens: 200, cache_hits: 0, wall_seconds: 2 },
      decisions: { decision_prune_rate: prune, decision_stop_max_nodes: 0.5 },
    });
    const rows = [
      { point: { values: { pruneThreshold: 0.3 } }, runDir: '/r/1', status: 'FINISHED', metrics: metrics(0.1) },
      { point: { values: { pruneThreshold: 0.7 } }, runDir: '/r/2', status: 'FINISHED', metrics: metrics(0.6) },
    ] as never;
    const md = summaryMarkdown(axes as never, rows);
    expect(md.split('\n')[0]).toContain('| str_em | decision_prune_rate | decision_stop_max_nodes | llm_calls');
    expect(md).toContain('| 0.7 | 10 | 30.0 [20.0, 40.0] | 0.600 | 0.500 |');
    const csv = summaryCsv(axes as never, rows).trim().split('\n');
    expect(csv[0]).toContain('str_em_ci_high,decision_prune_rate,decision_stop_max_nodes,llm_calls');
    expect(csv[2]).toContain('40,0.6,0.5,50');
  });
});
