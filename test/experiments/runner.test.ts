import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { readJsonl } from '../../src/common/jsonl';
import { scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import { runExperiment } from '../../src/experiments/runner';
import { LlmClient } from '../../src/llm/client';
import { sleep } from '../../src/llm/limiter';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import type { LanguageModelProvider, NormalisedRequest } from '../../src/llm/types';
import type { Trace } from '../../src/trace/types';
import { baseConfig, echoPipeline, exactMatchComponents, FakeTracking, makeExamples } from './helpers/fixtures';

const root = mkdtempSync(join(tmpdir(), 'ambiqa-runner-'));

/** Replies "answer k" from the item number in the prompt, after a delay so runs can be interrupted. */
class SlowScripted implements LanguageModelProvider {
  readonly provider = 'scripted';
  readonly model = 'scripted-model';
  private readonly inner = new ScriptedProvider((request, sampleIndex) => {
    const k = Number(/item (\d+)/.exec(request.messages[0].content)?.[1] ?? 0);
    return `answer ${(k + sampleIndex) % 4}`;
  });
  readonly received = this.inner.received;

  constructor(private readonly delayMs: number) {}

  async doGenerate(request: NormalisedRequest, sampleIndex: number, options: { signal?: AbortSignal }) {
    if (this.delayMs) await sleep(this.delayMs, options.signal);
    return this.inner.doGenerate(request, sampleIndex);
  }
}

function slowScripted(delayMs = 0) {
  return new SlowScripted(delayMs);
}

function client(provider: LanguageModelProvider, cachePath: string): LlmClient {
  return new LlmClient(provider, { cache: { path: cachePath } });
}

function outputs(results: ExampleResult[]) {
  return results.map((r) => ({ id: r.id, output: r.output, metrics: scoreValues(r), index: r.index }));
}

describe('runExperiment', () => {
  it('writes the run dir, aggregates, usage totals, and logs to tracking without secrets', async () => {
    const dir = join(root, 'plain');
    const provider = slowScripted();
    const llm = client(provider, join(root, 'plain-cache.sqlite'));
    const tracking = new FakeTracking();
    const examples = makeExamples(12);
    const outcome = await runExperiment({
      config: baseConfig(),
      runDir: dir,
      components: exactMatchComponents(examples, echoPipeline(), llm),
      tracking: async () => tracking,
    });
    expect(outcome.status).toBe('FINISHED');
    const results = readJsonl<ExampleResult>(join(dir, 'results.jsonl'));
    expect(results.map((r) => r.id)).toEqual(examples.map((e) => e.id)); // evaluation order, despite concurrency 3
    expect(results[1]).toMatchObject({ format: 3, id: 'ex-001', output: 'answer 1', scores: { em: { value: 100 } }, index: 1, target: { answers: ['answer 1'] } });
    expect(results[5]).toMatchObject({ output: 'answer 1', scores: { em: { value: 0 } }, target: { answers: ['answer 2'] } });
    const traces = readJsonl<Trace>(join(dir, 'traces.jsonl'));
    expect(traces.map((t) => t.questionId)).toEqual(results.map((r) => r.id));

    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as RunMetrics;
    const expectedEm = (100 * results.filter((r) => scoreValues(r).em === 100).length) / 12;
    expect(metrics.metrics.em.mean).toBeCloseTo(expectedEm);
    expect(metrics.n).toBe(12);
    expect(metrics.usage.llm_calls).toBe(12);
    expect(metrics.usage.prompt_tokens).toBe(traces.reduce((s, t) => s + t.summary.promptTokens!, 0));
    expect(metrics.usage.prompt_tokens).toBeGreaterThan(0);
    expect(metrics.usage.cache_hits).toBe(0);
    expect(metrics.usage.wall_seconds).toBeGreaterThan(0);
    expect(provider.received.length).toBe(12 + 2); // ex-000 and ex-010 draw two samples

    const config = YAML.parse(readFileSync(join(dir, 'config.yaml'), 'utf8'));
    expect(config.llm.apiKey).toBe('[redacted]');
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).not.toContain('sk-secret-123');

    const mlflow = JSON.parse(readFileSync(join(dir, 'mlflow.json'), 'utf8'));
    expect(mlflow).toMatchObject({ experimentName: 'unit-tests', experimentId: '7', runId: 'run-1' });
    const run = tracking.runs.get('run-1')!;
    expect(run.params['pipeline.name']).toBe('closed-book');
    expect(run.params['pipeline.options.nShots']).toBe(0);
    expect(run.params['llm.apiKey']).toBe('[redacted]');
    expect(JSON.stringify(run)).not.toContain('sk-secret-123');
    expect(run.metrics.at(-1)!.metrics).toMatchObject({ em: metrics.metrics.em.mean, llm_calls: 12, n: 12 });
    expect(run.artifacts.map((a) => a.split('/').pop())).toEqual(
      expect.arrayContaining(['config.yaml', 'results.jsonl', 'traces.jsonl', 'metrics.json']),
    );
    expect(run.statuses).toEqual(['RUNNING', 'FINISHED']);
    expect(run.tags['ambiqa.pipeline']).toBe('closed-book');

    // Running again into the same folder without --resume is refused before anything runs.
    await expect(
      runExperiment({ config: baseConfig(), runDir: dir, components: exactMatchComponents(examples, echoPipeline(), llm), tracking: null }),
    ).rejects.toThrow(/run directory already exists/);
  });

  it('stops cleanly on abort (KILLED) and a resume finishes with the same results, no repeated call, one run', async () => {
    const examples = makeExamples(16);
    // Reference: an uninterrupted run with its own cache.
    const reference = await runExperiment({
      config: baseConfig(),
      runDir: join(root, 'ref'),
      components: exactMatchComponents(examples, echoPipeline(), client(slowScripted(), join(root, 'ref-cache.sqlite'))),
      tracking: null,
    });

    const dir = join(root, 'interrupted');
    const cachePath = join(root, 'int-cache.sqlite');
    const tracking = new FakeTracking();
    const first = slowScripted(25);
    const controller = new AbortController();
    const running = runExperiment({
      config: baseConfig(),
      runDir: dir,
      components: exactMatchComponents(examples, echoPipeline(), client(first, cachePath)),
      tracking: async () => tracking,
      signal: controller.signal,
    });
    // Abort once a few examples are done.
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (readJsonl(join(dir, 'results.jsonl')).length >= 4) {
          clearInterval(t);
          resolve();
        }
      }, 5);
    });
    controller.abort();
    const killed = await running;
    expect(killed.status).toBe('KILLED');
    expect(killed.results.length).toBeGreaterThanOrEqual(4);
    expect(killed.results.length).toBeLessThan(16);
    expect(tracking.runs.get('run-1')!.statuses).toEqual(['RUNNING', 'KILLED']);
    const state = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
    expect(state.status).toBe('KILLED');
    const firstCalls = new Set(first.received.map((c) => JSON.stringify([c.request.messages, c.sampleIndex])));

    const second = slowScripted();
    const resumed = await runExperiment({
      config: { ...baseConfig(), concurrency: 5 }, // concurrency may change on resume
      runDir: dir,
      resume: true,
      components: exactMatchComponents(examples, echoPipeline(), client(second, cachePath)),
      tracking: async () => tracking,
    });
    expect(resumed.status).toBe('FINISHED');
    expect(resumed.answeredNow).toBe(16 - killed.results.length);
    expect(outputs(resumed.results)).toEqual(outputs(reference.results));
    // No call that the first session finished is made again (abandoned in-flight ones may be).
    const finishedFirst = readJsonl<Trace>(join(dir, 'traces.jsonl'))
      .filter((t) => killed.results.some((r) => r.id === t.questionId))
      .flatMap((t) => t.llmCalls.flatMap((c) => c.completions.map((_, i) => JSON.stringify([c.messages, i]))));
    expect(finishedFirst.length).toBeGreaterThan(0);
    for (const c of second.received) expect(finishedFirst).not.toContain(JSON.stringify([c.request.messages, c.sampleIndex]));
    expect(first.received.length + second.received.length).toBeGreaterThanOrEqual(18);
    expect(firstCalls.size).toBeGreaterThan(0);
    // One MLflow run, re-opened and finished.
    expect(tracking.runs.size).toBe(1);
    expect(tracking.runs.get('run-1')!.statuses).toEqual(['RUNNING', 'KILLED', 'RUNNING', 'FINISHED']);
    // The files are the same as an uninterrupted run's, line for line (timings aside).
    const strip = (r: ExampleResult) => ({ ...r, usage: { ...r.usage, seconds: 0 } });
    expect(readJsonl<ExampleResult>(join(dir, 'results.jsonl')).map(strip).map((r) => r.id)).toEqual(
      readJsonl<ExampleResult>(join(root, 'ref', 'results.jsonl')).map(strip).map((r) => r.id),
    );
    expect(readJsonl<Trace>(join(dir, 'traces.jsonl')).map((t) => t.questionId)).toEqual(examples.map((e) => e.id));
  });

  it('refuses to resume with a different config, naming the field', async () => {
    const examples = makeExamples(3);
    const llm = client(slowScripted(), join(root, 'diff-cache.sqlite'));
    const dir = join(root, 'diff');
    await runExperiment({ config: baseConfig(), runDir: dir, components: exactMatchComponents(examples, echoPipeline(), llm), tracking: null });
    const changed = baseConfig({ pipeline: { name: 'closed-book', options: { nShots: 3 } } });
    await expect(
      runExperiment({ config: changed, runDir: dir, resume: true, components: exactMatchComponents(examples, echoPipeline(), llm), tracking: null }),
    ).rejects.toThrow(/config differs from the one it was started with in pipeline.options.nShots/);
  });

  it('records a failing example and goes on; resume tries it again', async () => {
    const examples = makeExamples(6);
    const llm = client(slowScripted(), join(root, 'err-cache.sqlite'));
    const dir = join(root, 'errors');
    const out = await runExperiment({
      config: baseConfig(),
      runDir: dir,
      components: exactMatchComponents(examples, echoPipeline({ failOn: new Set(['ex-002']) }), llm),
      tracking: null,
    });
    expect(out.status).toBe('FINISHED');
    expect(out.metrics.errors).toBe(1);
    expect(out.metrics.n).toBe(6);
    const failed = out.results.find((r) => r.id === 'ex-002')!;
    expect(failed.error).toBe('cannot answer ex-002');
    expect(scoreValues(failed).em).toBe(0);
    const again = await runExperiment({ config: baseConfig(), runDir: dir, resume: true, components: exactMatchComponents(examples, echoPipeline(), llm), tracking: null });
    expect(again.answeredNow).toBe(1);
    expect(again.metrics.errors).toBe(0);
    expect(again.results.find((r) => r.id === 'ex-002')!.output).toBe('answer 2');
  });

  it('gives up as FAILED when every example fails', async () => {
    const examples = makeExamples(20);
    const tracking = new FakeTracking();
    const out = await runExperiment({
      config: baseConfig({ concurrency: 1 }),
      runDir: join(root, 'fatal'),
      components: exactMatchComponents(examples, echoPipeline({ failOn: new Set(examples.map((e) => e.id)) }), client(slowScripted(), join(root, 'f.sqlite'))),
      tracking: async () => tracking,
      maxConsecutiveErrors: 3,
    });
    expect(out.status).toBe('FAILED');
    expect(out.error).toMatch(/3 examples failed in a row/);
    expect(out.results.length).toBe(3);
    expect(tracking.runs.get('run-1')!.statuses.at(-1)).toBe('FAILED');
  });

  it('runs only its shard and records each example\'s position in the whole selection', async () => {
    const examples = makeExamples(10);
    const llm = client(slowScripted(), join(root, 'shard-cache.sqlite'));
    const out = await runExperiment({
      config: baseConfig({ shard: '1/3' }),
      runDir: join(root, 'shard'),
      components: exactMatchComponents(examples, echoPipeline(), llm),
      tracking: null,
    });
    expect(out.results.map((r) => r.index)).toEqual([1, 4, 7]);
    expect(existsSync(join(root, 'shard', 'mlflow.json'))).toBe(false);
  });
});
