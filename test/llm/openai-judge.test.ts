import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import {
  JUDGE_TOP_LOGPROBS,
  OpenAICompatibleProvider,
  labelProbabilitiesFromTopTokens,
} from '../../src/llm/providers/openai-compatible';
import { startFaultServer, type FaultServer } from './fault-server';

/** Graded judgments and log-probabilities against a local OpenAI-compatible server. */
let server: FaultServer;
let dir: string;
beforeAll(async () => {
  server = await startFaultServer();
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-judge-'));
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.script = [];
  server.requests = [];
});

const provider = () => new OpenAICompatibleProvider({ baseUrl: server.url, model: 'local-model', apiKey: 'k-local-0001' }, {});
const top = (pairs: Array<[string, number]>) => ({
  content: [{ token: pairs[0]![0], logprob: Math.log(pairs[0]![1]), top_logprobs: pairs.map(([token, p]) => ({ token, logprob: Math.log(p) })) }],
});
const verdict = { prompt: 'Is the sky blue? Answer True or False.', labels: ['True', 'False'], purpose: 'test.verify' };

describe('OpenAI-compatible judgments from top_logprobs', () => {
  it('asks for one token with top_logprobs and sums case and space variants per label', async () => {
    server.script = [
      {
        kind: 'ok',
        text: 'True',
        usage: { prompt_tokens: 21, completion_tokens: 1 },
        logprobs: top([['True', 0.5], [' true', 0.1], ['False', 0.2], ['TRUE', 0.05], ['Maybe', 0.05]]),
      },
    ];
    const client = new LlmClient(provider());
    const r = await client.judge(verdict);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body).toMatchObject({
      max_tokens: 1,
      temperature: 0,
      logprobs: true,
      top_logprobs: JUDGE_TOP_LOGPROBS,
      messages: [{ role: 'user', content: verdict.prompt }],
    });
    expect(r.mode).toBe('probability');
    expect(r.labelMass).toBeCloseTo(0.85, 10);
    expect(r.p).toBeCloseTo(0.65 / 0.85, 10);
    expect(r.probabilities[0]! + r.probabilities[1]!).toBeCloseTo(1, 12);
    expect(r.label).toBe('True');
    expect(r.usage).toEqual({ promptTokens: 21, completionTokens: 1 });
  });

  it('falls back to parsing a text reply when the endpoint returns no logprobs, and says so', async () => {
    // First answer: the judgment request, without logprobs. Second: the greedy text fallback.
    server.script = [{ kind: 'ok', text: 'False' }, { kind: 'ok', text: 'False, it is not.' }];
    const backend = provider();
    const client = new LlmClient(backend);
    const r = await client.judge(verdict);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.body).not.toHaveProperty('logprobs');
    expect(r).toMatchObject({ mode: 'text', p: 0, label: 'False', probabilities: [0, 1], text: 'False, it is not.' });
    expect(backend.judgeTextFallbacks).toBe(1);
  });

  it('falls back to text when no top token names a label', async () => {
    server.script = [{ kind: 'ok', text: 'Yes', logprobs: top([['Yes', 0.7], ['No', 0.3]]) }, { kind: 'ok', text: 'True' }];
    const r = await new LlmClient(provider()).judge(verdict);
    expect(r).toMatchObject({ mode: 'text', p: 1, label: 'True' });
  });

  it('turns logprobs off for the endpoint after a 400 that names them, with one warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      server.script = [
        { kind: 'status', status: 400, body: { error: { message: 'logprobs is not supported for this model' } } },
        { kind: 'ok', text: 'True' },
        { kind: 'ok', text: 'False' },
      ];
      const backend = provider();
      const client = new LlmClient(backend);
      const first = await client.judge(verdict);
      const second = await client.judge({ ...verdict, prompt: 'Is grass red? Answer True or False.' });
      expect(first).toMatchObject({ mode: 'text', p: 1 });
      expect(second).toMatchObject({ mode: 'text', p: 0 });
      // 400, text, then straight to text: no second logprobs request.
      expect(server.requests.map((q) => 'logprobs' in q.body)).toEqual([true, false, false]);
      expect(backend.logprobsRejected).toBe(true);
      expect(backend.judgeTextFallbacks).toBe(2);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes('rejected logprobs'))).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('caches judgments and replays identical probabilities', async () => {
    const path = join(dir, 'judge.sqlite');
    server.script = [{ kind: 'ok', text: 'False', logprobs: top([['False', 0.6], ['True', 0.3]]) }];
    const a = new LlmClient(provider(), { cache: { path } });
    const live = await a.judge(verdict);
    a.close();
    const b = new LlmClient(provider(), { cache: { path } });
    const replay = await b.judge(verdict);
    b.close();
    expect(server.requests).toHaveLength(1);
    expect(replay.cacheHit).toBe(true);
    expect(replay.probabilities).toEqual(live.probabilities);
    expect(replay.p).toBeCloseTo(1 / 3, 12);
  });
});

describe('labelProbabilitiesFromTopTokens', () => {
  it('counts a token that could start two labels for neither', () => {
    const r = labelProbabilitiesFromTopTokens(['Useful', 'Useless'], [
      { token: 'Use', logprob: Math.log(0.5) },
      { token: ' useful', logprob: Math.log(0.2) },
      { token: 'Useless', logprob: Math.log(0.1) },
      { token: ' ', logprob: Math.log(0.1) },
    ]);
    expect(r.labelMass).toBeCloseTo(0.3, 12);
    expect(r.probabilities[0]).toBeCloseTo(2 / 3, 12);
  });

  it('gives zero mass (not NaN) when nothing matches', () => {
    expect(labelProbabilitiesFromTopTokens(['Yes', 'No'], [{ token: 'Maybe', logprob: 0 }])).toEqual({ probabilities: [0, 0], labelMass: 0 });
  });
});

describe('OpenAI-compatible log-probabilities of generated text', () => {
  it('asks for logprobs only when requested and sums the tokens', async () => {
    server.script = [
      { kind: 'ok', text: 'Paris', logprobs: { content: [{ token: 'Par', logprob: -0.5, top_logprobs: [] }, { token: 'is', logprob: -0.25, top_logprobs: [] }] } },
      { kind: 'ok', text: 'Paris' },
      { kind: 'ok', text: 'Paris' },
    ];
    const client = new LlmClient(provider());
    const withLogprobs = await client.generate({ prompt: 'Capital of France?', logprobs: true });
    expect(server.requests[0]!.body.logprobs).toBe(true);
    expect(withLogprobs.completions[0]!.logprob).toBeCloseTo(-0.75, 12);
    // A server that ignores the parameter: no logprob, rather than a made-up 0.
    const ignored = await client.generate({ prompt: 'Capital of Spain?', logprobs: true });
    expect(ignored.completions[0]!.logprob).toBeUndefined();
    await client.generate({ prompt: 'Capital of Italy?' });
    expect(server.requests[2]!.body).not.toHaveProperty('logprobs');
  });
});
