/**
 * Verify-and-Edit (Zhao et al., ACL 2023; METHODS.md § VE).
 *
 * 1. Sample n chains of thought (self-consistency); the majority answer's votes / n is its
 *    consistency.
 * 2. votes ≥ threshold → keep the majority answer. Otherwise edit the majority answer's rationale:
 *    for each sentence, ask a verifying question, retrieve, keep the top sentences most similar
 *    to the question (sentence embedder), answer the question from them, and put that answer in
 *    place of the sentence.
 * 3. Re-answer greedily from the edited rationale.
 */
import type { Example } from '../../datasets/types';
import { AmbiqaError } from '../../errors';
import { TraceRecorder } from '../../trace/recorder';
import type { VeDecisions } from './decisions';
import { cotPrompt, cotWithRationalePrompt } from '../baselines/prompts';
import { sampleAdaptively } from '../common/adaptive';
import { checkAborted, requireEmbedder, requireRetriever, selectDemos } from '../common/context';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { readCotSample, type CotSample } from '../common/outputs';
import { CachingEmbedder } from '../common/retrieval';
import { resolveTask } from '../common/task';
import { dot, splitSentences } from '../common/text';
import { majorityVote, weightedVote } from '../common/vote';
import { parseLongAnswer, parseQuestion } from '../parsing';
import type { Pipeline, PipelineContext, PipelineOutput } from '../types';
import type { VerifyEditOptions } from './options';
import { verifyingAnswerPrompt, verifyingQuestionPrompt } from './prompts';

export class VerifyEditPipeline implements Pipeline {
  readonly name = 'verify-edit' as const;

  constructor(readonly options: VerifyEditOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    const task = resolveTask(o.answerStyle, example);
    if (task === 'long') {
      throw new AmbiqaError(
        `pipeline verify-edit answers short questions and FEVER claims, not long-form ${example.dataset} questions`,
        'run it on hotpotqa-adversarial, 2wikimultihop or fever, or set answerStyle: short',
      );
    }
    const threshold = o.threshold ?? Math.ceil(o.n / 2);
    const mayEdit = threshold > 0;
    if (mayEdit) {
      requireRetriever(ctx, this.name);
      requireEmbedder(ctx, this.name, 'choosing retrieved sentences');
    }
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o, threshold };
    const sampling = { topP: o.topP, ...(o.seed !== undefined ? { seed: o.seed } : {}) };

    // 1. Self-consistency samples.
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 've.demos');
    const request = {
      purpose: 've.cot',
      messages: cotPrompt(task, demos, example.question),
      n: o.n,
      temperature: o.temperature,
      maxTokens: o.maxTokens,
      stop: DEMO_STOPS,
      ...(o.consistency === 'logprob' ? { logprobs: true } : {}),
      ...sampling,
    };
    // Each round's samples are read right after its call, so parse failures point at that call.
    const samples: CotSample[] = [];
    const read = (texts: string[], first: number) =>
      texts.map((t, j) => {
        const sample = readCotSample(rec, task, t, 've.cot', first + j);
        samples.push(sample);
        return sample.answer;
      });
    // Adaptive stopping reasons about vote counts; probability-weighted votes draw the full budget.
    const adaptive = o.adaptive && o.consistency === 'vote';
    if (o.adaptive && !adaptive) rec.warn('ve.adaptive', 'adaptive stopping needs consistency: vote', `all ${o.n} samples`);
    let logprobs: Array<number | undefined>;
    let adaptiveDecision: VeDecisions['adaptive'];
    if (adaptive) {
      const drawn = await sampleAdaptively(rec, ctx, request, read, threshold);
      logprobs = drawn.logprobs;
      adaptiveDecision = drawn.decision;
    } else {
      const r = await callLlm(rec, ctx, request);
      read(r.texts, 0);
      logprobs = r.logprobs;
    }
    const answers = samples.map((s) => s.answer);
    const known = logprobs.filter((lp): lp is number => lp !== undefined && Number.isFinite(lp));
    let consistencyMode: 'vote' | 'logprob' = o.consistency;
    if (o.consistency === 'logprob' && known.length !== answers.length) {
      rec.warn('ve.consistency', `the provider returned log-probabilities for ${known.length} of ${answers.length} samples`, 'majority vote');
      consistencyMode = 'vote';
    }
    const weighted = consistencyMode === 'logprob' ? weightedVote(answers, known) : null;
    const vote = weighted ?? majorityVote(answers);

    const decisions: VeDecisions = {
      kind: 'verify-edit',
      samples: samples.map((s) => ({ rationale: s.rationale, answer: s.answer ?? '' })),
      votes: vote.votes,
      majorityAnswer: vote.answer,
      consistency: vote.consistency,
      consistencyMode,
      ...(weighted ? { weightedVotes: weighted.weightedVotes } : {}),
      ...(adaptiveDecision ? { adaptive: adaptiveDecision } : {}),
      threshold,
      edited: false,
      edits: [],
      finalAnswer: vote.answer,
      task,
    };

    // 2. Consistent enough: keep the majority answer.
    if (vote.winnerVotes >= threshold) {
      const answer = vote.answer;
      return { output: answer, answer, trace: rec.finish(decisions, answer, answer) };
    }

    // 3. Edit the majority answer's rationale sentence by sentence.
    decisions.edited = true;
    const source = vote.winnerIndex >= 0 ? samples[vote.winnerIndex] : samples[0];
    const rationale = source?.rationale ?? '';
    decisions.majorityRationale = rationale;
    const sentences = splitSentences(rationale);
    if (sentences.length === 0) rec.warn('ve.edit', 'the majority rationale has no sentences to verify', 're-answer from it as is');
    if (sentences.length > o.maxEditedSentences) {
      rec.warn('ve.edit', `rationale has ${sentences.length} sentences; only the first ${o.maxEditedSentences} are verified`);
    }
    const embedder = new CachingEmbedder(ctx.embedder!);
    const edited: string[] = [];
    for (const [i, sentence] of sentences.entries()) {
      checkAborted(ctx);
      if (i >= o.maxEditedSentences) {
        edited.push(sentence);
        continue;
      }
      const edit = await this.editSentence(rec, ctx, embedder, example.question, sentence, sampling);
      decisions.edits.push(edit);
      edited.push(edit.answer);
    }
    const editedRationale = edited.join(' ');
    decisions.editedRationale = editedRationale;

    // 4. Re-answer (greedy) from the edited rationale.
    const final = await callLlm(rec, ctx, {
      purpose: 've.answer',
      messages: cotWithRationalePrompt(task, demos, example.question, editedRationale),
      temperature: 0,
      maxTokens: o.finalMaxTokens,
      stop: DEMO_STOPS,
      ...sampling,
    });
    const reread = readCotSample(rec, task, final.texts[0], 've.answer', 0);
    let answer = reread.answer;
    if (answer === null) {
      answer = vote.answer;
      rec.warn('ve.answer', 'no answer after editing (parse failure recorded)', `majority answer "${answer}"`);
    }
    decisions.finalAnswer = answer;
    return { output: answer, answer, trace: rec.finish(decisions, answer, answer) };
  }

  private async editSentence(
    rec: TraceRecorder,
    ctx: PipelineContext,
    embedder: CachingEmbedder,
    question: string,
    sentence: string,
    sampling: { topP: number; seed?: number },
  ): Promise<VeDecisions['edits'][number]> {
    const o = this.options;
    const vq = await callLlm(rec, ctx, {
      purpose: 've.verifying-question',
      messages: verifyingQuestionPrompt(question, sentence, o.verifyShots),
      temperature: 0,
      maxTokens: o.questionMaxTokens,
      stop: ['\n\n'],
      ...sampling,
    });
    let verifyingQuestion = parseQuestion(vq.texts[0]).text;
    if (verifyingQuestion === '') {
      rec.parseFailure('ve.verifying-question', 'empty verifying question', vq.texts[0], 'the rationale sentence as the query');
      verifyingQuestion = sentence;
    }

    const retriever = ctx.retriever!;
    const hits = await retriever.search(verifyingQuestion, o.retrievalK);
    rec.recordRetrieval('ve.retrieve', retriever.name, verifyingQuestion, o.retrievalK, hits);
    // Candidate sentences, each prefixed with its passage title so pronouns keep their subject.
    const candidates: Array<{ text: string; passageId: string }> = [];
    for (const h of hits) {
      for (const s of splitSentences(h.passage.text)) candidates.push({ text: `${h.passage.title}: ${s}`, passageId: h.passage.id });
    }
    if (candidates.length === 0) {
      rec.warn('ve.retrieve', `no passages for the verifying question "${verifyingQuestion}"`, 'sentence kept unedited');
      return { sentence, verifyingQuestion, retrievedSentences: [], answer: sentence, retrievedPassageIds: [] };
    }
    const [qv, ...sv] = await embedder.embed([verifyingQuestion, ...candidates.map((c) => c.text)]);
    const top = candidates
      .map((c, i) => ({ ...c, score: dot(qv, sv[i]), i }))
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, o.topSentences);
    const retrievedSentences = top.map((t) => t.text);

    const va = await callLlm(rec, ctx, {
      purpose: 've.verifying-answer',
      messages: verifyingAnswerPrompt(verifyingQuestion, retrievedSentences, o.verifyShots),
      temperature: 0,
      maxTokens: o.answerMaxTokens,
      stop: ['\n\n', '\nQuestion:', '\nFacts:'],
      ...sampling,
    });
    let answer = parseLongAnswer(va.texts[0]).text;
    if (answer === '') {
      rec.parseFailure('ve.verifying-answer', 'empty verifying answer', va.texts[0], 'sentence kept unedited');
      answer = sentence;
    }
    return {
      sentence,
      verifyingQuestion,
      retrievedSentences,
      answer,
      retrievedPassageIds: [...new Set(top.map((t) => t.passageId))],
    };
  }
}

