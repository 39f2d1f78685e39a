/**
 * Tree of Clarifications (Kim et al., EMNLP 2023; METHODS.md § ToC), as the authors' released
 * code runs it (gankim/tree-of-clarifications `run_toc.py`, `toc/`) unless an option says otherwise.
 * The search is a loop over small steps, one file each:
 *
 * - expand (`expand.ts`): RAC for a node — passages from the pool reranked for its question
 *   (`pool.ts`), kNN demos, one sampled call, DQ/DA pairs parsed.
 * - verify (`verify.ts`): the pairs become child nodes, deduplicated and, while pruning is on,
 *   judged True/False against one evidence passage (P(true) ≥ `pruneThreshold` keeps a node).
 * - un-prune (`unprune.ts`): the released search switches pruning off when expansions keep
 *   nothing for long enough; the restore after the search brings back pruned nodes nearest the
 *   root when too few remain.
 * - answer (`answer.ts`): one call with ≤ `answerNodes` valid pairs in BFS order.
 *
 * The searches (`search.ts`): `released` (restarts with the root and the valid nodes, pruning
 * switched off as the code does) and `stop-when-empty` (ambiqa's search before issue 34).
 * Choices where METHODS.md is silent are marked "CHOICE" and listed in docs/pipelines.md.
 */
import type { Example } from '../../datasets/types';
import type { TocDecisions } from './decisions';
import { passageHasAnswer } from '../common/answers';
import { checkAborted, requireRetriever } from '../common/context';
import type { Demo, Pipeline, PipelineContext, PipelineOutput } from '../types';
import { calibrationPairs, estimateBatchPriors, sampleCalibrationDemos, type CalibrationItem, type JudgePriors } from '../common/batch-prior';
import { answerTree } from './answer';
import type { TocOptions } from './options';
import { verifyPrompt } from './prompts';
import { releasedSearch, stopWhenEmptySearch } from './search';
import { openSession } from './session';
import { restorePruned } from './unprune';

export { findDuplicate, findValidDuplicate, isValidNode } from './tree';

export class TocPipeline implements Pipeline {
  readonly name = 'toc' as const;

  constructor(readonly options: TocOptions) {}

  async answer(example: Example, ctx: PipelineContext): Promise<PipelineOutput> {
    const o = this.options;
    requireRetriever(ctx, this.name);
    const s = openSession(o, example, ctx);
    const search = o.search === 'released' ? await releasedSearch(s) : await stopWhenEmptySearch(s);
    const restored = restorePruned(s);
    const answer = await answerTree(s);
    const decisions: TocDecisions = {
      kind: 'toc',
      search: o.search,
      nodes: s.nodes,
      expansions: s.expansions,
      stopReason: search.stopReason,
      validNodeIds: answer.answerNodes.map((n) => n.id),
      answerPassageIds: answer.passages.map((p) => p.id),
      unprunedNodeIds: restored.unprunedNodeIds,
      unpruneBlockedNodeIds: restored.unpruneBlockedNodeIds,
      ...(search.failedTrials !== undefined ? { failedTrials: search.failedTrials } : {}),
      ...(search.steps !== undefined ? { steps: search.steps } : {}),
      ...(search.restarts !== undefined ? { restarts: search.restarts } : {}),
      ...(search.pruningOffAtStep !== undefined ? { pruningOffAtStep: search.pruningOffAtStep } : {}),
      ...(search.depthSkips !== undefined && search.depthSkips.length > 0 ? { depthSkips: search.depthSkips } : {}),
      ...(s.pool.removedIds.length > 0 ? { removedPassageIds: [...s.pool.removedIds] } : {}),
    };
    const trace = s.rec.finish(decisions, answer.output);
    return { output: answer.output, trace };
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
        items.push({ purpose: 'toc.verify', labels: ['True', 'False'], messages: verifyPrompt(pair.demo.question, answer, evidence, o.verifyDemos, o.verifyWording) });
      }
    }
    return estimateBatchPriors(this.name, sample, o.calibrationSeed, items, ctx);
  }
}
