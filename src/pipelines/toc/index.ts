/**
 * Tree of Clarifications (Kim et al., EMNLP 2023; METHODS.md § ToC).
 *
 * 1. RAC: for a node's question, retrieve a pool, rerank, keep `nPassages`; prompt with kNN demos
 *    and the passages; parse DQ/DA pairs.
 * 2. Breadth-first tree search from the ambiguous question; each new unique pair is a child.
 * 3. Self-verification: each new child is judged (P(true), `LanguageModel.judge`) against one
 *    evidence passage, chosen among every passage retrieved so far; a child is kept when
 *    P(true) ≥ `pruneThreshold`, and only kept children count as valid and are expanded further.
 *    An expansion that copies a few-shot demo's DQs instead of clarifying the question yields no
 *    node (`dropDemoCopies`).
 * 4. Un-pruning when too few valid nodes remain (never below P(true) `unpruneFloor`), then one
 *    answer call with ≤ `answerNodes` valid pairs in BFS order and passages that cover their answers.
 *
 * Choices where METHODS.md is silent are marked "CHOICE" and listed in docs/pipelines.md.
 */
import type { Example } from '../../datasets/types';
import type { Passage, Reranker, ScoredPassage } from '../../retrieval/types';
import { TraceRecorder } from '../../trace/recorder';
import type { TocDecisions, TocNode } from '../../trace/types';
import { passageHasAnswer } from '../common/answers';
import { checkAborted, requireRetriever, selectDemos } from '../common/context';
import { CONTENT_FREE, contentFreePassage, judgeCalibrated, priorCallsNeeded } from '../common/judge';
import { callLlm, DEMO_STOPS } from '../common/llm';
import { CachingEmbedder, chooseReranker, retrieveAndRerank, uniquePassages } from '../common/retrieval';
import { normaliseAnswer, normaliseQuestion } from '../common/text';
import { parseDisambiguations } from '../parsing';
import { pairsAsSentences, readLongAnswer } from '../common/outputs';
import type { Demo, Pipeline, PipelineContext, PipelineOutput } from '../types';
import { calibrationPairs, estimateBatchPriors, sampleCalibrationDemos, type CalibrationItem, type JudgePriors } from '../common/batch-prior';
import { detectDemoCopy } from './demo-copy';
import type { TocOptions } from './options';
import { answerPrompt, racPrompt, verifyPrompt } from './prompts';

/** A node that counts: not the root, not a duplicate, not skipped, not (currently) pruned. */
export function isValidNode(n: TocNode): boolean {
  return n.id !== 0 && !n.pruned && n.duplicateOf === undefined && n.skipped === undefined;
}

/**
 * ToC's dedup (released code `check_unique`): a pair duplicates an earlier node when the
 * questions are equal and the earlier answer is contained in the new one. CHOICE: compared
 * after normalisation, and against every earlier node (pruned ones too), so a pruned pair that
 * comes back is not verified a second time.
 */
export function findDuplicate(nodes: TocNode[], pair: { question: string; answer: string }): TocNode | undefined {
  const q = normaliseQuestion(pair.question);
  const a = normaliseAnswer(pair.answer);
  return nodes.find(
    (n) =>
      n.id !== 0 &&
      n.duplicateOf === undefined &&
      normaliseQuestion(n.question) === q &&
      a.includes(normaliseAnswer(n.answer ?? '')),
  );
}

export class TocPipeline implements Pipeline {
  readonly name = 'toc' as const;

  constructor(readonly options: TocOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    requireRetriever(ctx, this.name);
    const rec = new TraceRecorder(this.name, example, ctx.llm);
    rec.options = { ...o };
    const embedder = ctx.embedder ? new CachingEmbedder(ctx.embedder) : null;
    const reranker = chooseReranker(ctx, o.reranker, embedder);
    if (o.reranker !== 'none' && !reranker) {
      rec.warn('toc.rerank', 'no reranker and no embedder in the context', 'retriever order');
    }
    const sampling = { topP: o.topP, ...(o.seed !== undefined ? { seed: o.seed } : {}) };

    const root: TocNode = {
      id: 0,
      parentId: null,
      depth: 0,
      question: example.question,
      answer: null,
      bfsOrder: 0,
      expanded: false,
      verdict: null,
      pruned: false,
      unpruned: false,
    };
    const nodes: TocNode[] = [root];
    /** Passages shown in RAC prompts so far, in order. */
    let shown: Passage[] = [];
    /** Every passage retrieved so far (pools, before reranking): the evidence candidates. */
    let retrieved: Passage[] = [];
    let rootPool: ScoredPassage[] | null = null;
    const queue: number[] = [0];
    const expansions: TocDecisions['expansions'] = [];
    let failures = 0;
    let expansionCount = 0;
    let depthLimited = false;
    let stopReason: TocDecisions['stopReason'];
    const validCount = () => nodes.filter(isValidNode).length;
    const treeAnswers = () => nodes.filter((n) => n.answer !== null).map((n) => n.answer!);
    const demoFilter = () =>
      o.dropOverlappingDemos ? { excludeAnswers: treeAnswers(), overlapF1: o.demoOverlapF1 } : undefined;

    for (;;) {
      checkAborted(ctx);
      if (validCount() >= o.maxNodes) {
        stopReason = 'max-nodes';
        break;
      }
      if (failures >= o.maxTrials) {
        stopReason = 'max-trials';
        break;
      }
      if (expansionCount >= o.maxExpansions) {
        stopReason = 'max-expansions';
        break;
      }
      if (queue.length === 0) {
        stopReason = depthLimited ? 'max-depth' : 'queue-empty';
        break;
      }
      // One RAC call now and the final answer later must both fit the budget.
      if (rec.callCount + 2 > o.maxLlmCalls) {
        stopReason = 'max-calls';
        break;
      }
      const node = nodes[queue.shift()!];
      node.expanded = true;
      expansionCount += 1;

      // RAC step 1: passages for this node's question.
      let kept: ScoredPassage[];
      let pool: ScoredPassage[];
      if (node.id === 0 || o.retrievePerNode) {
        const r = await retrieveAndRerank(rec, ctx, {
          purpose: node.id === 0 ? 'toc.rac.retrieve.root' : 'toc.rac.retrieve',
          query: node.question,
          poolSize: o.poolSize,
          keep: o.nPassages,
          reranker,
        });
        if (node.id === 0) rootPool = r.pool;
        kept = r.kept;
        pool = r.pool;
      } else {
        pool = rootPool ?? [];
        kept = await this.rerankRootPool(rec, pool, node.question, reranker, ctx.retriever!.name);
      }
      const passages = kept.map((k) => k.passage);
      shown = uniquePassages([...shown, ...passages]);
      // This node's passages first (prompt order, then the rest of its pool), then earlier nodes'.
      retrieved = uniquePassages([...passages, ...pool.map((p) => p.passage), ...retrieved]);

      // RAC step 2: clarify.
      const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'toc.rac.demos', demoFilter());
      const { texts, callIndex } = await callLlm(rec, ctx, {
        purpose: 'toc.rac',
        messages: racPrompt(demos, node.question, passages),
        temperature: o.expansionTemperature,
        maxTokens: o.expansionMaxTokens,
        // CHOICE: the tree uses only the DQ/DA pairs, so generation stops where the RAC long answer
        // would begin; the pairs are the same tokens as without the stop, at half the decoding.
        stop: [...DEMO_STOPS, '\nAnswer:'],
        ...sampling,
      });
      const parsed = parseDisambiguations(texts[0]);
      const copy = o.dropDemoCopies
        ? detectDemoCopy(
            parsed.pairs.map((p) => p.question),
            [node.question, example.question],
            demos,
            o.demoCopyMargin,
          )
        : null;
      if (copy) {
        rec.warn(
          'toc.rac',
          `expansion of node ${node.id} repeats demo ${copy.demoId} (${Math.round(100 * copy.demoOverlap)}% of its DQ words ` +
            `are in the demo, ${Math.round(100 * copy.questionOverlap)}% in the question)`,
          'no nodes from this expansion',
        );
        expansions.push({
          nodeId: node.id,
          llmCallIndex: callIndex,
          newChildren: 0,
          failed: true,
          reason: `copied demo ${copy.demoId}`,
          copiedDemoId: copy.demoId,
        });
        failures += 1;
        continue;
      }
      if (parsed.pairs.length === 0) {
        const why =
          parsed.problems.join('; ') ||
          (parsed.longAnswer !== null ? 'the reply has a long answer but no DQ/DA lines' : texts[0].trim() === '' ? 'empty reply' : 'no DQ/DA lines');
        rec.parseFailure('toc.rac', `no DQ/DA pairs (${why})`, texts[0], 'expansion counted as failed');
      }

      // earlyExit: a root expansion whose pairs all give one answer (or one pair) found no
      // ambiguity to clarify; its pair goes straight to the answer, unverified, and the tree stops.
      const interpretations = new Set(parsed.pairs.map((p) => normaliseAnswer(p.answer))).size;
      if (o.earlyExit && node.id === 0 && parsed.pairs.length > 0 && interpretations <= 1) {
        const pair = parsed.pairs[0]!;
        nodes.push(childNode(nodes.length, node, pair, callIndex));
        expansions.push({ nodeId: 0, llmCallIndex: callIndex, newChildren: 1, failed: false, reason: 'one interpretation: early exit' });
        stopReason = 'unambiguous';
        break;
      }

      // Children, dedup, self-verification.
      let newValid = 0;
      let reason: string | undefined;
      const children: TocNode[] = [];
      for (const pair of parsed.pairs) {
        const child = childNode(nodes.length, node, pair, callIndex);
        children.push(child);
        const dup = findDuplicate(nodes, pair);
        if (dup) {
          child.duplicateOf = dup.id;
          nodes.push(child);
          continue;
        }
        if (validCount() >= o.maxNodes) {
          // CHOICE: stop verifying once the cap is reached; the rest of the batch would be cut anyway.
          child.skipped = 'max-nodes';
          nodes.push(child);
          continue;
        }
        if (o.pruning) {
          // The judgment (plus, the first time, its content-free prior when calibrating) and the
          // final answer must fit.
          const judgeCalls = 1 + priorCallsNeeded(rec, 'toc.verify', o.judgeCalibration);
          if (rec.callCount + judgeCalls + 1 > o.maxLlmCalls) {
            child.skipped = 'max-calls';
            nodes.push(child);
            reason = 'call budget reached before verification';
            continue;
          }
          const evidence = await this.pickEvidence(retrieved, shown, child, reranker);
          if (evidence) {
            child.evidencePassageId = evidence.id;
            child.evidenceHasAnswer = passageHasAnswer(evidence, child.answer!);
          }
          // The released code keeps a node only when "True" appears; an unreadable text reply
          // is likewise P(true) = 0, but counted as a parse failure.
          const v = await judgeCalibrated(rec, ctx, {
            purpose: 'toc.verify',
            messages: verifyPrompt(example.question, child.answer!, evidence, o.verifyDemos),
            // Content-free twin: question, answer and passage replaced (no passage stays no passage).
            contentFree: () => ({ messages: verifyPrompt(CONTENT_FREE, CONTENT_FREE, evidence ? contentFreePassage() : null, o.verifyDemos) }),
            labels: ['True', 'False'],
            calibration: o.judgeCalibration,
            fallback: 'False (pruned)',
          });
          child.verifyCallIndex = v.callIndex;
          child.pTrue = v.p;
          if (v.pPrior !== undefined) {
            child.pTrueRaw = v.pRaw;
            child.pTruePrior = v.pPrior;
          }
          child.verdict = v.p >= o.pruneThreshold;
          child.pruned = !child.verdict;
        }
        nodes.push(child);
        if (isValidNode(child)) {
          newValid += 1;
          if (child.depth < o.maxDepth) queue.push(child.id);
          else depthLimited = true;
        }
      }
      if (newValid === 0 && reason === undefined) {
        const count = (f: (n: TocNode) => boolean) => children.filter(f).length;
        reason =
          children.length === 0
            ? 'no pairs parsed'
            : `${count((n) => n.duplicateOf !== undefined)} duplicate, ${count((n) => n.pruned)} pruned, ` +
              `${count((n) => n.skipped !== undefined)} skipped`;
      }
      expansions.push({
        nodeId: node.id,
        llmCallIndex: callIndex,
        newChildren: newValid,
        failed: newValid === 0,
        ...(reason !== undefined ? { reason } : {}),
      });
      failures = newValid === 0 ? failures + 1 : 0;
    }

    // Un-pruning: restore pruned nodes nearest the root first until enough remain, but never a
    // node the judge rejected with confidence (P(true) below the floor). A text-mode verdict is
    // 0 or 1 and says nothing about confidence, so the floor applies to probability judgments only.
    const unprunedNodeIds: number[] = [];
    const unpruneBlockedNodeIds: number[] = [];
    if (o.pruning && validCount() < o.minValidNodes) {
      const candidates = nodes
        .filter((n) => n.pruned && n.verdict === false && n.duplicateOf === undefined && n.skipped === undefined)
        .sort((a, b) => a.depth - b.depth || a.bfsOrder - b.bfsOrder);
      for (const n of candidates) {
        if (validCount() >= o.minValidNodes) break;
        const confident = n.verifyCallIndex !== undefined && rec.llmCalls[n.verifyCallIndex]?.judge?.mode === 'probability';
        if (confident && (n.pTrue ?? 0) < o.unpruneFloor) {
          n.unpruneBlocked = true;
          unpruneBlockedNodeIds.push(n.id);
          continue;
        }
        n.pruned = false;
        n.unpruned = true;
        unprunedNodeIds.push(n.id);
      }
    }

    // Answer generation.
    checkAborted(ctx);
    const valid = nodes.filter(isValidNode).sort((a, b) => a.bfsOrder - b.bfsOrder);
    const answerNodes = valid.slice(0, o.answerNodes);
    const pairs = answerNodes.map((n) => ({ question: n.question, answer: n.answer! }));
    const answerPassages = await this.answerPassages(rec, shown, pairs, example.question, reranker);
    const demos = await selectDemos(rec, ctx, this.name, example, o.nShots, 'toc.answer.demos', demoFilter());
    const { texts } = await callLlm(rec, ctx, {
      purpose: 'toc.answer',
      messages: answerPrompt(demos, example.question, pairs, answerPassages),
      temperature: o.answerTemperature,
      maxTokens: o.maxTokens,
      stop: DEMO_STOPS,
      ...sampling,
    });
    // A reply that is DQ/DA lines again becomes the tree's valid pairs as sentences (a parse failure).
    let output = readLongAnswer(rec, texts[0], 'toc.answer', { fallbackPairs: pairs });
    if (output === '') {
      rec.parseFailure('toc.answer', 'empty long answer', texts[0], 'the valid DQ/DA pairs as sentences');
      output = pairsAsSentences(pairs);
    }

    const decisions: TocDecisions = {
      kind: 'toc',
      nodes,
      expansions,
      stopReason,
      validNodeIds: answerNodes.map((n) => n.id),
      answerPassageIds: answerPassages.map((p) => p.id),
      unprunedNodeIds,
      unpruneBlockedNodeIds,
      failedTrials: failures,
    };
    const trace = rec.finish(decisions, output);
    return { output, trace };
  }

  /**
   * `judgeCalibration: batch`: the verification judge's label prior over real inputs of its own
   * prompt, built from a seeded sample of pool questions: for each of (up to two of) a question's
   * gold disambiguations, the evidence the tree would pick — the best retrieved passage that
   * contains the answer, else the best passage — judged once with the gold answer (supported) and
   * once with another sampled question's answer (unsupported). CHOICE: evidence from the
   * disambiguated question's own retrieval, without the reranker: the tree's evidence comes from
   * many pools, and the prior only needs the judge's inputs to look like its real ones.
   */
  async calibrate(pool: readonly Demo[], ctx: PipelineContext): Promise<JudgePriors | null> {
    const o = this.options;
    if (o.judgeCalibration !== 'batch' || !o.pruning) return null;
    const retriever = requireRetriever(ctx, this.name);
    const sample = sampleCalibrationDemos(pool, o.calibrationQuestions, o.calibrationSeed);
    const items: CalibrationItem[] = [];
    for (const pair of calibrationPairs(sample)) {
      checkAborted(ctx);
      const hits = (await retriever.search(pair.question, o.poolSize)).map((h) => h.passage);
      const evidence = hits.find((p) => passageHasAnswer(p, pair.answer)) ?? hits[0] ?? null;
      for (const answer of [pair.answer, pair.other.answer]) {
        items.push({ purpose: 'toc.verify', labels: ['True', 'False'], messages: verifyPrompt(pair.demo.question, answer, evidence, o.verifyDemos) });
      }
    }
    return estimateBatchPriors(this.name, sample, o.calibrationSeed, items, ctx);
  }

  /** The released code's variant: rerank the root's pool for a child's question (no new retrieval). */
  private async rerankRootPool(
    rec: TraceRecorder,
    pool: ScoredPassage[],
    question: string,
    reranker: Reranker | null,
    retrieverName: string,
  ): Promise<ScoredPassage[]> {
    const n = this.options.nPassages;
    if (!reranker) return pool.slice(0, n);
    const kept = await reranker.rerank(question, pool, n);
    rec.recordRetrieval('toc.rac.rerank-root-pool', retrieverName, question, n, kept, reranker.name);
    return kept;
  }

  /**
   * Evidence for a child (METHODS.md: "the single best-ranked passage among those already
   * retrieved that contains the node's answer"): every passage retrieved so far — whole pools,
   * not only the few shown in prompts — that contains its answer, reranked against the child's
   * question; the best one. When none contains it, the best of the passages shown in prompts
   * (the pools' reranked tops; CHOICE: this bounds the reranking to a handful of passages).
   */
  private async pickEvidence(
    retrieved: Passage[],
    shown: Passage[],
    child: TocNode,
    reranker: Reranker | null,
  ): Promise<Passage | null> {
    if (retrieved.length === 0 && shown.length === 0) return null;
    const withAnswer = retrieved.filter((p) => passageHasAnswer(p, child.answer ?? ''));
    const candidates = withAnswer.length > 0 ? withAnswer : shown.length > 0 ? shown : retrieved;
    if (!reranker || candidates.length === 1) return candidates[0];
    const best = await reranker.rerank(
      child.question,
      candidates.map((passage, rank) => ({ passage, score: 0, rank })),
      1,
    );
    return best[0]?.passage ?? candidates[0];
  }

  /**
   * Passages for the answer prompt: first one answer-containing passage per valid pair (BFS
   * order, no repeats), then — CHOICE — the remaining slots filled with the best of the other
   * shown passages by the reranker, so covering passages are never displaced; finally all of
   * them ordered by the reranker against the ambiguous question.
   */
  private async answerPassages(
    rec: TraceRecorder,
    shown: Passage[],
    pairs: Array<{ question: string; answer: string }>,
    question: string,
    reranker: Reranker | null,
  ): Promise<Passage[]> {
    const n = this.options.nPassages;
    const covering: Passage[] = [];
    for (const pair of pairs) {
      if (covering.length >= n) break;
      const p = shown.find((s) => !covering.includes(s) && passageHasAnswer(s, pair.answer));
      if (p) covering.push(p);
    }
    const rest = shown.filter((p) => !covering.includes(p));
    const toScored = (ps: Passage[]) => ps.map((passage, rank) => ({ passage, score: 0, rank }));
    let chosen: ScoredPassage[];
    if (reranker) {
      const fill = covering.length < n ? await reranker.rerank(question, toScored(rest), n - covering.length) : [];
      const picked = [...covering, ...fill.map((f) => f.passage)];
      chosen = await reranker.rerank(question, toScored(picked), picked.length);
    } else {
      chosen = toScored([...covering, ...rest].slice(0, n));
    }
    rec.recordRetrieval('toc.answer.passages', 'toc-tree', question, n, chosen, reranker?.name);
    return chosen.map((c) => c.passage);
  }
}

/** A new, not yet verified node for a DQ/DA pair of `parent`'s expansion; ids follow BFS order. */
function childNode(id: number, parent: TocNode, pair: { question: string; answer: string }, callIndex: number): TocNode {
  return {
    id,
    parentId: parent.id,
    depth: parent.depth + 1,
    question: pair.question,
    answer: pair.answer,
    bfsOrder: id,
    expanded: false,
    verdict: null,
    pruned: false,
    unpruned: false,
    createdByCallIndex: callIndex,
  };
}
