import type { Example } from '../../../src/datasets/types';
import type { ExperimentConfig } from '../../../src/experiments/config';
import { scoreValues, type ExampleResult, type MetricAggregate } from '../../../src/run-files';
import type { RunComponents } from '../../../src/experiments/runner';
import type { LanguageModel } from '../../../src/llm/types';
import type { Pipeline } from '../../../src/pipelines/types';
import { TraceRecorder } from '../../../src/trace/recorder';
import type { ParamValue, RunStatus, RunTracker, StartRunOptions, Tracking } from '../../../src/tracking/types';

/** Small in-test building blocks for runner tests that need no dataset file and no MLflow. */
export function makeExamples(n: number): Example[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `ex-${String(i).padStart(3, '0')}`,
    dataset: 'hotpotqa-adversarial' as const,
    question: `What is item ${i}?`,
    answers: [`answer ${i % 3}`],
    qaPairs: [],
    longAnswers: [],
    passages: [],
  }));
}

/** One LLM call per question (two samples for every third, so n > 1 is covered). */
export function echoPipeline(options: { failOn?: Set<string> } = {}): Pipeline {
  return {
    name: 'closed-book',
    async answer(example, ctx) {
      if (options.failOn?.has(example.id)) throw new Error(`cannot answer ${example.id}`);
      const recorder = new TraceRecorder('closed-book', example, ctx.llm);
      const r = await recorder.llm.generate({
        prompt: `Q: ${example.question}\nA:`,
        purpose: 'closed-book.answer',
        maxTokens: 8,
        n: example.id.endsWith('0') ? 2 : 1,
        temperature: example.id.endsWith('0') ? 0.7 : 0,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      const output = r.completions[0].text;
      return { output, answer: output, trace: recorder.finish({ kind: 'baseline', passageIds: [] }, output, output) };
    },
  };
}

export function exactMatchComponents(examples: Example[], pipeline: Pipeline, llm: LanguageModel): RunComponents {
  return {
    examples,
    pipeline,
    context: { llm },
    score: (example, out) => ({ em: { value: example.answers.includes(out.output.trim()) ? 100 : 0 } }),
    aggregate: (results: ExampleResult[]): Record<string, MetricAggregate> => {
      const values = results.map((r) => scoreValues(r).em ?? 0);
      const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
      return { em: { mean, ciLow: mean, ciHigh: mean, n: values.length } };
    },
  };
}

export function baseConfig(overrides: Partial<ExperimentConfig> = {}): ExperimentConfig {
  return {
    name: 'unit',
    dataset: { name: 'hotpotqa-adversarial', path: '/data/sim_dev.json', split: 'dev', seed: 0 },
    pipeline: { name: 'closed-book', options: { nShots: 0 } },
    // A key where no schema allows one: the runner must still keep it out of every sink.
    llm: { provider: 'scripted', apiKey: 'sk-secret-123' } as unknown as ExperimentConfig['llm'],
    metrics: ['em'],
    tracking: { experiment: 'unit-tests', enabled: true, traces: true, tags: {} },
    concurrency: 3,
    ...overrides,
  };
}

export interface FakeRun {
  runId: string;
  options: StartRunOptions;
  params: Record<string, ParamValue>;
  metrics: Array<{ metrics: Record<string, number>; step?: number }>;
  tags: Record<string, string>;
  artifacts: string[];
  statuses: RunStatus[];
}

/** An in-memory `Tracking` that records what the runner sends, for assertions. */
export class FakeTracking implements Tracking {
  readonly runs = new Map<string, FakeRun>();
  private next = 0;

  async startRun(options: StartRunOptions): Promise<RunTracker> {
    let run = options.resumeRunId ? this.runs.get(options.resumeRunId) : undefined;
    if (options.resumeRunId && !run) throw new Error(`no run ${options.resumeRunId}`);
    if (!run) {
      run = { runId: `run-${++this.next}`, options, params: {}, metrics: [], tags: {}, artifacts: [], statuses: [] };
      this.runs.set(run.runId, run);
    }
    const r = run;
    r.statuses.push('RUNNING');
    Object.assign(r.tags, options.tags ?? {});
    if (options.parentRunId) r.tags['mlflow.parentRunId'] = options.parentRunId;
    return {
      runId: r.runId,
      experimentId: '7',
      async logParams(params) {
        for (const [k, v] of Object.entries(params)) {
          if (k in r.params && r.params[k] !== v) throw new Error(`param ${k} changed`);
          r.params[k] = v;
        }
      },
      async logMetrics(metrics, step) {
        r.metrics.push({ metrics, ...(step !== undefined ? { step } : {}) });
      },
      async setTags(tags) {
        Object.assign(r.tags, tags);
      },
      async logArtifact(path) {
        r.artifacts.push(path);
      },
      async finish(status) {
        r.statuses.push(status);
      },
    };
  }

  runUrl(experimentId: string, runId: string): string {
    return `fake://${experimentId}/${runId}`;
  }
}
