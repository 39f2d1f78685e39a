import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AmbiqaError } from '../../src/errors';
import { readResults, readRunJson, readTraces, RUN_FORMAT, writeRunJson, type RunMetrics, type RunState } from '../../src/run-files';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-run-files-'));

const state: RunState = {
  status: 'FINISHED',
  wallSeconds: 1.5,
  sessions: 1,
  startedAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:01.500Z',
  total: 2,
  done: 2,
};

describe('the JSON files of a run directory', () => {
  it('are written stamped with the format and read back with their schemas, the stamp left out', () => {
    const path = join(dir, 'run.json');
    writeRunJson(path, 'state', state);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ format: RUN_FORMAT, ...state });
    expect(readRunJson(path, 'state')).toEqual(state);
    expect(readRunJson(join(dir, 'absent.json'), 'state')).toBeNull();
  });

  it('reads files written before the stamp (format 1), and a mean over no questions as NaN', () => {
    const path = join(dir, 'metrics.json');
    // What a run wrote before formats: no stamp, and JSON's null for a NaN mean.
    writeFileSync(
      path,
      JSON.stringify({
        n: 0,
        metrics: { em: { mean: null, ciLow: null, ciHigh: null, n: 0 } },
        usage: { llm_calls: 0, prompt_tokens: 0, completion_tokens: 0, cache_hits: 0, wall_seconds: 0.1 },
      }),
    );
    const metrics = readRunJson(path, 'metrics') as RunMetrics;
    expect(metrics.n).toBe(0);
    expect(metrics.metrics.em.mean).toBeNaN();
    writeFileSync(join(dir, 'mlflow.json'), JSON.stringify({ experimentName: 'e', experimentId: '1', runId: 'r', runName: 'x' }));
    expect(readRunJson(join(dir, 'mlflow.json'), 'mlflow')).toEqual({ experimentName: 'e', experimentId: '1', runId: 'r', runName: 'x' });
  });

  it('refuses a later format, and a file that is not what ambiqa writes, naming the file', () => {
    const later = join(dir, 'later.json');
    writeFileSync(later, JSON.stringify({ format: RUN_FORMAT + 1, ...state }));
    expect(() => readRunJson(later, 'state')).toThrow(AmbiqaError);
    expect(() => readRunJson(later, 'state')).toThrow(`${later}: format ${RUN_FORMAT + 1} is not one this version of ambiqa reads (formats 1 to ${RUN_FORMAT})`);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ ...state, status: 'DONE' }));
    expect(() => readRunJson(wrong, 'state')).toThrow(`${wrong}: not a run.json ambiqa wrote: status: must be one of "RUNNING", "FINISHED", "KILLED", "FAILED" (got "DONE")`);
    const torn = join(dir, 'torn.json');
    writeFileSync(torn, '{"status": "FINI');
    expect(() => readRunJson(torn, 'state')).toThrow(`${torn}: not valid JSON`);
  });
});

describe('the JSON-lines files of a run directory', () => {
  const result = { id: 'q1', question: 'Who?', output: 'Bob.', metrics: { em: 100 }, usage: { llmCalls: 1, promptTokens: 10, completionTokens: 2, cacheHits: 0, seconds: 0.1, retrievals: 0, parseFailures: 0 } };
  const trace = {
    pipeline: 'toy',
    questionId: 'q1',
    question: 'Who?',
    llm: { provider: 'scripted', model: 'm' },
    demoIds: [],
    llmCalls: [
      {
        index: 0,
        purpose: 'toy.answer',
        messages: [{ role: 'user', content: 'Who?' }],
        params: { temperature: 0, topP: 1, maxTokens: 8, stop: [], n: 1, seed: null },
        completions: [{ text: 'Bob.', finishReason: 'stop', latencySeconds: 0.1, cacheHit: false }],
        wallSeconds: 0.1,
      },
    ],
    retrievals: [],
    parseFailures: [],
    decisions: { kind: 'toy', p: 0.5 },
    summary: { llmCalls: 1, cacheHits: 0, seconds: 0.1, retrievals: 0, parseFailures: 0 },
    output: 'Bob.',
  };

  it('read results and traces with their schemas, keeping fields they do not name and dropping a torn last line', () => {
    const results = join(dir, 'results.jsonl');
    writeFileSync(results, `${JSON.stringify({ ...result, extra: 'kept' })}\n{"id": "q2", "quest`);
    // A line without a format (1 or 2) is migrated to format 3: its numbers become scores.
    const { metrics: _m, ...rest } = result;
    expect(readResults(results)).toEqual([{ ...rest, format: 3, scores: { em: { value: 100 } }, extra: 'kept' }]);
    const traces = join(dir, 'traces.jsonl');
    writeFileSync(traces, `${JSON.stringify(trace)}\n`);
    expect(readTraces(traces)[0]!.decisions).toEqual({ kind: 'toy', p: 0.5 });
    expect(readResults(join(dir, 'absent.jsonl'))).toEqual([]);
  });

  it('refuse a record of the wrong shape, naming the file, the record and the field', () => {
    const results = join(dir, 'bad-results.jsonl');
    writeFileSync(results, `${JSON.stringify(result)}\n${JSON.stringify({ ...result, id: 'q2', metrics: { em: 'high' } })}\n`);
    expect(() => readResults(results)).toThrow(AmbiqaError);
    expect(() => readResults(results)).toThrow(`${results}: record 2 is not a question result: metrics.em:`);
    const traces = join(dir, 'bad-traces.jsonl');
    const { decisions: _d, ...noDecisions } = trace;
    writeFileSync(traces, `${JSON.stringify(noDecisions)}\n`);
    expect(() => readTraces(traces)).toThrow(`${traces}: record 1 is not a trace: decisions:`);
    writeFileSync(traces, `not json\n${JSON.stringify(trace)}\n`);
    expect(() => readTraces(traces)).toThrow(`${traces}:1: not valid JSON`);
  });
});
