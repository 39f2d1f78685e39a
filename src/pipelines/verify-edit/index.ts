/**
 * Verify-and-Edit (Zhao et al., ACL 2023; METHODS.md § VE), as the authors' released code runs it
 * (RuochenZhao/Verify-and-Edit `HotpotAdv/`; docs/pipelines.md, "Fidelity: Verify-and-Edit").
 *
 * 1. Sample n chains of thought (self-consistency) from fixed demos; the majority answer's votes
 *    (or, `consistency: logprob`, its samples' summed probabilities) decide.
 * 2. Score ≥ threshold → keep the majority answer. Otherwise edit the rationale of the most
 *    probable sample giving the majority answer: for each sentence, ask a verifying question,
 *    retrieve, keep the top sentences most similar to the question (sentence embedder), answer
 *    the question from them (3 demos), and put that answer in place of the sentence.
 * 3. Re-answer greedily from the edited rationale.
 */
import type { Example } from '../../datasets/types';
import { AmbiqaError } from '../../errors';
import { TraceRecorder } from '../../trace/recorder';
import { veSignals, type VeDecisions } from './decisions';
import { cotPrompt, cotWithRationalePrompt } from '../baselines/prompts';
import { sampleAdaptively } from '../common/adaptive';
import { checkAborted, requireEmbedder, requireRetriever, selectDemos } from '../common/context';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { readCotSample, type CotSample } from '../common/outputs';
import { CachingEmbedder } from '../common/retrieval';
import { resolveTask } from '../common/task';
import { dot, normaliseAnswer, splitSentences } from '../common/text';
import { majorityVote, mostProbableSample, probabilitySumVote, sampleProbability } from '../common/vote';
import { parseLongAnswer, parseQuestion } from '../parsing';
import type { Demo, Pipeline, PipelineContext, PipelineOutput } from '../types';
import { writtenDemos } from './demos';
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

    // 1. Self-consistency samples. Log-probabilities are asked for whenever a sample's probability
    // decides something: the logprob score, or which majority sample's rationale is edited.
    const { demos, source: demoSource } = await this.cotDemos(rec, ctx, example);
    const wantLogprobs = o.consistency === 'logprob' || o.editSample === 'most-probable';
    const request = {
      purpose: 've.cot',
      messages: cotPrompt(task, demos, example.question),
      n: o.n,
      temperature: o.temperature,
      maxTokens: o.maxTokens,
      stop: DEMO_STOPS,
      ...(wantLogprobs ? { logprobs: true } : {}),
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
    // Adaptive stopping reasons about vote counts; probability-summed scores draw the full budget.
    const adaptive = o.adaptive && o.consistency === 'vote';
    if (o.adaptive && !adaptive) rec.warn('ve.adaptive', 'adaptive stopping needs consistency: vote', `all ${o.n} samples`);
    const {
      logprobs,
      completionTokens,
      decision: adaptiveDecision,
    }: { logprobs: Array<number | undefined>; completionTokens: Array<number | undefined>; decision?: VeDecisions['adaptive'] } = await rec.span(
      'sample',
      { n: o.n, adaptive },
      async () => {
        if (adaptive) return sampleAdaptively(rec, ctx, request, read, threshold);
        const r = await callLlm(rec, ctx, request);
        read(r.texts, 0);
        return { logprobs: r.logprobs, completionTokens: r.completionTokens };
      },
    );
    const answers = samples.map((s) => s.answer);
    const probabilities = answers.map((_, i) => sampleProbability(logprobs[i], completionTokens[i]));
    const known = probabilities.filter((p) => p !== null).length;
    let consistencyMode: 'vote' | 'logprob' = o.consistency;
    if (o.consistency === 'logprob' && known !== answers.length) {
      rec.warn('ve.consistency', `the provider returned log-probabilities for ${known} of ${answers.length} samples`, 'majority vote');
      consistencyMode = 'vote';
    }
    const weighted = consistencyMode === 'logprob' ? probabilitySumVote(answers, probabilities as number[]) : null;
    const vote = weighted ?? majorityVote(answers);

    // The rationale to edit: the most probable sample among those giving the majority answer (the
    // released code's `consistency()`), or the first of them (option editSample: first).
    let editSample = o.editSample;
    if (editSample === 'most-probable' && known === 0 && vote.winnerIndex >= 0) {
      rec.warn('ve.edit-sample', 'no sample probabilities (the provider returned no log-probabilities)', 'the first sample giving the majority answer');
      editSample = 'first';
    }
    const editIndex = editSample === 'most-probable' && vote.winnerIndex >= 0 ? mostProbableSample(answers, probabilities, vote.winnerIndex) : vote.winnerIndex;

    const decisions: VeDecisions = {
      kind: 'verify-edit',
      samples: samples.map((s) => ({ rationale: s.rationale, answer: s.answer ?? '' })),
      votes: vote.votes,
      majorityAnswer: vote.answer,
      consistency: vote.consistency,
      thresholdScore: vote.winnerVotes,
      consistencyMode,
      ...(weighted ? { weightedVotes: weighted.weightedVotes } : {}),
      ...(known > 0 ? { sampleProbabilities: probabilities } : {}),
      editSample,
      ...(editIndex >= 0 ? { editedSampleIndex: editIndex } : {}),
      demoSource,
      ...(adaptiveDecision ? { adaptive: adaptiveDecision } : {}),
      threshold,
      edited: false,
      edits: [],
      finalAnswer: vote.answer,
      task,
    };
    const source = editIndex >= 0 ? samples[editIndex] : samples[0];
    const rationale = source?.rationale ?? '';

    // 2. Consistent enough: keep the majority answer (and, for auc_logprob, score it).
    if (vote.winnerVotes >= threshold) {
      const answer = vote.answer;
      if (o.answerLogprob && editIndex >= 0) await this.scoreAnswer(rec, ctx, task, demos, example.question, rationale, answer, decisions, sampling);
      return { output: answer, answer, ...veSignals(decisions), trace: rec.finish(decisions, answer, answer) };
    }

    // 3. Edit that rationale sentence by sentence.
    decisions.edited = true;
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
      const edit = await rec.span('edit sentence', { sentence: i }, () => this.editSentence(rec, ctx, embedder, example.question, sentence, sampling));
      decisions.edits.push(edit);
      edited.push(edit.answer);
    }
    const editedRationale = edited.join(' ');
    decisions.editedRationale = editedRationale;

    // 4. Re-answer (greedy) from the edited rationale; its log-probability ranks it for auc_logprob,
    // as the code ranks an edited answer by its re-answer's (`answer_again.py`).
    const final = await rec.span('answer', {}, () =>
      callLlm(rec, ctx, {
        purpose: 've.answer',
        messages: cotWithRationalePrompt(task, demos, example.question, editedRationale),
        temperature: 0,
        maxTokens: o.finalMaxTokens,
        stop: DEMO_STOPS,
        ...(o.answerLogprob ? { logprobs: true } : {}),
        ...sampling,
      }),
    );
    const reread = readCotSample(rec, task, final.texts[0], 've.answer', 0);
    let answer = reread.answer;
    if (answer === null) {
      answer = vote.answer;
      rec.warn('ve.answer', 'no answer after editing (parse failure recorded)', `majority answer "${answer}"`);
    } else if (o.answerLogprob && final.logprobs[0] !== undefined) {
      decisions.answerLogprob = final.logprobs[0];
    }
    decisions.finalAnswer = answer;
    return { output: answer, answer, ...veSignals(decisions), trace: rec.finish(decisions, answer, answer) };
  }

  /**
   * The CoT demos: ambiqa's written ones (fixed, as the released code's) or the dataset's pool
   * (kNN or fixed by `dataset.demoSelection`, gold supporting sentences as rationales).
   */
  private async cotDemos(rec: TraceRecorder, ctx: PipelineContext, example: Example): Promise<{ demos: Demo[]; source: 'written' | 'pool' }> {
    const o = this.options;
    const written = writtenDemos(example.dataset);
    const useWritten = o.cotDemos === 'written' || (o.cotDemos === 'auto' && written !== undefined);
    if (!useWritten) return { demos: await selectDemos(rec, ctx, this.name, example, o.nShots, 've.demos'), source: 'pool' };
    if (!written) {
      throw new AmbiqaError(
        `pipeline verify-edit: option cotDemos: written has demos for hotpotqa-adversarial only, not ${example.dataset}`,
        'set cotDemos: pool (or auto)',
      );
    }
    if (o.nShots > written.length) {
      throw new AmbiqaError(`pipeline verify-edit: option nShots (${o.nShots}) exceeds the ${written.length} written demos`, `set nShots ≤ ${written.length}, or cotDemos: pool`);
    }
    const demos = written.filter((d) => d.id !== example.id).slice(0, o.nShots);
    rec.useDemos(demos.map((d) => d.id));
    // The prompt lists demos in reverse (`inPromptOrder`: nearest last); reversed here, the prompt
    // shows them in file order, as the code's prompt does.
    return { demos: [...demos].reverse(), source: 'written' };
  }

  /**
   * The log-probability of an unedited question's answer, for `auc_logprob`: the greedy
   * conclusion from the edited-sample's own rationale, scored as an edited answer's re-answer is.
   * (The code reads the answer tokens' log-probabilities inside that sample; the providers here
   * return one sum per completion, so the conclusion is asked for on its own.) Its answer is
   * recorded when it is not the majority answer.
   */
  private async scoreAnswer(
    rec: TraceRecorder,
    ctx: PipelineContext,
    task: 'short' | 'fact',
    demos: Demo[],
    question: string,
    rationale: string,
    answer: string,
    decisions: VeDecisions,
    sampling: { topP: number; seed?: number },
  ): Promise<void> {
    const o = this.options;
    const r = await rec.span('answer-logprob', {}, () =>
      callLlm(rec, ctx, {
        purpose: 've.answer-logprob',
        messages: cotWithRationalePrompt(task, demos, question, rationale, 'Reasoning'),
        temperature: 0,
        maxTokens: o.finalMaxTokens,
        stop: DEMO_STOPS,
        logprobs: true,
        ...sampling,
      }),
    );
    const concluded = readCotSample(rec, task, r.texts[0], 've.answer-logprob', 0).answer;
    if (r.logprobs[0] === undefined) {
      rec.warn('ve.answer-logprob', 'the provider returned no log-probability', 'no answer log-probability (auc_logprob leaves the question out)');
      return;
    }
    decisions.answerLogprob = r.logprobs[0];
    if (concluded === null || normaliseAnswer(concluded) !== normaliseAnswer(answer)) decisions.answerLogprobAnswer = concluded ?? '';
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
    const searched = rec.now();
    const hits = await retriever.search(verifyingQuestion, o.retrievalK);
    rec.recordRetrieval('ve.retrieve', retriever.name, verifyingQuestion, o.retrievalK, hits, undefined, searched);
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
      messages: verifyingAnswerPrompt(verifyingQuestion, retrievedSentences, o.verifyAnswerShots),
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

