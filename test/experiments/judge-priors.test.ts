import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { calibrationPool, readJudgePriors } from '../../src/experiments/judge-priors';
import { mergeRuns } from '../../src/experiments/merge';
import { runExperiment } from '../../src/experiments/runner';
import { estimateBatchPriors, sampleCalibrationDemos, type JudgePriors } from '../../src/pipelines/common/batch-prior';
import { judgeCalibrated } from '../../src/pipelines/common/judge';
import { FixedDemoSelector } from '../../src/pipelines/demos';
import type { Demo, Pipeline } from '../../src/pipelines/types';
import type { RunMetrics } from '../../src/run-files';
import { TraceRecorder } from '../../src/trace/recorder';
import type { Trace } from '../../src/trace/types';
import { readJsonl } from '../../src/common/jsonl';
import { scriptedLlm } from '../pipelines/fakes';
import { baseConfig, exactMatchComponents, makeExamples } from './helpers/fixtures';
import { methodCatalog } from '../../src/pipelines/registry';

// Issue 26 point 4: the batch prior is judged once per run dir, before the first question, stored
// with the run, and read back by resumes and merges.
const root = mkdtempSync(join(tmpdir(), 'ambiqa-priors-'));
const examples = makeExamples(4);
// The pool holds the evaluated questions too (ASQA dev is its own leave-one-out pool): they must not be sampled.
const pool: Demo[] = [
  ...examples.map((e) => ({ id: e.id, question: e.question, qaPairs: [{ question: e.question, answer: 'x' }] })),
  ...['a', 'b', 'c'].map((k) => ({ id: `pool-${k}`, question: `Pool question ${k}?`, qaPairs: [{ question: `Pool question ${k}?`, answer: `gold ${k}` }] })),
];

/** A toy pipeline with one calibrated judgment per question; counts its calibrate() calls. */
function calibratingPipeline(counter: { calibrations: number; sampled: string[][] }): Pipeline {
  return {
    name: 'closed-book',
    async calibrate(candidates, ctx) {
      counter.calibrations += 1;
      const sample = sampleCalibrationDemos(candidates, 2, 0);
      counter.sampled.push(sample.map((d) => d.id));
      const items = sample.map((d) => ({ purpose: 'test.judge', labels: ['Yes', 'No'], messages: [{ role: 'user' as const, content: `calibrate ${d.question}` }] }));
      return estimateBatchPriors('closed-book', sample, 0, items, ctx);
    },
    async answer(example, ctx) {
      const rec = new TraceRecorder('closed-book', example, ctx.llm);
      const v = await judgeCalibrated(rec, ctx, {
        purpose: 'test.judge',
        labels: ['Yes', 'No'],
        messages: [{ role: 'user', content: `judge ${example.question}` }],
        contentFree: () => ({ messages: [] }),
        calibration: 'batch',
        fallback: 'No',
      });
      const output = v.p >= 0.5 ? 'yes' : 'no';
      return { output, answer: output, trace: rec.finish({ kind: 'baseline', passageIds: [] }, output, output) };
    },
  };
}

function components(counter: { calibrations: number; sampled: string[][] }, calibrationP = 0.2) {
  // Calibration inputs get `calibrationP`; every question gets 0.2, so with prior 0.2 it calibrates to 0.5.
  const { llm } = scriptedLlm({}, { 'test.judge.calibration': calibrationP, 'test.judge': 0.2 });
  const c = exactMatchComponents(examples, calibratingPipeline(counter), llm);
  return { ...c, context: { ...c.context, demos: new FixedDemoSelector(pool) } };
}

describe('judge-priors.json', () => {
  it('never samples an evaluated question', () => {
    expect(calibrationPool(pool, examples).map((d) => d.id)).toEqual(['pool-a', 'pool-b', 'pool-c']);
  });

  it('is computed once before the questions, counted in metrics.json, and reused on resume', async () => {
    const dir = join(root, 'run');
    const counter = { calibrations: 0, sampled: [] as string[][] };
    const first = await runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, components: components(counter), tracking: null, signal: undefined });
    expect(first.status).toBe('FINISHED');
    expect(counter.calibrations).toBe(1);
    expect(counter.sampled[0]!.every((id) => id.startsWith('pool-'))).toBe(true);
    const stored = readJudgePriors(dir)!;
    expect(stored.purposes['test.judge']).toEqual({ labels: ['Yes', 'No'], prior: [0.2, 0.8], judgments: 2 });
    expect(stored.calls.map((c) => c.purpose)).toEqual(['test.judge.calibration', 'test.judge.calibration']);
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as RunMetrics;
    expect(metrics.usage.calibration_llm_calls).toBe(2);
    expect(metrics.usage.llm_calls).toBe(4); // one judgment per question; calibration counted apart
    expect(metrics.settings).toMatchObject({ 'judge.calibration': 'batch', 'judge.test.judge.prior': '0.2000' });
    const traces = readJsonl<Trace>(join(dir, 'traces.jsonl'));
    expect(traces.map((t) => t.llmCalls[0]!.judge!.calibration!.p)).toEqual([0.5, 0.5, 0.5, 0.5]);

    // A resume with a judge that would now give another prior still divides by the stored one.
    const resumed = await runExperiment({
      config: baseConfig({ concurrency: 1 }),
      runDir: dir,
      resume: true,
      components: components(counter, 0.9),
      tracking: null,
    });
    expect(resumed.status).toBe('FINISHED');
    expect(counter.calibrations).toBe(1);
    expect(readJudgePriors(dir)).toEqual(stored);
  });

  it('a damaged file is one error naming it', async () => {
    const dir = join(root, 'damaged');
    const counter = { calibrations: 0, sampled: [] as string[][] };
    await runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, components: components(counter), tracking: null });
    writeFileSync(join(dir, 'judge-priors.json'), '{"method":"batch"}');
    await expect(runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, resume: true, components: components(counter), tracking: null })).rejects.toThrow(
      /judge-priors\.json: /,
    );
  });

  it('merge keeps the shards’ common prior and refuses shards with different ones', async () => {
    const dirs: string[] = [];
    for (const [i, p] of [[0, 0.2], [1, 0.2], [2, 0.3]] as const) {
      const dir = join(root, `shards`, `unit.shard-${i}of3`);
      const counter = { calibrations: 0, sampled: [] as string[][] };
      const config = baseConfig({ concurrency: 1, shard: `${i}/3` } as never);
      await runExperiment({ config, runDir: dir, components: components(counter, p), tracking: null });
      dirs.push(dir);
    }
    const aggregate = exactMatchComponents(examples, calibratingPipeline({ calibrations: 0, sampled: [] }), scriptedLlm({}).llm).aggregate;
    await expect(mergeRuns({ methods: methodCatalog(), dirs, outDir: (n) => join(root, 'merged-bad', n), aggregate, tracking: null })).rejects.toThrow(/batch-calibration priors/);
    // The odd shard rerun with the others' file copied in: it divides by the same prior.
    writeFileSync(join(dirs[2]!, 'judge-priors.json'), readFileSync(join(dirs[0]!, 'judge-priors.json')));
    const merged = await mergeRuns({ methods: methodCatalog(), dirs, outDir: (n) => join(root, 'merged', n), aggregate, tracking: null });
    expect(existsSync(join(merged.dir, 'judge-priors.json'))).toBe(true);
    expect(readJudgePriors(merged.dir)!.purposes).toEqual(readJudgePriors(dirs[0]!)!.purposes);
    expect(merged.metrics.usage.calibration_llm_calls).toBe(6);
    const priors: JudgePriors = readJudgePriors(merged.dir)!;
    expect(priors.method).toBe('batch');
  });
});
