import type { Example } from '../../datasets/types';
import { TraceRecorder } from '../../trace/recorder';
import { sampleAdaptively } from '../common/adaptive';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { selectDemos } from '../common/context';
import { readCotSample, type CotSample } from '../common/outputs';
import { resolveTask } from '../common/task';
import { majorityVote, medoidVote } from '../common/vote';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import type { CotScOptions } from './options';
import { cotPrompt } from './prompts';

/**
 * Chain of thought with self-consistency: n sampled chains (temperature 0.7), majority vote over
 * normalised answers; consistency = winner's votes / n. Long answers (ASQA) cannot agree
 * exactly, so there the medoid by token F1 wins (see common/vote.ts).
 */
export class CotScPipeline implements Pipeline {
  readonly name = 'cot-sc' as const;

  constructor(readonly options: CotScOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const task = resolveTask(o.answerStyle, example);
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'cot-sc.demos');
    const request = {
      purpose: 'cot-sc.sample',
      messages: cotPrompt(task, demos, example.question),
      n: o.n,
      temperature: o.temperature,
      topP: o.topP,
      maxTokens: o.maxTokens,
      stop: DEMO_STOPS,
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
    };
    const adaptive = o.adaptive && task !== 'long';
    if (o.adaptive && !adaptive) {
      rec.warn('cot-sc.adaptive', 'adaptive stopping needs exact-match votes; long answers are chosen by medoid', `all ${o.n} samples`);
    }
    // Each round's samples are read right after its call, so parse failures point at that call.
    const samples: CotSample[] = [];
    const read = (texts: string[], first: number) =>
      texts.map((t, j) => {
        const sample = readCotSample(rec, task, t, 'cot-sc.sample', first + j);
        samples.push(sample);
        return sample.answer;
      });
    const drawn = await rec.span('sample', { n: o.n, adaptive }, async () =>
      adaptive ? await sampleAdaptively(rec, ctx, request, read) : { decision: undefined, answers: read((await callLlm(rec, ctx, request)).texts, 0) },
    );
    const vote = (task === 'long' ? medoidVote : majorityVote)(samples.map((s) => s.answer));
    let answer = vote.answer;
    if (vote.winnerIndex < 0) {
      answer = task === 'fact' ? 'NOT ENOUGH INFO' : '';
      rec.warn('cot-sc.vote', 'every sample abstained (no answer parsed)', answer === '' ? 'empty answer' : answer);
    }
    const trace = rec.finish(
      {
        kind: 'cot-sc',
        samples: samples.map((s) => ({ rationale: s.rationale, answer: s.answer ?? '' })),
        votes: vote.votes,
        majorityAnswer: answer,
        consistency: vote.consistency,
        ...(drawn.decision ? { adaptive: drawn.decision } : {}),
      },
      answer,
      task === 'long' ? undefined : answer,
    );
    // The majority's vote share (long answers: the medoid's mean token F1) is the confidence `auc`
    // ranks by; the results row keeps it.
    return { output: answer, ...(task === 'long' ? {} : { answer }), confidence: vote.consistency, trace };
  }
}
