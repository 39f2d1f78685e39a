import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { requireRetriever, selectDemos } from '../common/context';
import { readFinalAnswer } from '../common/outputs';
import { CachingEmbedder, chooseReranker, retrieveAndRerank } from '../common/retrieval';
import { resolveTask } from '../common/task';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import type { VanillaRagOptions } from './options';
import { ragPrompt } from './prompts';

/** Vanilla RAG: retrieve the top passages for the question, one call with them in the prompt. */
export class VanillaRagPipeline implements Pipeline {
  readonly name = 'vanilla-rag' as const;

  constructor(readonly options: VanillaRagOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    requireRetriever(ctx, this.name);
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const embedder = ctx.embedder ? new CachingEmbedder(ctx.embedder) : null;
    const reranker = o.poolSize > o.nPassages ? chooseReranker(ctx, o.reranker, embedder) : null;
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'vanilla-rag.demos');
    const { kept } = await rec.span('retrieve', {}, () =>
      retrieveAndRerank(rec, ctx, {
        purpose: 'vanilla-rag.retrieve',
        query: example.question,
        poolSize: o.poolSize,
        keep: o.nPassages,
        reranker,
      }),
    );
    const passages = kept.map((k) => k.passage);
    const { texts } = await rec.span('answer', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'vanilla-rag.answer',
        messages: ragPrompt(task, demos, example.question, passages),
        temperature: o.temperature,
        topP: o.topP,
        maxTokens: o.maxTokens,
        stop: DEMO_STOPS,
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
      }),
    );
    const final = readFinalAnswer(rec, task, texts[0], 'vanilla-rag.answer');
    const trace = rec.finish({ kind: 'baseline', passageIds: passages.map((p) => p.id) }, final.output, final.answer);
    return { output: final.output, ...(final.answer !== undefined ? { answer: final.answer } : {}), trace };
  }
}
