/**
 * COMBO: compatibility-oriented matching of generated and retrieved knowledge (METHODS.md § COMBO),
 * as the authors' released code (yunx-z/COMBO) runs its main setting.
 *
 * 1. Retrieve N passages (RP) and generate N background passages (LP).
 * 2. P(evidential) per RP. Compatibility (`compatibility` option): `gated` (default, the code's
 *    `compatibility_2stage_optimal`) is 0 for an RP judged not evidential and P(consistent)
 *    otherwise, so consistency is judged only for evidential RPs; `product` (the code's
 *    `_product_label` ablation) judges all N² pairs and multiplies.
 * 3. Hungarian matching maximising total compatibility over N×N; the reader sees the N pairs
 *    sorted by compatibility, highest first, generated passage before retrieved passage.
 */
import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import type { ComboDecisions, ComboPair } from './decisions';
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
    const { kept } = await rec.span('retrieve', {}, () =>
      retrieveAndRerank(rec, ctx, {
        purpose: 'combo.retrieve',
        query: example.question,
        poolSize: o.nPassages,
        keep: o.nPassages,
        reranker: null,
      }),
    );
    const retrieved = kept.map((k) => k.passage);
    const gen = await rec.span('generate', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'combo.generate',
        messages: generatePassagePrompt(example.question),
        n: o.nPassages,
        temperature: o.generateTemperature,
        maxTokens: o.generateMaxTokens,
        stop: ['\nQuestion:'],
        ...sampling,
      }),
    );
    const generated: string[] = [];
    gen.texts.forEach((t, i) => {
      const text = parseLongAnswer(t.replace(/^\s*passage\s*:\s*/i, '')).text;
      if (text === '') rec.parseFailure('combo.generate', `generated passage ${i} is empty`, t, 'passage dropped');
      else generated.push(text);
    });

    // 2. Scores and compatibility.
    const env: ScorerEnv = { rec, ctx };
    const ev = await rec.span('evidentiality', {}, () => evidentiality.score(example.question, retrieved, env));
    const gated = o.compatibility === 'gated';
    // The gate: build_psg_pairs.py's convert_2stage sets a pair's score to 0 when its retrieved
    // passage's discriminator label is negative, and infer_compatibility_scores.py never scores
    // those pairs. A label is an argmax over two classes, i.e. P(evidential) against 0.5.
    // CHOICE: P exactly at the threshold counts as evidential (every ambiqa threshold keeps
    // P ≥ it); the code's argmax calls a 0.5 tie negative. An unreadable text-mode judgment
    // scores 0.5 here, so it opens the gate rather than silently closing a row.
    const skipRows = gated ? ev.map((e) => e < o.evidentialThreshold) : undefined;
    const cons = await rec.span('consistency', {}, () => consistency.score(example.question, retrieved, generated, env, skipRows));
    const compatibility = cons.map((row, i) => row.map((c) => (gated ? (skipRows![i] ? 0 : c) : c * ev[i])));

    // 3. Matching, and the pairs in the reader's order.
    const { pairs, matching } = matchPairs(compatibility, retrieved.length, generated.length, o);
    const matchingScore = pairs.reduce((s, p) => s + p.compatibility, 0);
    let readerPairs: ReaderPair[];
    if (retrieved.length === 0) {
      rec.warn('combo.match', 'no retrieved passages to pair', 'reader sees generated passages only');
      readerPairs = generated.map((g) => ({ generated: g }));
    } else if (generated.length === 0) {
      rec.warn('combo.match', 'no generated passages to pair', 'reader sees retrieved passages only, in retrieval order');
      readerPairs = retrieved.map((rp) => ({ retrieved: rp }));
    } else {
      readerPairs = pairs.map((p) => ({ retrieved: retrieved[p.retrieved], generated: generated[p.generated] }));
    }

    const reader = await rec.span('read', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'combo.read',
        messages: readerPrompt(task, demos, example.question, readerPairs, o.pairOrder),
        temperature: o.temperature,
        maxTokens: o.maxTokens,
        stop: DEMO_STOPS,
        ...sampling,
      }),
    );
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
      pairs,
    };
    const trace = rec.finish(decisions, final.output, final.answer);
    return { output: final.output, ...(final.answer !== undefined ? { answer: final.answer } : {}), trace };
  }
}

/**
 * The N pairs the reader sees, and `matching` (each retrieved passage's partner at its first
 * occurrence). As the released code does (build_psg_pairs.py: `resize_list`/`resize_matrix`),
 * both lists are brought to N by repeating them cyclically, so a generated passage dropped as
 * empty leaves its slot to a repeat rather than an unpaired passage; the judges scored each
 * distinct passage once. The pairs come in retrieval order, or sorted by compatibility, highest
 * first (the code sorts its matched pairs by score); the sort is stable, so ties keep retrieval
 * order (CHOICE: the code's ties keep the order its solver returned the matches in).
 */
export function matchPairs(
  compatibility: number[][],
  nRetrieved: number,
  nGenerated: number,
  o: Pick<ComboOptions, 'nPassages' | 'matching' | 'pairSort'>,
): { pairs: ComboPair[]; matching: number[] } {
  if (nRetrieved === 0 || nGenerated === 0) return { pairs: [], matching: new Array<number>(nRetrieved).fill(-1) };
  const size = Math.max(o.nPassages, nRetrieved, nGenerated);
  const r = Array.from({ length: size }, (_, k) => k % nRetrieved);
  const g = Array.from({ length: size }, (_, l) => l % nGenerated);
  const weights = r.map((i) => g.map((j) => compatibility[i][j]));
  // With every compatibility 0 (no passage evidential under the gate) any assignment is optimal;
  // the code's solver (hungarianalg) then pairs i with i, and so does this.
  const allZero = weights.every((row) => row.every((w) => w === 0));
  const assigned = o.matching === 'hungarian' && !allZero ? maxWeightAssignment(weights).rowToCol : r.map((_, k) => k);
  const pairs: ComboPair[] = r.map((i, k) => ({ retrieved: i, generated: g[assigned[k]], compatibility: weights[k][assigned[k]] }));
  const matching = Array.from({ length: nRetrieved }, (_, i) => pairs[i].generated);
  if (o.pairSort === 'compatibility') pairs.sort((a, b) => b.compatibility - a.compatibility);
  return { pairs, matching };
}
