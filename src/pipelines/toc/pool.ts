/**
 * ToC's evidence: the passages each RAC prompt shows, the passages that leave the pool, the
 * verification evidence and the answer prompt's passages.
 *
 * Released code (gankim/tree-of-clarifications `run_toc.py`, `toc/rac.py`): one pool of top-100
 * passages is retrieved for the ambiguous question (`all_passages`); each expansion reranks the
 * *current* pool (`cur_passages`) against the node's question and shows the top 5 (kept in
 * `slt_psgs`); after an expansion, passages that were in its prompt and contain one of its new
 * answers leave the current pool (`remove_dup_psgs`). `retrievePerNode` retrieves a new pool
 * for every node instead (the paper's wording); removed passages are then left out of every
 * later pool.
 */
import type { Passage, Reranker, ScoredPassage } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import type { TocNode } from './decisions';
import { passageHasAnswer } from '../common/answers';
import { hasAnswer } from '../../retrieval/has-answer';
import { uniquePassages } from '../common/retrieval';
import type { PipelineContext } from '../types';
import type { TocOptions } from './options';

type PoolOptions = Pick<TocOptions, 'nPassages' | 'poolSize' | 'retrievePerNode' | 'evidenceFrom' | 'evidence' | 'answerSplit' | 'answerPassages'>;

const scored = (ps: Passage[]): ScoredPassage[] => ps.map((passage, rank) => ({ passage, score: 0, rank }));

export class TocPool {
  /** The ambiguous question's pool, retrieved at the first expansion (the code's `all_passages`). */
  private rootPool: Passage[] | null = null;
  /** Ids of the passages that left the pool (`remove_dup_psgs`), in the order they left. */
  readonly removedIds: string[] = [];
  private readonly removed = new Set<string>();
  /** Every passage shown in a RAC prompt, first-shown order (the code's `slt_psgs`, deduplicated). */
  shown: Passage[] = [];
  /** Every passage retrieved so far, whole pools (with one pool: `all_passages`). */
  retrieved: Passage[] = [];

  constructor(
    private readonly rec: TraceRecorder,
    private readonly ctx: PipelineContext,
    private readonly o: PoolOptions,
    private readonly reranker: Reranker | null,
  ) {}

  /** The passages the pool still holds (the code's `cur_passages`): the root pool minus the removed ones. */
  current(): Passage[] {
    return (this.rootPool ?? []).filter((p) => !this.removed.has(p.id));
  }

  /**
   * RAC step 1: the `nPassages` passages for a node's prompt. The first expansion (or every one,
   * with `retrievePerNode`) retrieves `poolSize` passages for the node's question; the others
   * rerank the current pool against the node's question.
   */
  async forNode(node: TocNode): Promise<Passage[]> {
    const n = this.o.nPassages;
    let candidates: Passage[];
    if (this.rootPool === null || this.o.retrievePerNode) {
      const retriever = this.ctx.retriever!;
      const purpose = this.rootPool === null ? 'toc.rac.retrieve.root' : 'toc.rac.retrieve';
      const started = this.rec.now();
      const hits = await retriever.search(node.question, this.o.poolSize);
      this.rec.recordRetrieval(purpose, retriever.name, node.question, this.o.poolSize, hits, undefined, started);
      if (hits.length === 0) this.rec.warn(purpose, `retriever ${retriever.name} returned no passages for "${node.question}"`, 'no passages');
      const pool = hits.map((h) => h.passage);
      if (this.rootPool === null) this.rootPool = pool;
      this.retrieved = uniquePassages([...this.retrieved, ...pool]);
      candidates = pool.filter((p) => !this.removed.has(p.id));
    } else {
      candidates = this.current();
    }
    const kept = await this.rank(node.question, candidates, n, node.id === 0 && this.shown.length === 0 ? 'toc.rac.retrieve.root.rerank' : 'toc.rac.rerank-pool');
    this.shown = uniquePassages([...this.shown, ...kept]);
    return kept;
  }

  /**
   * `dropAnsweredPassages` (released `remove_dup_psgs`): the passages of this prompt that contain
   * one of the expansion's answers leave the pool. Returns the ids removed now.
   */
  removeAnswered(context: readonly Passage[], answers: readonly string[]): string[] {
    const out: string[] = [];
    // `whole` (released `remove_dup_psgs`: `passage_has_answers(passage, answers)` with each DA
    // string whole); `semicolon`: ambiqa's reading before issue 41, each `;`-separated part.
    const contains = (p: Passage, a: string) => (this.o.answerSplit === 'semicolon' ? passageHasAnswer(p, a) : a.trim() !== '' && hasAnswer(p, [a.trim()]));
    for (const p of context) {
      if (this.removed.has(p.id)) continue;
      if (answers.some((a) => contains(p, a))) {
        this.removed.add(p.id);
        this.removedIds.push(p.id);
        out.push(p.id);
      }
    }
    return out;
  }

  /**
   * Verification evidence for a pair. `evidence: best-shown` (default; what the released code
   * effectively does): toc/pruning.py `get_evidence` filters the shown passages (`slt_psgs`) with
   * `passage_has_answers(passage, cur_qa['answer'])`, but passes the answer as a string, which dsp
   * iterates character by character, so every passage passes the filter; the evidence is the
   * shown passage the reranker puts first for the pair's *question*. `evidence: contains-answer`
   * (ambiqa before issue 41, METHODS.md's wording): the candidates (`evidenceFrom`) that really
   * contain the answer, reranked against the question; none → the best shown passage.
   */
  async evidence(pair: { question: string; answer: string }): Promise<Passage | null> {
    let candidates: Passage[];
    if (this.o.evidence === 'best-shown') {
      candidates = this.shown.length > 0 ? this.shown : this.retrieved;
    } else {
      const from = this.o.evidenceFrom === 'shown' ? this.shown : this.retrieved;
      const withAnswer = from.filter((p) => passageHasAnswer(p, pair.answer));
      candidates = withAnswer.length > 0 ? withAnswer : this.shown.length > 0 ? this.shown : this.retrieved;
    }
    if (candidates.length === 0) return null;
    if (!this.reranker || candidates.length === 1) return candidates[0]!;
    const best = await this.reranker.rerank(pair.question, scored(candidates), 1);
    return best[0]?.passage ?? candidates[0]!;
  }

  /**
   * Passages for the answer prompt. `cover` (METHODS.md; toc/tree.py `select_passages`): one
   * answer-containing shown passage per valid pair in BFS order, then — CHOICE — the free slots
   * filled with the reranker's best of the other shown passages, so covering passages are never
   * displaced; all ordered by the reranker against the ambiguous question. `pool` (run_toc.py):
   * the whole first pool (`all_passages`, removals ignored) reranked against the ambiguous question.
   */
  async forAnswer(question: string, pairs: ReadonlyArray<{ answer: string }>): Promise<Passage[]> {
    const n = this.o.nPassages;
    const started = this.rec.now();
    if (this.o.answerPassages === 'pool') return this.rank(question, this.rootPool ?? [], n, 'toc.answer.passages');
    const covering: Passage[] = [];
    for (const pair of pairs) {
      if (covering.length >= n) break;
      const p = this.shown.find((s) => !covering.includes(s) && passageHasAnswer(s, pair.answer));
      if (p) covering.push(p);
    }
    const rest = this.shown.filter((p) => !covering.includes(p));
    let chosen: Passage[];
    if (this.reranker) {
      const fill = covering.length < n && rest.length > 0 ? await this.reranker.rerank(question, scored(rest), n - covering.length) : [];
      const picked = [...covering, ...fill.map((f) => f.passage)];
      // No passage shown at all (an empty corpus or pool): the answer prompt goes without passages.
      chosen = picked.length === 0 ? [] : (await this.reranker.rerank(question, scored(picked), picked.length)).map((c) => c.passage);
    } else {
      chosen = [...covering, ...rest].slice(0, n);
    }
    this.rec.recordRetrieval('toc.answer.passages', 'toc-tree', question, n, scored(chosen), this.reranker?.name, started);
    return chosen;
  }

  /** The best `k` of `candidates` for `query` by the reranker (else in their order), recorded under `purpose`. */
  private async rank(query: string, candidates: Passage[], k: number, purpose: string): Promise<Passage[]> {
    if (!this.reranker || candidates.length === 0) {
      const top = candidates.slice(0, k);
      this.rec.recordRetrieval(purpose, this.ctx.retriever?.name ?? 'toc-pool', query, k, scored(top));
      return top;
    }
    const started = this.rec.now();
    const kept = await this.reranker.rerank(query, scored(candidates), k);
    this.rec.recordRetrieval(purpose, this.ctx.retriever?.name ?? 'toc-pool', query, k, kept, this.reranker.name, started);
    return kept.map((c) => c.passage);
  }
}
