/**
 * Keeps the k best (index, score) pairs seen so far in a binary min-heap over typed arrays, so a
 * search over N candidates costs O(N log k) and allocates nothing per candidate. Ties are broken
 * by the smaller index (earlier passage) so results are deterministic.
 */
export class TopK {
  private readonly ids: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(readonly k: number) {
    this.ids = new Int32Array(k);
    this.scores = new Float64Array(k);
  }

  /** a ranks below b: lower score, or the same score and a later index. */
  private worse(sa: number, ia: number, sb: number, ib: number): boolean {
    return sa < sb || (sa === sb && ia > ib);
  }

  /** The score a new candidate must beat once the heap is full (-Infinity before). */
  get threshold(): number {
    return this.size < this.k ? -Infinity : this.scores[0];
  }

  push(id: number, score: number): void {
    const { ids, scores } = this;
    if (this.size < this.k) {
      let i = this.size++;
      // sift up
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.worse(score, id, scores[parent], ids[parent])) break;
        ids[i] = ids[parent];
        scores[i] = scores[parent];
        i = parent;
      }
      ids[i] = id;
      scores[i] = score;
      return;
    }
    if (!this.worse(scores[0], ids[0], score, id)) return;
    // replace the root and sift down
    let i = 0;
    const n = this.size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.worse(scores[r], ids[r], scores[l], ids[l])) c = r;
      if (!this.worse(scores[c], ids[c], score, id)) break;
      ids[i] = ids[c];
      scores[i] = scores[c];
      i = c;
    }
    ids[i] = id;
    scores[i] = score;
  }

  /** Best first. */
  result(): { id: number; score: number }[] {
    const out: { id: number; score: number }[] = [];
    for (let i = 0; i < this.size; i++) out.push({ id: this.ids[i], score: this.scores[i] });
    out.sort((a, b) => b.score - a.score || a.id - b.id);
    return out;
  }
}
