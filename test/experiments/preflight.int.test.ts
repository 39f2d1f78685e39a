import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitStatus } from '../../src/experiments/exit-status';
import { judgeLabels, PROBE_MARK } from '../../src/experiments/preflight';
import { pipelineNames } from '../../src/pipelines/registry';
import { freePort } from '../../src/tracking/server';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { runCli } from '../helpers/cli';
import { writeAsqa, writeCorpus, writeYaml } from './helpers/files';

/**
 * The preflight through the real command against a loopback OpenAI-compatible server: an
 * unserved generator or judge model, a refused key, an endpoint without log-probabilities and
 * one that cannot be reached are each refused before any question's chat request, in one line
 * naming the config field and the fix, and no run directory is left behind.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-preflight-'));
const artifacts = join(dir, 'artifacts');
const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts };
let server: FaultServer;
let data: string;
let corpus: string;

beforeAll(async () => {
  server = await startFaultServer();
  data = writeAsqa(dir, 3);
  corpus = writeCorpus(dir);
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(name: string, patch: Record<string, unknown> = {}): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'gen-model', cache: join(dir, `${name}.sqlite`), maxRetries: 0 },
    metrics: ['str_em'],
    tracking: { enabled: false },
    ...patch,
  });
}

/** ToC (its self-verification judges) on the loopback server. */
function tocConfig(name: string, judge?: Record<string, unknown>): string {
  return config(name, {
    pipeline: { name: 'toc', options: { maxNodes: 2, maxDepth: 1, maxTrials: 1, nPassages: 1, nShots: 0, pruning: true } },
    retriever: { type: 'bm25', corpus },
    ...(judge ? { judge: { provider: 'openai-compatible', baseUrl: server.url, cache: join(dir, `${name}-judge.sqlite`), ...judge } } : {}),
  });
}

/** The refusal: exit status 1, nothing asked but `/models` (and the probe where stated), no run folder. */
async function refused(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<string[]> {
  server.requests = [];
  const r = await runCli(args, { ...env, ...extraEnv });
  expect(r.code, r.output).toBe(ExitStatus.error);
  const name = args.includes('--name') ? args[args.indexOf('--name') + 1]! : args[1]!.split('/').pop()!.replace(/\.yaml$/, '');
  expect(existsSync(join(artifacts, 'runs', name)), 'a run folder was left behind').toBe(false);
  expect(r.stdout).toBe('');
  return r.stderr.trimEnd().split('\n');
}

describe('ambiqa run refuses before any chat request', () => {
  it('a generator model the server does not serve: one line naming llm.model and the fix', async () => {
    server.models = ['gen-model', 'other-model'];
    const lines = await refused(['run', config('unserved', {}), '--set', 'llm.model=typo-model']);
    expect(lines).toEqual([
      `ambiqa run: llm.model: the server at ${server.url} does not serve model "typo-model" (its /models lists "gen-model", "other-model"); fix: set llm.model to one of them`,
    ]);
    expect(server.requests).toHaveLength(0);
  });

  it('a judge model the server does not serve, found before the generator works', async () => {
    server.models = ['gen-model'];
    const lines = await refused(['run', tocConfig('judge-unserved', { model: 'judge-model' })]);
    expect(lines).toEqual([`ambiqa run: judge.model: the server at ${server.url} does not serve model "judge-model" (its /models lists "gen-model"); fix: set judge.model to "gen-model"`]);
    expect(server.requests).toHaveLength(0);
  });

  it('a key the server refuses, and a missing one; the key itself is never printed', async () => {
    server.models = ['gen-model'];
    server.requiredKey = 'the-right-key';
    try {
      const file = config('key', { llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'gen-model', apiKeyEnv: 'MY_SERVER_KEY', cache: join(dir, 'key.sqlite') } });
      const wrong = await refused(['run', file], { MY_SERVER_KEY: 'sk-wrong-4242' });
      expect(wrong).toEqual([
        `ambiqa run: llm.apiKeyEnv: the server at ${server.url} refused the API key in MY_SERVER_KEY (HTTP 401: Incorrect API key provided); fix: export MY_SERVER_KEY=<a key it accepts>`,
      ]);
      expect(wrong.join('\n')).not.toContain('sk-wrong-4242');
      const missing = await refused(['run', file]);
      expect(missing[0]).toMatch(/^ambiqa run: llm\.apiKeyEnv: the server at .* wants an API key \(HTTP 401\) and MY_SERVER_KEY is not set; fix: export MY_SERVER_KEY=<your key>/);
      expect(server.requests).toHaveLength(0);
      // The right key passes.
      const ok = await runCli(['run', file, '--quiet'], { ...env, MY_SERVER_KEY: 'the-right-key' });
      expect(ok.code, ok.output).toBe(ExitStatus.ok);
    } finally {
      delete server.requiredKey;
    }
  });

  it('an endpoint without log-probabilities where the judge needs them: only the probe is asked', async () => {
    server.models = ['gen-model'];
    server.logprobsFor = undefined;
    const lines = await refused(['run', tocConfig('no-logprobs')]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^ambiqa run: llm\.judgeMode: the server at http:\/\/127\.0\.0\.1:\d+\/v1 returned no usable log-probabilities for a yes\/no judgment, .*; fix: .*or set llm\.judgeMode=text to accept that fallback$/,
    );
    // The probe asked for logprobs, got none, and fell back to a text reply: two requests, both the probe's.
    expect(server.requests).toHaveLength(2);
    expect(server.requests.every((r) => JSON.stringify(r.body).includes(PROBE_MARK))).toBe(true);
  });

  it('with judgeMode text the counted fallback is stated and the run goes on', async () => {
    server.models = ['gen-model'];
    server.requests = [];
    const r = await runCli(['run', tocConfig('text-judge'), '--quiet', '--limit', '1', '--set', 'llm.judgeMode=text'], env);
    expect(r.stderr).toContain('note: llm.judgeMode is text: judgments parse short text replies (P is 0 or 1), counted per run as judge_mode=text');
    expect(existsSync(join(artifacts, 'runs', 'text-judge', 'results.jsonl')), r.output).toBe(true);
    expect(server.requests.some((r) => JSON.stringify(r.body).includes(PROBE_MARK))).toBe(false);
  });

  it('a server that cannot be reached', async () => {
    const port = await freePort();
    const lines = await refused(['run', config('unreachable'), '--set', `llm.baseUrl=http://127.0.0.1:${port}/v1`]);
    expect(lines).toEqual([
      `ambiqa run: llm.baseUrl: cannot reach the server at http://127.0.0.1:${port}/v1 (ECONNREFUSED); fix: start it, or set llm.baseUrl to where it listens (--skip-preflight runs without this check)`,
    ]);
  });

  it('a client that cannot be made (OpenAI without a key) is one line too, and nothing is sent', async () => {
    // The runner's environment, minus any key the test's own shell may have set.
    const { OPENAI_API_KEY: _k, ...noKey } = env as Record<string, string | undefined>;
    const r = await runCli(['run', config('no-key'), '--set', 'llm.baseUrl=https://api.openai.com/v1'], noKey);
    expect(r.code, r.output).toBe(ExitStatus.error);
    expect(r.stderr.trimEnd()).toBe(
      'ambiqa run: llm: no API key for https://api.openai.com/v1: the environment variable OPENAI_API_KEY is not set (export OPENAI_API_KEY=<your key> (keys never go into config files))',
    );
    expect(existsSync(join(artifacts, 'runs', 'no-key'))).toBe(false);
  });

  it('the D-F1 reader (openai:<model>) is checked too, and several problems are listed one per line', async () => {
    server.models = ['gen-model'];
    const lines = await refused(
      ['run', config('reader', { metrics: ['str_em', 'd_f1'], reader: 'openai:reader-model' }), '--set', 'llm.model=typo-model'],
      { OPENAI_BASE_URL: server.url },
    );
    expect(lines[0]).toBe('ambiqa run: preflight: 2 problems, no model was called and nothing was written:');
    expect(lines.slice(1)).toEqual([
      `  llm.model: the server at ${server.url} does not serve model "typo-model" (its /models lists "gen-model"); fix: set llm.model to "gen-model"`,
      `  reader: the server at ${server.url} does not serve model "reader-model" (its /models lists "gen-model"); fix: set reader to openai:gen-model`,
    ]);
  });

  it('a sweep checks every point before the first one runs', async () => {
    server.models = ['gen-model'];
    server.requests = [];
    const file = config('sweep', { sweep: { 'llm.model': ['gen-model', 'late-typo'] } });
    const r = await runCli(['sweep', file, '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.error);
    expect(r.stderr.trimEnd()).toBe(`ambiqa sweep: llm.model: the server at ${server.url} does not serve model "late-typo" (its /models lists "gen-model"); fix: set llm.model to "gen-model"`);
    expect(server.requests).toHaveLength(0);
    expect(existsSync(join(artifacts, 'sweeps', 'sweep'))).toBe(false);
  });

  it('--skip-preflight skips it: the server is asked nothing before the first question', async () => {
    server.models = ['gen-model'];
    server.requests = [];
    const listingsBefore = server.modelListings;
    const r = await runCli(['run', config('skipped'), '--quiet', '--skip-preflight', '--limit', '1'], env);
    expect(r.code, r.output).toBe(ExitStatus.ok);
    // The provider's own lazy model check still reads /models once, with the first call.
    expect(server.modelListings - listingsBefore).toBe(1);
  });
});

describe('which pipelines the log-probability probe is for', () => {
  it('the registry names yes/no judges for every pipeline that thresholds one (imports src/pipelines/common/judge.ts), and for no other', () => {
    const pipelines = resolve(__dirname, '../../src/pipelines');
    const judging = readdirSync(pipelines, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'common')
      .filter((d) =>
        readdirSync(join(pipelines, d.name))
          .filter((f) => f.endsWith('.ts'))
          .some((f) => /from '\.\.\/common\/judge'/.test(readFileSync(join(pipelines, d.name, f), 'utf8'))),
      )
      .map((d) => d.name)
      .sort();
    expect(judging.length).toBeGreaterThan(0);
    const builtins = readdirSync(pipelines, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'common').map((d) => d.name);
    expect(pipelineNames.filter((p) => judgeLabels(p).length > 0).sort()).toEqual(judging);
    expect(builtins.length).toBeGreaterThan(judging.length);
    expect(judgeLabels('toc')).toEqual([['True', 'False']]);
  });
});
