import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { selectDemos } from '../common/context';
import { readFinalAnswer } from '../common/outputs';
import { resolveTask } from '../common/task';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import type { ClosedBookOptions } from './options';
import { closedBookPrompt } from './prompts';

/** Closed-book few-shot: one call, no retrieval (ToC's "GPT-3 5-shot" row). */
export class ClosedBookPipeline implements Pipeline {
  readonly name = 'closed-book' as const;

  constructor(readonly options: ClosedBookOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'closed-book.demos');
    const { texts } = await rec.span('answer', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'closed-book.answer',
        messages: closedBookPrompt(task, demos, example.question),
        temperature: o.temperature,
        topP: o.topP,
        maxTokens: o.maxTokens,
        stop: DEMO_STOPS,
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
      }),
    );
    const final = readFinalAnswer(rec, task, texts[0], 'closed-book.answer');
    const trace = rec.finish({ kind: 'baseline', passageIds: [] }, final.output, final.answer);
    return { output: final.output, ...(final.answer !== undefined ? { answer: final.answer } : {}), trace };
  }
}
