/** The retrieval contract shared by corpus builders, retrievers, rerankers and pipelines. */

/** A corpus passage, ~100 words, shown to models as `Title | Section; text`. */
export interface Passage {
  /** Stable across rebuilds: derived from the source and the text, never from a row number. */
  id: string;
  title: string;
  section?: string;
  text: string;
  /** Where it came from, e.g. `asqa:context`, `hotpotqa-adversarial`, `user`. */
  source?: string;
  /**
   * The evaluation questions whose annotation this passage comes from, as `<dataset>:<id>` (see
   * `questionKey`): e.g. an ASQA question's gold contexts and knowledge. `retriever.exclude: own`
   * keeps them out of that question's retrieval results (leak control).
   */
  annotatedFor?: string[];
}

/** How a question is named in `Passage.annotatedFor`: its dataset and its id. */
export function questionKey(dataset: string, id: string): string {
  return `${dataset}:${id}`;
}

export interface ScoredPassage {
  passage: Passage;
  score: number;
  /** 0-based rank in the list it was returned in. */
  rank: number;
}

export interface Retriever {
  /** e.g. `bm25`, `dense:minilm`, `hybrid(bm25+dense)`; recorded in traces and MLflow params. */
  readonly name: string;
  /** Top-k passages, best first. Throws an AmbiqaError naming `k` when k <= 0. */
  search(query: string, k: number): Promise<ScoredPassage[]>;
  /**
   * This retriever as one question sees it (`questionKey`): with `retriever.exclude: own`, without
   * the passages annotated for that question. The runner calls it once per question; absent means
   * every question sees the same retriever.
   */
  forQuestion?(questionKey: string): Retriever;
  /**
   * For an engine outside this process (a Lucene searcher, a ColBERTv2 or Anserini server, an
   * index file): checks it before any model call — reachable, answering in the expected shape,
   * the index readable — and throws an AmbiqaError of one line naming the URL, file or field.
   * Absent: nothing to check (an in-memory index).
   */
  preflight?(): Promise<void>;
  /**
   * What identifies this retriever's answers beyond its `name`: engine, index path and its
   * checksum or segment ids, server URL, settings. Logged as MLflow params (`retriever.*`) and
   * part of the persistent retrieval cache's key, so a rebuilt index never replays old hits.
   */
  describe?(): Record<string, string>;
  /** Release what it holds (a searcher process, a memory map). Absent: nothing to release. */
  close?(): Promise<void>;
}

export interface Reranker {
  readonly name: string;
  /** Re-score `candidates` against `query` and return the best `k`, best first. */
  rerank(query: string, candidates: ScoredPassage[], k: number): Promise<ScoredPassage[]>;
}

/** A sentence embedder (MiniLM by default). Vectors are L2-normalised. */
export interface Embedder {
  readonly name: string;
  readonly dimension: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** How passages are written into prompts everywhere. */
export function formatPassage(p: Passage): string {
  return p.section ? `${p.title} | ${p.section}; ${p.text}` : `${p.title}; ${p.text}`;
}
