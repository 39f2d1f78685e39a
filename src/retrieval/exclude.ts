/**
 * Leak control (`retriever.exclude: own`). The pooled corpus holds each evaluation question's own
 * annotated passages (ASQA's gold contexts and knowledge, a HotpotQA question's paragraphs, a
 * FEVER claim's evidence), which a closed-book method never sees; retrieving them inflates
 * retrieval methods. With `own`, the passages annotated for a question (`Passage.annotatedFor`,
 * recorded by the corpus builder) never reach that question's results: the retriever is asked
 * for k + (number of such passages) and they are dropped, so k passages still come back.
 * Works over any retriever (BM25, dense, hybrid, multi-query) and through the multi-query helper,
 * which searches the question's view.
 */
import { AmbiqaError } from '../errors';
import type { Corpus } from './corpus';
import type { Retriever, ScoredPassage } from './types';
import { validateK } from './validate';

export const EXCLUDE_MODES = ['none', 'own'] as const;
export type ExcludeMode = (typeof EXCLUDE_MODES)[number];

export class ExcludeOwnRetriever implements Retriever {
  readonly name: string;
  /** Question key → ids of the passages annotated for it. */
  private readonly owned = new Map<string, Set<string>>();

  /**
   * `annotations`: the corpus (its passages' `annotatedFor`), or the question → passage ids map
   * an on-disk index carries beside it (src/retrieval/lucene/index-dir.ts), so a 21M-passage
   * corpus is never loaded for leak control; `where` names that source in the refusal.
   */
  constructor(
    readonly base: Retriever,
    annotations: Corpus | Map<string, Set<string>>,
    where?: string,
  ) {
    if (annotations instanceof Map) {
      for (const [q, ids] of annotations) this.owned.set(q, ids);
    } else {
      for (const p of annotations.passages) {
        for (const q of p.annotatedFor ?? []) {
          let ids = this.owned.get(q);
          if (!ids) this.owned.set(q, (ids = new Set()));
          ids.add(p.id);
        }
      }
      where ??= `the corpus${annotations.path ? ` ${annotations.path}` : ''}`;
    }
    if (this.owned.size === 0) {
      throw new AmbiqaError(
        `retriever.exclude: own, but ${where ?? 'the index'} records no question annotations ("annotated_for")`,
        'rebuild it with `npx ambiqa corpus build` / `npx ambiqa index --from jsonl` from a corpus that has them (or leave retriever.corpus unset to pool the data), or use exclude: none',
      );
    }
    this.name = `${base.name} -own`;
  }

  /** Without a question nothing is excluded. */
  search(query: string, k: number): Promise<ScoredPassage[]> {
    return this.base.search(query, k);
  }

  /** How many passages a question's view leaves out. */
  excludedFor(questionKey: string): number {
    return this.owned.get(questionKey)?.size ?? 0;
  }

  forQuestion(questionKey: string): Retriever {
    const excluded = this.owned.get(questionKey);
    const base = this.base;
    return {
      name: this.name,
      async search(query: string, k: number): Promise<ScoredPassage[]> {
        validateK(k);
        if (!excluded) return base.search(query, k);
        const hits = await base.search(query, k + excluded.size);
        return hits
          .filter((h) => !excluded.has(h.passage.id))
          .slice(0, k)
          .map((h, rank) => ({ ...h, rank }));
      },
    };
  }
}

/** The retriever a run uses for `exclude`: as built (`none`), or wrapped for leak control (`own`). */
export function withExclusion(retriever: Retriever, annotations: Corpus | Map<string, Set<string>> | (() => Corpus | Map<string, Set<string>>), mode: ExcludeMode, where?: string): Retriever {
  if (mode !== 'own') return retriever;
  return new ExcludeOwnRetriever(retriever, typeof annotations === 'function' ? annotations() : annotations, where);
}
