import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MlflowClient } from '../../src/tracking/client';
import { readJournal } from '../../src/tracking/journal';
import { DEFAULT_FIELD_LIMITS, TRUNCATION_MARKER, planSpans, traceIdFor, truncateField, versionAtLeast, type TraceExportItem } from '../../src/tracking/otel-export';
import { freePort } from '../../src/tracking/server';
import { syncDirectory } from '../../src/tracking/sync';
import { MlflowTracking, ResilientTracking } from '../../src/tracking/tracking';
import type { Trace } from '../../src/trace/types';
import { tempDir, trackingUri, uniqueName } from './helpers';

const uri = trackingUri();
const SECRET = 'sk-otel-test-NEVER-EXPORT-9876543210';

/** A ToC-like trace: an expansion call, a graded self-verification (judge) and a retrieval. */
function sampleTrace(questionId: string, extra: Partial<Trace> = {}): Trace {
  return {
    pipeline: 'toc',
    questionId,
    question: `Who won the race ${questionId}?`,
    llm: { provider: 'scripted', model: 'scripted-model' },
    demoIds: ['demo-1'],
    llmCalls: [
      {
        index: 0,
        purpose: 'toc.rac',
        messages: [
          { role: 'system', content: 'Clarify the question.' },
          { role: 'user', content: `Question ${questionId}; key ${SECRET}` },
        ],
        params: { temperature: 0.7, topP: 0.9, maxTokens: 64, stop: ['\n\n'], n: 1, seed: 7 },
        completions: [{ text: 'DQ: Who won in 2001? DA: Bob', finishReason: 'stop', promptTokens: 40, completionTokens: 12, latencySeconds: 0.2, cacheHit: false }],
        wallSeconds: 0.2,
      },
      {
        index: 1,
        purpose: 'toc.verify',
        messages: [{ role: 'user', content: 'Is the answer supported? True or False' }],
        params: { temperature: 0, topP: 1, maxTokens: 1, stop: [], n: 1, seed: null },
        completions: [{ text: 'True', finishReason: 'stop', promptTokens: 9, completionTokens: 0, latencySeconds: 0.05, cacheHit: true }],
        wallSeconds: 0.05,
        judge: { labels: ['True', 'False'], probabilities: [0.83, 0.17], p: 0.83, mode: 'probability', labelMass: 0.97 },
      },
    ],
    retrievals: [{ index: 0, purpose: 'toc.retrieve', retriever: 'bm25', query: 'race winner', k: 2, hits: [{ id: 'p-7', score: 3.5 }, { id: 'p-9', score: 1.25 }] }],
    parseFailures: [],
    decisions: { kind: 'baseline', passageIds: ['p-7'] },
    summary: { llmCalls: 2, promptTokens: 49, completionTokens: 12, cacheHits: 1, seconds: 0.4, retrievals: 1, parseFailures: 0 },
    output: 'Bob won in 2001.',
    answer: 'Bob',
    ...extra,
  };
}

function item(runKey: string, trace: Trace, metrics: Record<string, number> = { str_em: 0.5, disambig_f1: 0.25 }): TraceExportItem {
  return { traceIdHex: traceIdFor(runKey, trace.questionId), trace, metrics, endedAtMs: Date.now() };
}

describe('question trace → spans', () => {
  const saved = process.env.OPENAI_API_KEY;
  beforeAll(() => {
    process.env.OPENAI_API_KEY = SECRET;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });

  it('has a root with the question and answer, a step per purpose, an LLM span per call and a retriever span', () => {
    const { spans } = planSpans(item('run-1', sampleTrace('q1')));
    const root = spans[0];
    expect(root.parent).toBeNull();
    expect(JSON.parse(root.attributes['mlflow.spanInputs'] as string)).toEqual({ question_id: 'q1', question: 'Who won the race q1?' });
    expect(JSON.parse(root.attributes['mlflow.spanOutputs'] as string)).toEqual({ answer: 'Bob', output: 'Bob won in 2001.' });
    expect(root.attributes['ambiqa.metric.str_em']).toBe(0.5);

    const steps = spans.filter((s) => s.parent === 0 && s.attributes['mlflow.spanType'] === 'CHAIN').map((s) => s.name);
    expect(steps).toEqual(['toc.rac', 'toc.verify', 'toc.retrieve']);
    const llm = spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL');
    expect(llm).toHaveLength(2);
    const [rac, verify] = llm;
    expect(spans[rac.parent!].name).toBe('toc.rac');
    const inputs = JSON.parse(rac.attributes['mlflow.spanInputs'] as string);
    expect(inputs).toMatchObject({ temperature: 0.7, top_p: 0.9, max_tokens: 64, stop: ['\n\n'], seed: 7 });
    expect(inputs.messages[0]).toEqual({ role: 'system', content: 'Clarify the question.' });
    expect(JSON.parse(rac.attributes['mlflow.chat.tokenUsage'] as string)).toEqual({ input_tokens: 40, output_tokens: 12, total_tokens: 52 });
    expect(rac.attributes['ambiqa.cache_hit']).toBe(false);
    expect(rac.attributes['ambiqa.latency_seconds']).toBe(0.2);
    expect(verify.attributes['ambiqa.judge.p']).toBe(0.83);
    expect(verify.attributes['ambiqa.cache_hit']).toBe(true);
    expect(JSON.parse(verify.attributes['mlflow.spanOutputs'] as string).judge.probabilities).toEqual([0.83, 0.17]);

    const retriever = spans.find((s) => s.attributes['mlflow.spanType'] === 'RETRIEVER')!;
    expect(JSON.parse(retriever.attributes['mlflow.spanInputs'] as string)).toMatchObject({ query: 'race winner', k: 2 });
    expect(retriever.attributes['ambiqa.passage_ids']).toEqual(['p-7', 'p-9']);
    expect(retriever.attributes['ambiqa.scores']).toEqual(['3.5', '1.25']);
    // Every child lies inside the question's time.
    for (const s of spans) {
      expect(s.startMs).toBeGreaterThanOrEqual(root.startMs);
      expect(s.endMs).toBeLessThanOrEqual(root.endMs);
    }
  });

  it('redacts secrets in every string it exports', () => {
    const { spans } = planSpans(item('run-1', sampleTrace('q1')));
    const all = JSON.stringify(spans);
    expect(all).not.toContain(SECRET);
    expect(all).toContain('[redacted]');
  });

  it('truncates long fields with a marker and keeps a trace within its budget, dropping no span', () => {
    const long = 'x'.repeat(50_000);
    const trace = sampleTrace('q-long', { output: long });
    trace.llmCalls[0].messages[1].content = long;
    const whole = planSpans(item('run-1', trace)).spans;
    const { spans, truncatedFields } = planSpans(item('run-1', trace), { maxFieldChars: 20_000, maxTraceChars: 30_000 });
    expect(spans.map((s) => s.name)).toEqual(whole.map((s) => s.name));
    expect(truncatedFields).toBeGreaterThan(0);
    const strings = spans.flatMap((s) => Object.values(s.attributes).filter((v): v is string => typeof v === 'string'));
    expect(strings.reduce((n, v) => n + v.length, 0)).toBeLessThanOrEqual(30_000);
    expect(strings.filter((v) => v.includes(TRUNCATION_MARKER)).length).toBeGreaterThanOrEqual(2);
    // Short fields are untouched.
    expect(spans[0].attributes['ambiqa.question_id']).toBe('q-long');
    expect(truncateField('abcdef', 10)).toBe('abcdef');
    expect(truncateField('a'.repeat(200), 100)).toMatch(/^a+…\[truncated by ambiqa: 100 of 200 chars dropped\]$/);
    expect(truncateField('a'.repeat(200), 100)).toHaveLength(100);
  });

  it('gives a question the same trace id in the same run, and a different one elsewhere', () => {
    expect(traceIdFor('run-a', 'q1')).toBe(traceIdFor('run-a', 'q1'));
    expect(traceIdFor('run-a', 'q1')).not.toBe(traceIdFor('run-b', 'q1'));
    expect(traceIdFor('run-a', 'q1')).toMatch(/^[0-9a-f]{32}$/);
    expect(versionAtLeast('3.17.2', [3, 6, 0])).toBe(true);
    expect(versionAtLeast('3.6.0', [3, 6, 0])).toBe(true);
    expect(versionAtLeast('3.5.9', [3, 6, 0])).toBe(false);
    expect(versionAtLeast('2.22.1', [3, 6, 0])).toBe(false);
    expect(DEFAULT_FIELD_LIMITS.maxFieldChars).toBeGreaterThan(1000);
  });
});

// ------------------------------------------------------------------ against the real server

/**
 * A proxy in front of the real server that can pretend to be an older or file-store MLflow, or
 * refuse big OTLP bodies the way a proxy with a body limit would.
 */
async function proxy(target: string, behaviour: { version?: string; otlpStatus?: number; otlpBody?: string; maxOtlpBytes?: number }): Promise<{ uri: string; otlpBodies: number[]; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const otlpBodies: number[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/version' && behaviour.version) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(behaviour.version);
        return;
      }
      if (req.url?.startsWith('/v1/traces')) {
        otlpBodies.push(body.length);
        if (behaviour.otlpStatus) {
          res.writeHead(behaviour.otlpStatus, { 'content-type': 'application/json' }).end(behaviour.otlpBody ?? '{}');
          return;
        }
        if (behaviour.maxOtlpBytes !== undefined && body.length > behaviour.maxOtlpBytes) {
          res.writeHead(413, { 'content-type': 'text/plain' }).end('Request Entity Too Large');
          return;
        }
      }
      const out = httpRequest({ host: hostname, port: Number(port), path: req.url, method: req.method, headers: req.headers }, (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      });
      out.on('error', () => res.writeHead(502).end());
      out.end(body);
    });
  });
  const listenPort = await freePort();
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  return { uri: `http://127.0.0.1:${listenPort}`, otlpBodies, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A TCP relay to the real server that can be cut, to take MLflow "down" in the middle of a run. */
async function relay(target: string): Promise<{ uri: string; cut(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createTcpServer((inbound) => {
    const outbound = connect(Number(port), hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  const listenPort = await freePort();
  await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
  return {
    uri: `http://127.0.0.1:${listenPort}`,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

describe.skipIf(!uri)('question traces in MLflow Tracing (real server)', () => {
  const client = new MlflowClient(uri);
  const saved = process.env.OPENAI_API_KEY;
  beforeAll(() => {
    process.env.OPENAI_API_KEY = SECRET;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });

  async function tracesOf(experimentId: string, runId: string) {
    const { traces } = await client.searchTraces({ experimentIds: [experimentId], runId });
    return traces;
  }

  it('exports one trace per question, linked to the run, with LLM spans, token usage and metrics as feedback', async () => {
    const notes: string[] = [];
    const tracking = new MlflowTracking({ uri, notify: (m) => notes.push(m), traceBatchSize: 2 });
    const experimentName = uniqueName('otel');
    const run = await tracking.startRun({ experimentName, runName: 'traces' });
    for (const q of ['q1', 'q2', 'q3']) run.logQuestionTrace({ trace: sampleTrace(q), metrics: { str_em: q === 'q2' ? 1 : 0, disambig_f1: 0.25 } });
    await run.finish('FINISHED');

    const traces = await tracesOf(run.experimentId, run.runId);
    expect(traces.map((t) => t.traceId).sort()).toEqual(['q1', 'q2', 'q3'].map((q) => `tr-${traceIdFor(run.runId, q)}`).sort());
    const q2 = traces.find((t) => t.traceId === `tr-${traceIdFor(run.runId, 'q2')}`)!;
    expect(JSON.parse(q2.requestPreview)).toEqual({ question_id: 'q2', question: 'Who won the race q2?' });
    expect(JSON.parse(q2.metadata['mlflow.trace.tokenUsage'])).toEqual({ input_tokens: 49, output_tokens: 12, total_tokens: 61 });
    expect(Object.fromEntries(q2.assessments.map((a) => [a.name, a.value]))).toEqual({ str_em: 1, disambig_f1: 0.25 });

    const { spans } = await client.getTrace(q2.traceId);
    const llm = spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL');
    expect(llm.map((s) => s.name)).toEqual(expect.arrayContaining(['llm toc.rac', 'judge toc.verify']));
    const judge = llm.find((s) => s.name === 'judge toc.verify')!;
    expect(judge.attributes['ambiqa.judge.p']).toBe(0.83);
    expect(spans.find((s) => s.attributes['mlflow.spanType'] === 'RETRIEVER')?.attributes['ambiqa.passage_ids']).toEqual(['p-7', 'p-9']);
    expect(JSON.stringify(spans)).not.toContain(SECRET);
    expect(notes.filter((n) => /warning/.test(n))).toEqual([]);
  }, 120_000);

  it('does not duplicate traces when a resumed run exports a question again', async () => {
    const tracking = new MlflowTracking({ uri, notify: () => {} });
    const experimentName = uniqueName('otel-resume');
    const first = await tracking.startRun({ experimentName, runName: 'resumed' });
    first.logQuestionTrace({ trace: sampleTrace('q1'), metrics: {} });
    first.logQuestionTrace({ trace: sampleTrace('q2'), metrics: {} });
    await first.finish('KILLED');
    const again = await tracking.startRun({ experimentName, runName: 'resumed', resumeRunId: first.runId });
    again.logQuestionTrace({ trace: sampleTrace('q2'), metrics: {} }); // answered twice (killed before its result line)
    again.logQuestionTrace({ trace: sampleTrace('q3'), metrics: {} });
    await again.finish('FINISHED');
    const traces = await tracesOf(first.experimentId, first.runId);
    expect(traces).toHaveLength(3);
    const { spans } = await client.getTrace(`tr-${traceIdFor(first.runId, 'q2')}`);
    expect(spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL')).toHaveLength(2);
  }, 120_000);

  it('buffers traces while the server is unreachable and `sync` uploads them, redacted', async () => {
    const dir = tempDir();
    const dead = `http://127.0.0.1:${await freePort()}`;
    const offline = new ResilientTracking({ uri: dead, bufferDir: dir, notify: () => {} });
    const experimentName = uniqueName('otel-offline');
    const run = await offline.startRun({ experimentName, runName: 'offline' });
    run.logQuestionTrace({ trace: sampleTrace('q1'), metrics: { str_em: 1 } });
    run.logQuestionTrace({ trace: sampleTrace('q2'), metrics: { str_em: 0 } });
    await run.finish('FINISHED');
    const ops = readJournal(dir);
    const traceOps = ops.filter((o) => o.op === 'traces');
    expect(traceOps.map((o) => (o.op === 'traces' ? o.count : 0))).toEqual([2]);
    if (traceOps[0].op === 'traces') expect(readFileSync(`${dir}/${traceOps[0].file}`, 'utf8')).not.toContain(SECRET);

    const result = await syncDirectory(dir, { client, notify: () => {} });
    const synced = result.runs[run.runId];
    const traces = await tracesOf(synced.experimentId, synced.runId);
    expect(traces.map((t) => t.traceId).sort()).toEqual(['q1', 'q2'].map((q) => `tr-${traceIdFor(run.runId, q)}`).sort());
    expect(traces.every((t) => t.assessments.some((a) => a.name === 'str_em'))).toBe(true);
    expect((await syncDirectory(dir, { client, notify: () => {} })).alreadySynced).toBe(true);
  }, 120_000);

  it('keeps the traces of a server lost mid-run in the journal; sync sends them to the same run', async () => {
    const dir = tempDir();
    const link = await relay(uri);
    const tracking = new ResilientTracking({ uri: link.uri, bufferDir: dir, notify: () => {} });
    const run = await tracking.startRun({ experimentName: uniqueName('otel-midrun'), runName: 'mid-run' });
    run.logQuestionTrace({ trace: sampleTrace('q1'), metrics: { str_em: 1 } });
    await run.flushQuestionTraces();
    await link.cut();
    run.logQuestionTrace({ trace: sampleTrace('q2'), metrics: { str_em: 0 } });
    await run.finish('FINISHED');
    expect(run.state).toBe('buffered');
    const traceOps = readJournal(dir).filter((o) => o.op === 'traces');
    expect(traceOps.map((o) => (o.op === 'traces' ? o.count : 0))).toEqual([1]);
    expect((await tracesOf(run.experimentId, run.runId)).map((t) => t.traceId)).toEqual([`tr-${traceIdFor(run.runId, 'q1')}`]);

    await syncDirectory(dir, { client, notify: () => {} });
    const traces = await tracesOf(run.experimentId, run.runId);
    expect(traces.map((t) => t.traceId).sort()).toEqual(['q1', 'q2'].map((q) => `tr-${traceIdFor(run.runId, q)}`).sort());
    expect((await client.getRun(run.runId)).info.status).toBe('FINISHED');
  }, 120_000);

  it('warns once and goes on when the server is too old or has a file store', async () => {
    for (const [behaviour, expected] of [
      [{ version: '3.4.0' }, /MLflow 3\.4\.0 .*needs MLflow ≥ 3\.6\.0/],
      [{ otlpStatus: 501, otlpBody: '{"detail":"REST OTLP span logging is not supported by FileStore"}' }, /not supported by FileStore/],
    ] as const) {
      const fake = await proxy(uri, behaviour);
      try {
        const notes: string[] = [];
        const tracking = new MlflowTracking({ uri: fake.uri, notify: (m) => notes.push(m), traceBatchSize: 1 });
        const run = await tracking.startRun({ experimentName: uniqueName('otel-old'), runName: 'old' });
        for (const q of ['q1', 'q2', 'q3']) run.logQuestionTrace({ trace: sampleTrace(q), metrics: {} });
        await run.logMetrics({ n: 3 });
        await run.finish('FINISHED');
        const warnings = notes.filter((n) => /warning/.test(n));
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatch(expected);
        expect(warnings[0]).toMatch(/traces\.jsonl/);
        expect((await client.getRun(run.runId)).info.status).toBe('FINISHED');
      } finally {
        await fake.close();
      }
    }
  }, 120_000);

  it('cuts a trace the server refuses as too large field by field, instead of dropping it', async () => {
    const fake = await proxy(uri, { maxOtlpBytes: 60_000 });
    try {
      const notes: string[] = [];
      const tracking = new MlflowTracking({ uri: fake.uri, notify: (m) => notes.push(m) });
      const run = await tracking.startRun({ experimentName: uniqueName('otel-big'), runName: 'big' });
      const trace = sampleTrace('q-big', { output: 'long answer '.repeat(20_000) });
      run.logQuestionTrace({ trace, metrics: {} });
      await run.finish('FINISHED');
      expect(fake.otlpBodies.length).toBeGreaterThan(1);
      const traces = await tracesOf(run.experimentId, run.runId);
      expect(traces).toHaveLength(1);
      const { spans } = await client.getTrace(traces[0].traceId);
      const root = spans.find((s) => !s.parentSpanId)!;
      expect(JSON.stringify(root.attributes['mlflow.spanOutputs'])).toContain(TRUNCATION_MARKER);
      expect(spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL')).toHaveLength(2);
      expect(notes.some((n) => /truncated/.test(n))).toBe(true);
    } finally {
      await fake.close();
    }
  }, 120_000);
});
