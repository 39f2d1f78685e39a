/**
 * Diva: Diversify–Verify–Adapt (METHODS.md § Diva).
 *
 * 1. Retrieval diversification: the model names the ambiguity type (+ reason) and writes
 *    pseudo-interpretations; retrieve for each, take the union, keep the passages with the
 *    highest mean cosine similarity to all interpretations (src/retrieval/multi-query.ts).
 * 2. Retrieval verification: per interpretation, P(yes) that the passages answer it
 *    (`LanguageModel.judge`); it counts as answered when P(yes) ≥ `verifyThreshold`. All answered →
 *    Useful, none → Useless, otherwise PartialUseful (the paper's three labels).
 * 3. Adaptive generation: Useful / PartialUseful → RAG prompt; Useless → closed-book prompt.
 */
import type { Example } from '../../datasets/types';
import { MultiQueryRetriever } from '../../retrieval/multi-query';
import type { Passage, Retriever, ScoredPassage } from '../../retrieval/types';
import { TraceRecorder } from '../../trace/recorder';
import type { AmbiguityType, DivaDecisions, DivaUsefulness } from './decisions';
import { checkAborted, requireEmbedder, requireRetriever, selectDemos } from '../common/context';
import { CONTENT_FREE, contentFreePassage, judgeCalibrated } from '../common/judge';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { readFinalAnswer } from '../common/outputs';
import { CachingEmbedder } from '../common/retrieval';
import { resolveTask } from '../common/task';
import { parseAmbiguity } from '../parsing';
import type { Demo, Pipeline, PipelineContext, PipelineOutput } from '../types';
import { calibrationPairs, estimateBatchPriors, sampleCalibrationDemos, type CalibrationItem, type JudgePriors } from '../common/batch-prior';
import type { DivaOptions } from './options';
import { closedBookPrompt, diversifyPrompt, ragPrompt, verifyPrompt } from './prompts';

/** The usefulness label from per-interpretation verdicts. */
export function usefulness(verdicts: boolean[]): DivaUsefulness {
  if (verdicts.length > 0 && verdicts.every(Boolean)) return 'Useful';
  if (verdicts.every((v) => !v)) return 'Useless';
  return 'PartialUseful';
}

/** Records every per-interpretation search of the multi-query retriever in the trace. */
class RecordingRetriever implements Retriever {
  constructor(
    private readonly inner: Retriever,
    private readonly rec: TraceRecorder,
    private readonly purpose: string,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    const started = this.rec.now();
    const hits = await this.inner.search(query, k);
    this.rec.recordRetrieval(this.purpose, this.inner.name, query, k, hits, undefined, started);
    return hits;
  }
}

export class DivaPipeline implements Pipeline {
  readonly name = 'diva' as const;

  constructor(readonly options: DivaOptions) {}

  /**
   * `judgeCalibration: batch`: the retrieval judge's label prior over real inputs of its prompt,
   * from a seeded sample of pool questions: each of (up to two of) a question's gold
   * disambiguations asked against the passages retrieved for it (mostly answering) and against the
   * passages retrieved for another sampled question's disambiguation (not answering). CHOICE: plain
   * retrieval of `nPassages` per question, not the multi-query selection, which needs
   * interpretations the model has not written yet.
   */
  async calibrate(pool: readonly Demo[], ctx: PipelineContext): Promise<JudgePriors | null> {
    const o = this.options;
    if (o.judgeCalibration !== 'batch' || !o.verification) return null;
    const retriever = requireRetriever(ctx, this.name);
    const sample = sampleCalibrationDemos(pool, o.calibrationQuestions, o.calibrationSeed);
    const items: CalibrationItem[] = [];
    for (const pair of calibrationPairs(sample)) {
      checkAborted(ctx);
      for (const query of [pair.question, pair.other.question]) {
        const passages = (await retriever.search(query, o.nPassages)).map((h) => h.passage);
        items.push({ purpose: 'diva.verify', labels: ['Yes', 'No'], messages: verifyPrompt(pair.question, passages, o.verifyDemos) });
      }
    }
    return estimateBatchPriors(this.name, sample, o.calibrationSeed, items, ctx);
  }

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    const retriever = requireRetriever(ctx, this.name);
    const embedder = new CachingEmbedder(requireEmbedder(ctx, this.name, 'ranking passages against the interpretations'));
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const sampling = { topP: o.topP, ...(o.seed !== undefined ? { seed: o.seed } : {}) };
    // Demos first, so a missing pool fails before any model call.
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'diva.demos');


    // 1. Diversify: ambiguity type, reason, pseudo-interpretations.
    // Each step is a trace span (diversify, retrieve, verify, generate), so MLflow shows them as such.
    const div = await rec.span('diversify', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'diva.diversify',
        messages: diversifyPrompt(example.question, { ambiguous: o.diversifyExample, unambiguous: o.diversifyUnambiguousExample }),
        temperature: o.diversifyTemperature,
        maxTokens: o.diversifyMaxTokens,
        stop: ['\nQuestion:', '\n\nQuestion:'],
        ...sampling,
      }),
    );
    const parsed = parseAmbiguity(div.texts[0]);
    let ambiguityType: AmbiguityType = parsed.type ?? 'none';
    if (parsed.type === null) {
      rec.parseFailure('diva.diversify', parsed.problems.join('; '), div.texts[0], "ambiguity type 'none'");
      ambiguityType = 'none';
    }
    let found = parsed.interpretations;
    if (div.finishReasons[0] === 'length' && found.length > 1) {
      // The reply ran out of tokens: its last interpretation is probably cut mid-sentence.
      rec.warn('diva.diversify', `reply truncated at max tokens; last interpretation dropped: "${found.at(-1)}"`);
      found = found.slice(0, -1);
    }
    let interpretations = found.slice(0, o.maxInterpretations);
    // earlyExit: the model itself typed the question unambiguous (a parsed 'none', not the
    // fallback of an unreadable reply), so there is nothing to diversify or verify.
    const earlyExit = o.earlyExit && parsed.type === 'none';
    if (earlyExit) interpretations = [example.question];
    if (interpretations.length === 0) {
      rec.parseFailure('diva.diversify', 'no interpretations', div.texts[0], 'the question itself as the only interpretation');
      interpretations = [example.question];
    }

    // Multi-query retrieval: union of per-interpretation results, top nPassages by mean similarity.
    const multi = new MultiQueryRetriever(new RecordingRetriever(retriever, rec, 'diva.retrieve'), embedder, {
      perQueryK: o.perInterpretationK,
    });
    const selected = await rec.span('retrieve', { interpretations: interpretations.length }, async () => {
      const selecting = rec.now();
      const hits = await multi.searchMany(interpretations, o.nPassages);
      rec.recordRetrieval('diva.select', multi.name, interpretations.join(' | '), o.nPassages, hits, `mean-cosine:${embedder.name}`, selecting);
      return hits;
    });
    const passages: Passage[] = selected.map((s) => s.passage);
    if (passages.length === 0) rec.warn('diva.retrieve', 'no passages for any interpretation', 'retrieval judged Useless');

    // 2. Verify: does the passage set answer each interpretation?
    const verdicts: boolean[] = [];
    const pAnswered: number[] = [];
    const pAnsweredRaw: number[] = [];
    const pAnsweredPrior: number[] = [];
    if (!o.verification || earlyExit) {
      verdicts.push(...interpretations.map(() => passages.length > 0));
    } else if (passages.length === 0) {
      // Nothing to judge: every interpretation is unanswered without asking the model.
      verdicts.push(...interpretations.map(() => false));
      pAnswered.push(...interpretations.map(() => 0));
    } else {
      await rec.span('verify', { interpretations: interpretations.length }, async () => {
        for (const interpretation of interpretations) {
          checkAborted(ctx);
          const v = await judgeCalibrated(rec, ctx, {
            purpose: 'diva.verify',
            messages: verifyPrompt(interpretation, passages, o.verifyDemos),
            // Content-free twin: the interpretation and every passage replaced, the passage count kept.
            contentFree: () => ({ messages: verifyPrompt(CONTENT_FREE, passages.map((_, i) => contentFreePassage(i)), o.verifyDemos) }),
            labels: ['Yes', 'No'],
            calibration: o.judgeCalibration,
            fallback: 'No (not answered)',
          });
          pAnswered.push(v.p);
          if (v.pPrior !== undefined) {
            pAnsweredRaw.push(v.pRaw);
            pAnsweredPrior.push(v.pPrior);
          }
          verdicts.push(v.p >= o.verifyThreshold);
        }
      });
    }
    const label = usefulness(verdicts);

    // 3. Adapt: RAG unless retrieval was useless.
    const route: DivaDecisions['route'] = o.adaptive && label === 'Useless' ? 'closed-book' : 'rag';
    const gen = await rec.span('generate', { route }, () =>
      callLlm(rec, ctx, {
        purpose: route === 'rag' ? 'diva.generate.rag' : 'diva.generate.closed-book',
        messages:
          route === 'rag'
            ? ragPrompt(task, demos, example.question, interpretations, passages)
            : closedBookPrompt(task, demos, example.question, interpretations),
        temperature: o.temperature,
        maxTokens: o.maxTokens,
        stop: DEMO_STOPS,
        ...sampling,
      }),
    );
    const final = readFinalAnswer(rec, task, gen.texts[0], 'diva.generate');

    const decisions: DivaDecisions = {
      kind: 'diva',
      ambiguityType,
      ambiguityReason: parsed.reason,
      interpretations,
      verdicts,
      ...(o.verification && !earlyExit ? { pAnswered } : {}),
      ...(pAnsweredPrior.length > 0 ? { pAnsweredRaw, pAnsweredPrior } : {}),
      ...(earlyExit ? { earlyExit: true } : {}),
      usefulness: label,
      route,
      passageIds: passages.map((p) => p.id),
      passageScores: selected.map((s) => s.score),
    };
    const trace = rec.finish(decisions, final.output, final.answer);
    return { output: final.output, ...(final.answer !== undefined ? { answer: final.answer } : {}), trace };
  }
}
