/**
 * COMBO: compatibility-oriented matching of generated and retrieved knowledge (METHODS.md § COMBO).
 *
 * 1. Retrieve N passages (RP) and generate N background passages (LP).
 * 2. P(evidential) per RP, P(consistent) per (RP, LP) pair; compatibility = product.
 * 3. Hungarian matching maximising total compatibility; the reader sees the N pairs, generated
 *    passage before retrieved passage.
 */
import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import type { ComboDecisions } from '../../trace/types';
import { requireEmbedder, requireRetriever, selectDemos } from '../common/context';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { readFinalAnswer } from '../common/outputs';
import { CachingEmbedder, retrieveAndRerank } from '../common/retrieval';
import { resolveTask } from '../common/task';
import { parseLongAnswer } from '../parsing';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import { maxWeightAssignment } from './hungarian';
import type { ComboOptions } from './options';
import { generatePassagePrompt, readerPrompt, type ReaderPair } from './prompts';
import {
  EmbeddingConsistencyScorer,
  EmbeddingEvidentialityScorer,
  LlmConsistencyScorer,
  LlmEvidentialityScorer,
  type ConsistencyScorer,
  type EvidentialityScorer,
  type ScorerEnv,
} from './scorers';

/** Scorers to use instead of the ones the options name (e.g. trained discriminators). */
export interface ComboScorers {
  evidentiality?: EvidentialityScorer;
  consistency?: ConsistencyScorer;
}

export class ComboPipeline implements Pipeline {
  readonly name = 'combo' as const;

  constructor(
    readonly options: ComboOptions,
    private readonly scorers: ComboScorers = {},
  ) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    requireRetriever(ctx, this.name);
    const needsEmbedder =
      (!this.scorers.evidentiality && o.evidentialityScorer === 'embedding') ||
      (!this.scorers.consistency && o.consistencyScorer === 'embedding');
    const embedder = needsEmbedder ? new CachingEmbedder(requireEmbedder(ctx, this.name, 'embedding-based scorers')) : null;
    const evidentiality =
      this.scorers.evidentiality ??
      (o.evidentialityScorer === 'embedding' ? new EmbeddingEvidentialityScorer(embedder!) : new LlmEvidentialityScorer(o.judgeCalibration));
    const consistency =
      this.scorers.consistency ??
      (o.consistencyScorer === 'embedding' ? new EmbeddingConsistencyScorer(embedder!) : new LlmConsistencyScorer(o.judgeCalibration));

    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const sampling = { topP: o.topP, ...(o.seed !== undefined ? { seed: o.seed } : {}) };
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'combo.demos');

    // 1. N retrieved and N generated passages.
    const { kept } = await retrieveAndRerank(rec, ctx, {
      purpose: 'combo.retrieve',
      query: example.question,
      poolSize: o.nPassages,
      keep: o.nPassages,
      reranker: null,
    });
    const retrieved = kept.map((k) => k.passage);
    const gen = await callLlm(rec, ctx, {
      purpose: 'combo.generate',
      messages: generatePassagePrompt(example.question),
      n: o.nPassages,
      temperature: o.generateTemperature,
      maxTokens: o.generateMaxTokens,
      stop: ['\nQuestion:'],
      ...sampling,
    });
    const generated: string[] = [];
    gen.texts.forEach((t, i) => {
      const text = parseLongAnswer(t.replace(/^\s*passage\s*:\s*/i, '')).text;
      if (text === '') rec.parseFailure('combo.generate', `generated passage ${i} is empty`, t, 'passage dropped');
      else generated.push(text);
    });

    // 2. Scores and compatibility.
    const env: ScorerEnv = { rec, ctx };
    const ev = await evidentiality.score(example.question, retrieved, env);
    const skipRows = o.skipEvidentialBelow > 0 ? ev.map((e) => e < o.skipEvidentialBelow) : undefined;
    const cons = await consistency.score(example.question, retrieved, generated, env, skipRows);
    const compatibility = cons.map((row, i) => row.map((c) => (skipRows?.[i] ? 0 : c * ev[i])));

    // 3. Matching.
    let matching: number[];
    if (o.matching === 'hungarian') {
      matching = maxWeightAssignment(compatibility).rowToCol;
    } else {
      matching = retrieved.map((_, i) => (i < generated.length ? i : -1));
    }
    const matchingScore = matching.reduce((s, j, i) => (j >= 0 ? s + compatibility[i][j] : s), 0);
    if (retrieved.length === 0) rec.warn('combo.match', 'no retrieved passages to pair', 'reader sees generated passages only');

    const pairs: ReaderPair[] = retrieved.map((rp, i) => ({
      retrieved: rp,
      ...(matching[i] >= 0 ? { generated: generated[matching[i]] } : {}),
    }));
    const used = new Set(matching.filter((j) => j >= 0));
    generated.forEach((g, j) => {
      if (!used.has(j)) pairs.push({ generated: g });
    });

    const reader = await callLlm(rec, ctx, {
      purpose: 'combo.read',
      messages: readerPrompt(task, demos, example.question, pairs, o.pairOrder),
      temperature: o.temperature,
      maxTokens: o.maxTokens,
      stop: DEMO_STOPS,
      ...sampling,
    });
    const final = readFinalAnswer(rec, task, reader.texts[0], 'combo.read');

    const decisions: ComboDecisions = {
      kind: 'combo',
      generatedPassages: generated,
      retrievedPassageIds: retrieved.map((p) => p.id),
      evidentiality: ev,
      consistency: cons,
      compatibility,
      matching,
      scorers: { evidentiality: evidentiality.name, consistency: consistency.name },
      matchingScore,
      ...(skipRows ? { consistencySkipped: skipRows } : {}),
    };
    const trace = rec.finish(decisions, final.output, final.answer);
    return { output: final.output, ...(final.answer !== undefined ? { answer: final.answer } : {}), trace };
  }
}
