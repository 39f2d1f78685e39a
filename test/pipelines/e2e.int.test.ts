/**
 * End to end with the real embedded LLM (the GGUF of `ambiqa setup`), the real MiniLM embedder
 * and real BM25 retrieval over passages the shared data carries: every pipeline answers three
 * ASQA dev questions (Verify-and-Edit: three adversarial-HotpotQA questions) and leaves a
 * complete trace. Settings are small (1 shot, short generations, tiny trees) and the persistent
 * LLM cache is on, so a rerun replays instead of generating.
 *
 * The embedded model is tiny; these tests check that the machinery holds together on real model
 * output (formats broken in real ways included), not answer quality.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/datasets';
import type { Example } from '../../src/datasets/types';
import type { LlmClient } from '../../src/llm/client';
import { createLanguageModel } from '../../src/llm/config';
import { unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { buildDemoPool, KnnDemoSelector } from '../../src/pipelines/demos';
import { createPipeline } from '../../src/pipelines/registry';
import type { PipelineContext } from '../../src/pipelines/types';
import { Bm25Retriever } from '../../src/retrieval/bm25';
import { corpusFromPassages } from '../../src/retrieval/corpus';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { MiniLmEmbedder } from '../../src/retrieval/embedder';
import { manifestPath } from '../../src/config/models';
import type { BuiltinPipelineName } from '../../src/pipelines/registry';
import { builtinDecisionsSchema } from '../../src/pipelines/decisions';
import type { PipelineName, Trace } from '../../src/trace/types';
import { hasSharedData, sharedDataPath } from '../helpers/data';

const ASQA = ['asqa', 'ASQA_dev.json'];
const HOTPOT_DEV = ['hotpotqa-adversarial', 'sim_dev.json'];
const HOTPOT_TRAIN = ['hotpotqa-adversarial', 'sim_train.json'];

const hasModel = existsSync(manifestPath());
if (!hasModel) console.warn(`[skip] pipeline e2e: ${manifestPath()} is absent (run \`npx ambiqa setup\`)`);
const ready = hasModel && hasSharedData(...ASQA) && hasSharedData(...HOTPOT_DEV) && hasSharedData(...HOTPOT_TRAIN);

/** Cheap settings per pipeline: one shot, short generations, a three-node tree. */
// Keyed by the built-in names, so a new built-in pipeline without settings here fails to compile.
const SETTINGS: Record<Exclude<BuiltinPipelineName, 'verify-edit'>, Record<string, unknown>> = {
  'closed-book': { nShots: 1, maxTokens: 80 },
  'vanilla-rag': { nShots: 1, nPassages: 2, poolSize: 2, maxTokens: 80 },
  cot: { nShots: 1, maxTokens: 80 },
  'cot-sc': { nShots: 1, n: 3, maxTokens: 80 },
  toc: {
    nShots: 1,
    maxNodes: 3,
    maxDepth: 2,
    maxTrials: 2,
    nPassages: 2,
    poolSize: 10,
    expansionMaxTokens: 100,
    maxTokens: 80,
  },
  diva: { nShots: 1, maxInterpretations: 3, perInterpretationK: 5, nPassages: 2, diversifyMaxTokens: 80, maxTokens: 80 },
  // The LLM judges evidentiality; consistency (N² judge calls) uses embeddings here to stay cheap.
  combo: { nShots: 1, nPassages: 2, consistencyScorer: 'embedding', generateMaxTokens: 60, maxTokens: 80 },
};

// Verify-and-Edit retrieves only when it edits; its test checks that separately.
const RETRIEVAL: ReadonlySet<PipelineName> = new Set(['vanilla-rag', 'toc', 'diva', 'combo']);

/** What every trace must hold, whatever the model wrote. */
function expectCompleteTrace(trace: Trace, pipeline: PipelineName, example: Example): void {
  expect(trace.pipeline).toBe(pipeline);
  expect(trace.questionId).toBe(example.id);
  expect(trace.question).toBe(example.question);
  expect(trace.llm.provider).toBe('llama-cpp');
  expect(trace.llmCalls.length).toBeGreaterThan(0);
  expect(trace.summary.llmCalls).toBe(trace.llmCalls.length);
  trace.llmCalls.forEach((call, i) => {
    expect(call.index).toBe(i);
    expect(call.purpose.startsWith(pipeline === 'verify-edit' ? 've.' : `${pipeline}.`)).toBe(true);
    expect(call.messages.length).toBeGreaterThan(0);
    expect(call.completions.length).toBe(call.params.n);
    for (const c of call.completions) {
      expect(typeof c.text).toBe('string');
      expect(c.promptTokens).toBeGreaterThan(0);
      if (!c.cacheHit) expect(c.latencySeconds).toBeGreaterThan(0);
    }
    // Judgments on the embedded model are graded: read from next-token probabilities, never 0/1 text.
    if (call.judge) {
      expect(call.judge.mode).toBe('probability');
      expect(call.judge.p).toBeGreaterThan(0);
      expect(call.judge.p).toBeLessThan(1);
    }
  });
  const sum = (f: (c: Trace['llmCalls'][number]['completions'][number]) => number) =>
    trace.llmCalls.reduce((s, call) => s + call.completions.reduce((t, c) => t + f(c), 0), 0);
  expect(trace.summary.promptTokens).toBe(sum((c) => c.promptTokens!));
  expect(trace.summary.completionTokens).toBe(sum((c) => c.completionTokens!));
  expect(trace.summary.cacheHits).toBe(sum((c) => (c.cacheHit ? 1 : 0)));
  expect(trace.summary.seconds).toBeGreaterThan(0);
  if (RETRIEVAL.has(pipeline)) {
    expect(trace.retrievals.length).toBeGreaterThan(0);
    expect(trace.retrievals.some((r) => r.hits.length > 0)).toBe(true);
  } else if (pipeline !== 'verify-edit') {
    expect(trace.retrievals).toEqual([]);
  }
  for (const f of trace.parseFailures) {
    expect(f.llmCallIndex).toBeGreaterThanOrEqual(0);
    expect(f.llmCallIndex).toBeLessThan(trace.llmCalls.length);
    expect(f.fallback.length).toBeGreaterThan(0);
  }
  expect(trace.summary.parseFailures).toBe(trace.parseFailures.length);
  expect(trace.demoIds).not.toContain(example.id);
  // An empty output is only acceptable when it was recorded as a parse failure.
  if (trace.output.trim() === '') expect(trace.parseFailures.length).toBeGreaterThan(0);
  // Plain JSON: what traces.jsonl stores is what notebooks read back.
  expect(JSON.parse(JSON.stringify(trace))).toEqual(trace);
}

describe.skipIf(!ready)('pipelines end to end (embedded LLM, MiniLM, BM25)', () => {
  let llm: LlmClient;
  let embedder: MiniLmEmbedder;
  let asqaCtx: PipelineContext;
  let hotpotCtx: PipelineContext;
  let asqaQuestions: Example[];
  let hotpotQuestions: Example[];

  beforeAll(async () => {
    // The default cache file: reruns (and other tests asking the same) replay from it.
    // Default threads: vitest.config.ts pins AMBIQA_LLM_THREADS=1, as two threads beside another worker stall llama.cpp.
    llm = await createLanguageModel({ contextSize: 4096 });
    embedder = new MiniLmEmbedder();

    const asqa = loadDataset('asqa', sharedDataPath(...ASQA));
    asqaQuestions = asqa.slice(0, 3);
    const asqaCorpus = corpusFromPassages(buildCorpus([{ kind: 'asqa', path: sharedDataPath(...ASQA) }]).passages);
    asqaCtx = {
      llm,
      embedder,
      retriever: Bm25Retriever.create(asqaCorpus),
      // Leave-one-out demos from the dev split itself (a slice keeps pool embedding cheap).
      demos: new KnnDemoSelector(buildDemoPool(asqa.slice(0, 60)), embedder),
    };

    hotpotQuestions = loadDataset('hotpotqa-adversarial', sharedDataPath(...HOTPOT_DEV)).slice(0, 3);
    const hotpotCorpus = corpusFromPassages(
      buildCorpus([{ kind: 'hotpotqa-adversarial', path: sharedDataPath(...HOTPOT_DEV) }]).passages,
    );
    hotpotCtx = {
      llm,
      embedder,
      retriever: Bm25Retriever.create(hotpotCorpus),
      demos: new KnnDemoSelector(buildDemoPool(loadDataset('hotpotqa-adversarial', sharedDataPath(...HOTPOT_TRAIN))), embedder),
    };
  }, 600_000);

  afterAll(async () => {
    llm?.close();
    await unloadEmbeddedModels();
  });

  const asqaPipelines = Object.keys(SETTINGS) as Array<keyof typeof SETTINGS>;

  it.each(asqaPipelines)(
    '%s answers three ASQA questions with a complete trace',
    async (name) => {
      const pipeline = createPipeline(name, SETTINGS[name]);
      for (const example of asqaQuestions) {
        const out = await pipeline.answer(example, asqaCtx);
        expectCompleteTrace(out.trace, name, example);
        expect(out.output).toBe(out.trace.output);
        // The decisions parse with the pipeline's own schema (its registry entry's), typed by kind.
        const d = builtinDecisionsSchema.parse(out.trace.decisions);
        switch (d.kind) {
          case 'toc':
            expect(d.nodes[0]).toMatchObject({ id: 0, depth: 0, question: example.question, expanded: true });
            expect(d.nodes.every((n) => n.depth <= 2)).toBe(true);
            expect(d.validNodeIds.length).toBeLessThanOrEqual(3);
            expect(d.expansions.length).toBeGreaterThan(0);
            expect(out.trace.llmCalls.length).toBeLessThan(20);
            expect(out.trace.llmCalls.at(-1)!.purpose).toBe('toc.answer');
            break;
          case 'diva':
            expect(d.verdicts.length).toBe(d.interpretations.length);
            expect(d.route).toBe(d.usefulness === 'Useless' ? 'closed-book' : 'rag');
            break;
          case 'combo':
            expect(d.consistency.length).toBe(d.retrievedPassageIds.length);
            expect(d.compatibility.every((row) => row.length === d.generatedPassages.length)).toBe(true);
            expect(d.matching.length).toBe(d.retrievedPassageIds.length);
            break;
          case 'cot-sc':
            expect(d.samples.length).toBe(3);
            break;
          case 'baseline':
            if (name === 'vanilla-rag') expect(d.passageIds.length).toBeGreaterThan(0);
            break;
          default:
            throw new Error(`unexpected decisions ${d.kind} for ${name}`);
        }
      }
    },
    3_600_000,
  );

  it(
    'verify-edit answers three adversarial-HotpotQA questions with a complete trace',
    async () => {
      // threshold 3 of n 3: edits unless all samples agree, so the edit path runs on real output.
      const pipeline = createPipeline('verify-edit', {
        nShots: 2,
        n: 3,
        threshold: 3,
        maxTokens: 80,
        maxEditedSentences: 2,
        questionMaxTokens: 32,
        answerMaxTokens: 40,
        finalMaxTokens: 24,
      });
      for (const example of hotpotQuestions) {
        const out = await pipeline.answer(example, hotpotCtx);
        expectCompleteTrace(out.trace, 'verify-edit', example);
        const d = builtinDecisionsSchema.parse(out.trace.decisions);
        if (d.kind !== 'verify-edit') throw new Error('expected verify-edit decisions');
        expect(d.samples).toHaveLength(3);
        expect(Object.values(d.votes).reduce((s, v) => s + v, 0)).toBeLessThanOrEqual(3);
        expect(d.edited).toBe(Math.round(d.consistency * 3) < 3);
        // One retrieval per verified sentence; none when the majority was kept.
        expect(out.trace.retrievals.length).toBe(d.edits.length);
        // The kept answer's log-probability is one more call (answerLogprob, for auc_logprob).
        if (d.edited) expect(out.trace.llmCalls.at(-1)!.purpose).toBe('ve.answer');
        else expect(out.trace.llmCalls.map((c) => c.purpose)).toEqual(['ve.cot', 've.answer-logprob']);
        // The embedded model returns log-probabilities: the edited sample is the most probable one.
        expect(d.editSample).toBe('most-probable');
        expect(d.answerLogprob).toBeLessThanOrEqual(0);
        expect(out.answer).toBe(d.finalAnswer);
      }
    },
    3_600_000,
  );
});
