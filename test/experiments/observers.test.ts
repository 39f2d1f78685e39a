import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { readJsonl } from '../../src/common/jsonl';
import type { RunObserver } from '../../src/experiments/observers';
import { runExperiment } from '../../src/experiments/runner';
import * as runFiles from '../../src/run-files';
import type { ExampleResult } from '../../src/run-files';
import type { Trace } from '../../src/trace/types';
import type { RunTracker } from '../../src/tracking/types';
import { scriptedLlm } from '../pipelines/fakes';
import { baseConfig, echoPipeline, exactMatchComponents, FakeTracking, makeExamples } from './helpers/fixtures';

// The run files' readers, counted: the session may read an earlier session's rows once, at its
// start, and nothing after its loop.
vi.mock('../../src/run-files', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/run-files')>();
  return { ...actual, readResults: vi.fn(actual.readResults), readTraces: vi.fn(actual.readTraces) };
});

const root = mkdtempSync(join(tmpdir(), 'ambiqa-observers-'));

/** An observer that writes down what it is told, in order. */
function recorder(): RunObserver & { events: string[] } {
  const events: string[] = [];
  return {
    name: 'recorder',
    events,
    onStart(run) {
      events.push(`start ${run.selection.length} resumed ${run.resumedCount} session ${run.session}`);
    },
    onQuestion(row, trace) {
      events.push(`${row.error !== undefined ? 'failed' : 'answered'} ${row.id}${trace ? ` trace ${trace.questionId}` : ''}`);
    },
    onEnd(end) {
      events.push(`end ${end.status}${end.status !== 'CRASHED' ? ` ${end.results.length} rows ${end.traces.length} traces` : ''}`);
    },
  };
}

function reads(): number {
  return vi.mocked(runFiles.readResults).mock.calls.length + vi.mocked(runFiles.readTraces).mock.calls.length;
}

describe('the run loop emits start, question and end to its observers', () => {
  it('tells an observer each question between start and end, failed ones included, after the run files have it', async () => {
    const examples = makeExamples(5);
    const dir = join(root, 'order');
    const obs = recorder();
    // What the run files held when the observer heard of a question: the row is written (fsynced)
    // before the observers after the writer are told.
    const seenOnDisk: number[] = [];
    const onDisk: RunObserver = {
      name: 'on disk',
      onQuestion: () => void seenOnDisk.push(readFileSync(join(dir, 'results.jsonl'), 'utf8').trim().split('\n').length),
    };
    const outcome = await runExperiment({
      config: baseConfig({ concurrency: 1 }),
      runDir: dir,
      components: exactMatchComponents(examples, echoPipeline({ failOn: new Set(['ex-002']) }), scriptedLlm({ 'closed-book.answer': 'answer 1' }).llm),
      tracking: null,
      observers: [obs, onDisk],
    });
    expect(outcome.status).toBe('FINISHED');
    expect(obs.events).toEqual([
      'start 5 resumed 0 session 1',
      'answered ex-000 trace ex-000',
      'answered ex-001 trace ex-001',
      'failed ex-002',
      'answered ex-003 trace ex-003',
      'answered ex-004 trace ex-004',
      'end FINISHED 5 rows 4 traces',
    ]);
    expect(seenOnDisk).toEqual([1, 2, 3, 4, 5]);
  });

  it('reads no run file after the loop: a resumed session reads the earlier rows and traces once, at its start', async () => {
    const examples = makeExamples(8);
    const dir = join(root, 'resumed');
    const tracking = new FakeTracking();
    const components = () => exactMatchComponents(examples, echoPipeline(), scriptedLlm({ 'closed-book.answer': 'answer 1' }).llm);

    // The first session stops itself after three questions (an observer can stop the run it hears).
    const stop = new AbortController();
    let answered = 0;
    const stopper: RunObserver = { name: 'stopper', onQuestion: () => void (++answered === 3 && stop.abort(new Error('enough'))) };
    const first = await runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, components: components(), tracking: async () => tracking, env: { signal: stop.signal }, observers: [stopper] });
    expect(first.status).toBe('KILLED');
    expect(first.results.map((r) => r.id)).toEqual(['ex-000', 'ex-001', 'ex-002']);

    vi.mocked(runFiles.readResults).mockClear();
    vi.mocked(runFiles.readTraces).mockClear();
    let readsAtStart = -1;
    let readsAtEnd = -1;
    const counter: RunObserver = {
      name: 'counter',
      onStart: () => void (readsAtStart = reads()),
      // Listed after the run's own observers: the files are rewritten and metrics.json written by now.
      onEnd: () => void (readsAtEnd = reads()),
    };
    const obs = recorder();
    const second = await runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, resume: true, components: components(), tracking: async () => tracking, observers: [obs, counter] });
    expect(second.status).toBe('FINISHED');
    expect(obs.events[0]).toBe('start 8 resumed 3 session 2');
    expect(obs.events.slice(1, -1)).toEqual(['ex-003', 'ex-004', 'ex-005', 'ex-006', 'ex-007'].map((id) => `answered ${id} trace ${id}`));
    expect(obs.events.at(-1)).toBe('end FINISHED 8 rows 8 traces');
    // One read of each file, before the session started; none by the loop or after it.
    expect(vi.mocked(runFiles.readResults).mock.calls.map((c) => c[0])).toEqual([join(dir, 'results.jsonl')]);
    expect(vi.mocked(runFiles.readTraces).mock.calls.map((c) => c[0])).toEqual([join(dir, 'traces.jsonl')]);
    expect(readsAtStart).toBe(2);
    expect(readsAtEnd).toBe(2);
    expect(reads()).toBe(2);

    // The files, rewritten from memory, are those of an uninterrupted run: one line per question,
    // in evaluation order, each trace beside its row; the decision statistics saw every trace.
    const results = readJsonl<ExampleResult>(join(dir, 'results.jsonl'));
    const traces = readJsonl<Trace>(join(dir, 'traces.jsonl'));
    expect(results.map((r) => r.id)).toEqual(examples.map((e) => e.id));
    expect(traces.map((t) => t.questionId)).toEqual(examples.map((e) => e.id));
    expect(second.results).toEqual(results);
    expect(second.metrics.n).toBe(8);
    const run = tracking.runs.get('run-1')!;
    expect(run.statuses).toEqual(['RUNNING', 'KILLED', 'RUNNING', 'FINISHED']);
  });

  it('tells the observers of an unexpected failure (CRASHED) and marks run.json and MLflow FAILED', async () => {
    const dir = join(root, 'crash');
    const tracking = new FakeTracking();
    const obs = recorder();
    const components = exactMatchComponents(makeExamples(3), echoPipeline(), scriptedLlm({ 'closed-book.answer': 'answer 1' }).llm);
    const broken = {
      ...components,
      score: () => {
        throw new Error('scorer bug');
      },
    };
    await expect(runExperiment({ config: baseConfig({ concurrency: 1 }), runDir: dir, components: broken, tracking: async () => tracking, observers: [obs] })).rejects.toThrow(/scorer bug/);
    expect(obs.events).toEqual(['start 3 resumed 0 session 1', 'end CRASHED']);
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))).toMatchObject({ status: 'FAILED', error: 'scorer bug' });
    expect(tracking.runs.get('run-1')!.statuses).toEqual(['RUNNING', 'FAILED']);
  });

  it('draws the figures into the MLflow run of a finished session before the run is closed, and of no other', async () => {
    const tracking = new FakeTracking();
    const drawn: Array<{ dir: string; statuses: string[] }> = [];
    const figures = async (dir: string, tracker: RunTracker) => {
      drawn.push({ dir, statuses: [...tracking.runs.get(tracker.runId)!.statuses] });
    };
    const components = () => exactMatchComponents(makeExamples(2), echoPipeline(), scriptedLlm({ 'closed-book.answer': 'answer 1' }).llm);
    const done = join(root, 'figures-done');
    await runExperiment({ config: baseConfig(), runDir: done, components: components(), tracking: async () => tracking, env: { figures } });
    expect(drawn).toEqual([{ dir: done, statuses: ['RUNNING'] }]);
    expect(tracking.runs.get('run-1')!.statuses).toEqual(['RUNNING', 'FINISHED']);

    const stopped = new AbortController();
    stopped.abort(new Error('stopped'));
    const killed = await runExperiment({ config: baseConfig(), runDir: join(root, 'figures-killed'), components: components(), tracking: async () => tracking, env: { figures, signal: stopped.signal } });
    expect(killed.status).toBe('KILLED');
    // Untracked: nothing to draw into.
    await runExperiment({ config: baseConfig(), runDir: join(root, 'figures-untracked'), components: components(), tracking: null, env: { figures } });
    expect(drawn).toHaveLength(1);
  });
});
