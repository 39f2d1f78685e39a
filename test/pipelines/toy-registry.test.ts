import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  buildReport,
  checkConfig,
  definePipeline,
  examplesDir,
  pipelineNames,
  registerPipeline,
  run,
  score,
  TraceRecorder,
  unloadModels,
  type ExperimentInput,
  type Pipeline,
  type PipelineContext,
} from '../../src/index';

/**
 * Issue 13 "one place per extension": a pipeline defined here, outside src/pipelines, joins the
 * registry with one call and then runs like a built-in one through the public entry: an
 * in-process `run` (scripted model, no MLflow), `score` from the run directory, and the report.
 */

// What a notebook writes: an options schema, a pipeline returning its answer and a trace, an entry.
const toyOptionsSchema = z.strictObject({
  prefix: z.string().default('').describe('text put before the model reply'),
  maxTokens: z.int().min(1).max(64).default(16),
});

class ToyPipeline implements Pipeline {
  readonly name = 'toy-echo';
  constructor(readonly options: z.output<typeof toyOptionsSchema>) {}
  async answer(example: Parameters<Pipeline['answer']>[0], ctx: PipelineContext) {
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...this.options };
    const result = await rec.llm.generate({ purpose: 'toy.answer', prompt: `Answer briefly: ${example.question}`, maxTokens: this.options.maxTokens, temperature: 0 });
    const output = `${this.options.prefix}${result.completions[0]!.text.trim()}`;
    return { output, trace: rec.finish({ kind: 'baseline', passageIds: [] }, output) };
  }
}

// Typed configs for the registered name (what a notebook may add; without it the config still runs).
declare module 'ambiqa' {
  interface RegisteredPipelineOptions {
    'toy-echo': z.input<typeof toyOptionsSchema>;
    'toy-retrieving': z.input<typeof toyOptionsSchema>;
    'toy-graded': z.input<typeof toyOptionsSchema>;
  }
}

const toyEntry = definePipeline({
  name: 'toy-echo',
  description: 'test pipeline: one call, the reply with a prefix',
  optionsSchema: toyOptionsSchema,
  needs: { retriever: false, embedder: false },
  create: (options) => new ToyPipeline(options),
});

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-toy-registry-'));
const before = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };

// The reply names two of the three World Cup winners of the first mini-ASQA question, and none of the others' answers.
const REPLY = 'Argentina and Spain';

function config(options: Record<string, unknown>, extra: Partial<ExperimentInput> = {}): ExperimentInput {
  // `options` is untyped on purpose: some tests hand in bad options to see them refused.
  return {
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json') },
    pipeline: { name: 'toy-echo', options },
    llm: { provider: 'scripted', replies: { 'toy.answer': REPLY }, model: 'scripted-toy', cache: join(dir, 'llm-cache.sqlite') },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
    ...extra,
  };
}

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
});
afterAll(async () => {
  await unloadModels();
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', before.artifacts], ['AMBIQA_TRACKING', before.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('a pipeline registered from outside src/pipelines', () => {
  it('is unknown until registered, then listed and its options checked like a built-in one', () => {
    expect(() => checkConfig(config({}))).toThrow(/pipeline\.name: unknown pipeline "toy-echo"/);
    registerPipeline(toyEntry);
    expect(pipelineNames).toContain('toy-echo');
    expect(() => checkConfig(config({ prefix: 3 }))).toThrow(/pipeline\.options\.prefix/);
    expect(() => checkConfig(config({ shout: true }))).toThrow(/shout/);
    expect(checkConfig(config({ prefix: '> ' })).pipeline).toEqual({ name: 'toy-echo', options: { prefix: '> ', maxTokens: 16 } });
  });

  it('its needs drive config validation: a retriever-needing entry without retriever: is refused', () => {
    registerPipeline({ ...toyEntry, name: 'toy-retrieving', needs: { retriever: true, embedder: false } });
    expect(() => checkConfig({ ...config({}), pipeline: { name: 'toy-retrieving' } })).toThrow(/retriever: pipeline toy-retrieving needs a retriever/);
  });

  it('refuses a built-in name and a name unfit for a run directory', () => {
    expect(() => registerPipeline({ ...toyEntry, name: 'toc' })).toThrow(/"toc" is a built-in pipeline/);
    expect(() => registerPipeline({ ...toyEntry, name: 'Toy Echo' })).toThrow(/invalid pipeline name "Toy Echo"/);
  });

  it('runs through run, score and the report', async () => {
    registerPipeline(toyEntry);
    const done = await run(config({ prefix: 'Toy: ' }), { name: 'toy-run' });
    expect(done.status).toBe('FINISHED');

    // results.jsonl holds the toy's answers: the scripted reply behind the configured prefix.
    const lines = readFileSync(join(done.dir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; output: string; scores: Record<string, { value: number | null }> });
    expect(lines).toHaveLength(6);
    for (const line of lines) expect(line.output).toBe(`Toy: ${REPLY}`);
    // STR-EM: the share of a question's interpretations whose short answer appears in the output.
    const byId = new Map(lines.map((l) => [l.id, l.scores.str_em!.value]));
    expect(byId.get('demo-worldcup')).toBeCloseTo((2 / 3) * 100, 6);
    for (const [id, value] of byId) if (id !== 'demo-worldcup') expect(value).toBe(0);
    expect(done.traces.every((t) => t.pipeline === 'toy-echo' && t.llmCalls.length === 1 && t.llmCalls[0]!.purpose === 'toy.answer')).toBe(true);

    // score: re-scored from the run directory, with another metric too.
    const scored = await score('toy-run', { metrics: ['str_em', 'rougeLsum'] });
    expect(scored.perQuestion.get('demo-worldcup')!.str_em).toBeCloseTo((2 / 3) * 100, 6);
    expect(scored.aggregate.str_em!.mean).toBeCloseTo(((2 / 3) * 100) / 6, 6);
    expect(scored.aggregate.rougeLsum!.mean).toBeGreaterThan(0);

    // The report names the pipeline and shows its answers.
    const report = buildReport(done.dir);
    expect(report.html).toContain('toy-echo');
    expect(report.html).toContain(`Toy: ${REPLY}`);
  });

  it('with a method plugin, gets judge diagnostics, decision statistics and figures like a built-in one', async () => {
    // A toy that grades its own answer: P(yes) from how long the reply is, written into its decisions.
    class GradedToy implements Pipeline {
      readonly name = 'toy-graded';
      private readonly echo: ToyPipeline;
      constructor(options: z.output<typeof toyOptionsSchema>) {
        this.echo = new ToyPipeline(options);
      }
      async answer(example: Parameters<Pipeline['answer']>[0], ctx: PipelineContext) {
        const out = await this.echo.answer(example, ctx);
        const p = example.id === 'demo-worldcup' ? 0.9 : 0.2;
        // It hands its P over as the answer's confidence too: the results row keeps it.
        return { ...out, confidence: p, trace: { ...out.trace, pipeline: this.name, decisions: { kind: 'toy-graded', p } as unknown as typeof out.trace.decisions } };
      }
    }
    const pOf = (t: { decisions: unknown }) => (t.decisions as { p: number }).p;
    registerPipeline(
      definePipeline({
        name: 'toy-graded',
        description: 'test pipeline with its own judge, statistic and figure',
        optionsSchema: toyOptionsSchema,
        needs: { retriever: false, embedder: false },
        create: (options) => new GradedToy(options),
        method: {
          kind: 'toy-graded',
          analysis: {
            judges: [{ purpose: 'toy.check', labels: ['Yes', 'No'], silverLabel: 'the question is about the World Cup' }],
            labelJudgments: (trace, example) => [{ purpose: 'toy.check', p: pOf(trace), label: example.question.includes('World Cup') }],
            statistics: (traces) => ({ decision_toy_p: traces.reduce((sum, t) => sum + pOf(t), 0) / traces.length }),
          },
          figures: {
            forRun: (data) => ({
              figures: [{ name: 'toy-p', title: 'Toy P per question', build: () => ({ data: [{ type: 'bar', y: data.traces.map(pOf) }], layout: {} }) }],
            }),
          },
        },
      }),
    );
    const done = await run({ ...config({}), pipeline: { name: 'toy-graded' } }, { name: 'toy-graded-run' });
    expect(done.status).toBe('FINISHED');
    const metrics = JSON.parse(readFileSync(join(done.dir, 'metrics.json'), 'utf8')) as {
      decisions: Record<string, number>;
      judges: Record<string, { silverLabel: string; judgments: number; positives: number; auc: number }>;
    };
    // One World Cup question of six at 0.9, five at 0.2: the statistic is the toy's own mean.
    expect(metrics.decisions.decision_toy_p).toBeCloseTo((0.9 + 5 * 0.2) / 6, 9);
    const judge = metrics.judges['toy.check']!;
    expect(judge.silverLabel).toBe('the question is about the World Cup');
    expect(judge.judgments).toBe(6);
    expect(judge.positives).toBe(1);
    expect(judge.auc).toBe(1);
    const rows = readFileSync(join(done.dir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; confidence?: number; answerLogprob?: number });
    expect(rows.map((r) => [r.id, r.confidence])).toEqual(rows.map((r) => [r.id, r.id === 'demo-worldcup' ? 0.9 : 0.2]));
    expect(rows.every((r) => r.answerLogprob === undefined)).toBe(true);
    const report = buildReport(done.dir);
    expect(report.html).toContain('Toy P per question');
    expect(report.html).toContain('Judge reliability: toy.check');
  });
});
