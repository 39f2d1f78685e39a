import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { PROBE_MARK } from '../../src/experiments/preflight';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalog } from '../../src/config/catalog';
import { examplesDir } from '../../src/config/paths';
import { manifestPath, readModelManifest } from '../../src/config/models';
import { readJsonl } from '../../src/common/jsonl';
import type { ExperimentInput } from '../../src/experiments/config';
import { llmSettings } from '../../src/experiments/compose';
import { modelTags } from '../../src/experiments/run-page';
import { closeSession, runInProcess } from '../../src/experiments/session';
import { catalogModelFile } from '../../src/llm/config';
import { loadedEmbeddedModels, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { saveCorpus } from '../../src/retrieval/corpus';
import type { Trace } from '../../src/trace/types';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { trackingUri, uniqueName } from '../tracking/helpers';

/**
 * ToC end to end with a judge of its own, on one example question with a tiny tree: the 0.5B
 * embedded generator with (1) the catalog's 1.5B model as `judge:` — both GGUFs loaded once in
 * this process — and (2) an OpenAI-compatible judge on a loopback server that returns
 * top_logprobs. The 1.5B file is the catalog's default judge, fetched by a default `npx ambiqa
 * setup` (1.1 GB; `--skip-judge` leaves it out): without it that part is skipped, saying why. With
 * a real MLflow server (test/global-setup.ts, `.ci/run`) the 1.5B run is logged there and both
 * models' names are read back through MLflow's REST API.
 */
const JUDGE = 'qwen2.5-coder-1.5b-instruct-q4_k_m';
const hasGenerator = existsSync(manifestPath());
const judgeFile = catalogModelFile(JUDGE)!;
const hasJudge = hasGenerator && existsSync(judgeFile.path);
if (!hasGenerator) console.log(`skipping the embedded judge: runs: ${manifestPath()} is absent (run \`npx ambiqa setup\`)`);
else if (!hasJudge) console.log(`skipping the 1.5B judge run: ${judgeFile.path} is absent (npx ambiqa setup, or --fetch-llm ${JUDGE})`);
const mlflowUri = hasJudge ? trackingUri() : '';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-embedded-'));
const corpus = join(dir, 'corpus.jsonl');
const before = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };
const cache = { path: join(dir, 'llm-cache.sqlite') };

function config(judge: ExperimentInput['judge']): ExperimentInput {
  return {
    // Two fixed demonstrations show the model the DQ/DA format, so the expansion yields nodes to verify.
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 1, demoSelection: 'fixed' },
    pipeline: { name: 'toc', options: { maxNodes: 2, maxDepth: 1, maxTrials: 1, maxExpansions: 1, nPassages: 2, nShots: 2, pruning: true, expansionMaxTokens: 160, expansionTemperature: 0, maxTokens: 80 } },
    llm: { provider: 'embedded', threads: 1, contextSize: 2048, sequences: 2, cache },
    judge,
    retriever: { type: 'bm25', corpus },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  };
}

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  saveCorpus(corpus, buildCorpus([{ kind: 'asqa', path: join(examplesDir, 'asqa-mini.json') }]).passages);
});
afterAll(async () => {
  await closeSession();
  await unloadEmbeddedModels();
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', before.artifacts], ['AMBIQA_TRACKING', before.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasJudge)('ToC with the 0.5B generator and the 1.5B catalog model as judge (real models)', () => {
  it('runs end to end; judgments come from the 1.5B model, generations from the 0.5B; both named; each loaded once', async () => {
    const generator = readModelManifest().llm;
    const judge = { provider: 'embedded' as const, model: JUDGE, threads: 1, contextSize: 2048, sequences: 1, cache };
    const experiment = uniqueName('judge-1.5b');
    const tracked: ExperimentInput = mlflowUri ? { ...config(judge), tracking: { enabled: true, experiment } } : config(judge);
    const saved = { uri: process.env.MLFLOW_TRACKING_URI, tracking: process.env.AMBIQA_TRACKING };
    if (mlflowUri) {
      process.env.MLFLOW_TRACKING_URI = mlflowUri;
      delete process.env.AMBIQA_TRACKING;
    }
    let run: Awaited<ReturnType<typeof runInProcess>>;
    try {
      run = await runInProcess(tracked, { name: 'toc-judge-1.5b' });
    } finally {
      for (const [k, v] of [['MLFLOW_TRACKING_URI', saved.uri], ['AMBIQA_TRACKING', saved.tracking]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(run.status).toBe('FINISHED');
    expect(run.results[0]!.error).toBeUndefined();
    const [trace] = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    expect(trace!.llm).toEqual({ provider: 'llama-cpp', model: generator.sha256 });
    expect(trace!.judge).toEqual({ provider: 'llama-cpp', model: judgeFile.sha256 });
    const verify = trace!.llmCalls.filter((c) => c.purpose === 'toc.verify');
    expect(verify.length).toBeGreaterThan(0);
    for (const c of verify) {
      expect(c.model).toBe(`llama-cpp:${judgeFile.sha256}`);
      expect(c.judge!.mode).toBe('probability');
      expect(c.completions[0]!.promptTokens).toBeGreaterThan(50);
    }
    for (const c of trace!.llmCalls.filter((c) => c.purpose !== 'toc.verify')) expect(c.model).toBeUndefined();
    // MLflow: both models by name (tags from the trace), the judge's resolved settings as params.
    expect(modelTags(trace)).toMatchObject({ 'ambiqa.llm.model': generator.name, 'ambiqa.judge.model': JUDGE, 'ambiqa.judge.model_sha256': judgeFile.sha256 });
    expect(llmSettings(run.config.judge as never, 'judge')).toMatchObject({ 'judge.modelSha256': judgeFile.sha256, 'judge.engine': expect.stringMatching(/^node-llama-cpp@/) });
    // Two GGUFs, each loaded once for the process.
    expect(loadedEmbeddedModels().sort()).toEqual([generator.file, judgeFile.path].sort());
    if (!mlflowUri) return;
    // The run as a real MLflow server holds it, read through its REST API: both models named.
    const { runId } = JSON.parse(readFileSync(join(run.dir, 'mlflow.json'), 'utf8')) as { runId: string };
    const res = await fetch(`${mlflowUri}/api/2.0/mlflow/runs/get?run_id=${encodeURIComponent(runId)}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { run: { data: { params?: Array<{ key: string; value: string }>; tags?: Array<{ key: string; value: string }> } } };
    const params = Object.fromEntries((body.run.data.params ?? []).map((p) => [p.key, p.value]));
    const tags = Object.fromEntries((body.run.data.tags ?? []).map((t) => [t.key, t.value]));
    expect(params).toMatchObject({ 'llm.model': generator.name, 'judge.model': JUDGE, 'judge.modelSha256': judgeFile.sha256, 'llm.modelSha256': generator.sha256 });
    expect(tags).toMatchObject({ 'ambiqa.llm.model': generator.name, 'ambiqa.judge.model': JUDGE });
  });
});

describe.skipIf(!hasGenerator)('ToC with the 0.5B generator and an OpenAI-compatible judge on a loopback server (real generator)', () => {
  let server: FaultServer;
  beforeAll(async () => {
    server = await startFaultServer();
    server.replyFor = () => 'True';
    server.logprobsFor = () => ({
      content: [{ token: 'True', logprob: Math.log(0.7), top_logprobs: [{ token: 'True', logprob: Math.log(0.7) }, { token: 'False', logprob: Math.log(0.3) }] }],
    });
  });
  afterAll(async () => server?.close());

  it('runs end to end; every judgment reaches the server, none the embedded model', async () => {
    const judge = { provider: 'openai-compatible' as const, baseUrl: server.url, model: 'loopback-judge', apiKeyEnv: 'AMBIQA_TEST_JUDGE_KEY', cache };
    const run = await runInProcess(config(judge), { name: 'toc-judge-server' });
    expect(run.status).toBe('FINISHED');
    const [trace] = readJsonl<Trace>(join(run.dir, 'traces.jsonl'));
    expect(trace!.llm.provider).toBe('llama-cpp');
    expect(trace!.judge).toEqual({ provider: 'openai-compatible', model: 'loopback-judge' });
    const verify = trace!.llmCalls.filter((c) => c.purpose === 'toc.verify');
    expect(verify.length).toBeGreaterThan(0);
    // Besides the run's judgments the server saw one: the preflight's log-probability probe.
    const isProbe = (r: { body: unknown }) => JSON.stringify(r.body).includes(PROBE_MARK);
    expect(server.requests.filter(isProbe)).toHaveLength(1);
    expect(server.requests.filter((r) => r.body.logprobs === true && !isProbe(r))).toHaveLength(verify.filter((c) => !c.completions[0]!.cacheHit).length);
    for (const c of verify) {
      expect(c.model).toBe('openai-compatible:loopback-judge');
      expect(c.judge!.p).toBeCloseTo(0.7, 12);
    }
    expect(defaultCatalog.llms.some((e) => e.sha256 === trace!.llm.model)).toBe(true);
  });
});
