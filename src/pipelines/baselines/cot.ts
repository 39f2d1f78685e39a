import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { selectDemos } from '../common/context';
import { lastSentence, readCotSample } from '../common/outputs';
import { resolveTask } from '../common/task';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import type { CotOptions } from './options';
import { cotPrompt } from './prompts';

/** Few-shot chain of thought, greedy: rationale, then "So the answer is: …". */
export class CotPipeline implements Pipeline {
  readonly name = 'cot' as const;

  constructor(readonly options: CotOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'cot.demos');
    const { texts } = await rec.span('answer', {}, () =>
      callLlm(rec, ctx, {
        purpose: 'cot.answer',
        messages: cotPrompt(task, demos, example.question),
        temperature: o.temperature,
        topP: o.topP,
        maxTokens: o.maxTokens,
        stop: DEMO_STOPS,
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
      }),
    );
    const sample = readCotSample(rec, task, texts[0], 'cot.answer', 0);
    let answer = sample.answer;
    if (answer === null) {
      // Already counted as a parse failure; a short answer falls back to the last sentence.
      answer = task === 'fact' ? 'NOT ENOUGH INFO' : lastSentence(sample.rationale);
    }
    const trace = rec.finish(
      { kind: 'baseline', passageIds: [], rationale: sample.rationale },
      answer,
      task === 'long' ? undefined : answer,
    );
    return { output: answer, ...(task === 'long' ? {} : { answer }), trace };
  }
}
