/**
 * ROUGE-L and ROUGE-Lsum, number for number with Google's `rouge_score` (`RougeScorer(...,
 * use_stemmer=True)`), which ASQA's and ALCE's scorers call.
 *
 * Tokens (`rouge_score.tokenize`): lower-case; every run of characters outside `[a-z0-9]` becomes
 * a space; split on whitespace; Porter-stem (NLTK mode, porter.ts) tokens longer than 3
 * characters; keep tokens matching `^[a-z0-9]+$`.
 *
 * ROUGE-L: LCS of the two token sequences; P = LCS/|prediction|, R = LCS/|reference|,
 * F = 2PR/(P+R) (0 when P+R = 0, or when either side has no tokens).
 *
 * ROUGE-Lsum (summary-level LCS, Lin 2004 §3.2, as `_summary_level_lcs`): for each reference
 * sentence r, take one LCS (the one `_backtrack_norec` reads out) against every prediction
 * sentence and unite their positions in r; the union's tokens are hits, but each token type
 * counts at most as often as it still occurs in *both* texts (the counters are decremented per
 * hit — ROUGE 1.5.5's guard against counting a prediction token twice). P = hits/|prediction|,
 * R = hits/|reference| (token totals over all sentences).
 *
 * Sentences for ROUGE-Lsum: as ASQA/ALCE do, the text is lower-cased, split with Punkt
 * (`nltk.sent_tokenize`, sentences.ts), joined with newlines; `rouge_score` then splits on
 * newlines and drops empty strings.
 *
 * Several references: the reference with the highest F-measure (`score_multi`).
 */
import { porterStem } from '../text/porter';
import { defaultSentenceSplitter, type SentenceSplitter } from './sentences';
import type { MetricFamily, Score, SyncScorer } from './score';

export interface RougeScore {
  precision: number;
  recall: number;
  fmeasure: number;
}

const ZERO: RougeScore = { precision: 0, recall: 0, fmeasure: 0 };

const stemCache = new Map<string, string>();

function stem(token: string): string {
  let s = stemCache.get(token);
  if (s === undefined) {
    s = porterStem(token);
    if (stemCache.size > 200_000) stemCache.clear();
    stemCache.set(token, s);
  }
  return s;
}

/** `rouge_score.tokenize.tokenize(text, PorterStemmer())` (or without stemming). */
export function rougeTokenize(text: string, useStemmer = true): string[] {
  const spaced = text.toLowerCase().replace(/[^a-z0-9]+/g, ' ');
  const out: string[] = [];
  for (const raw of spaced.split(' ')) {
    if (!raw) continue;
    const t = useStemmer && raw.length > 3 ? stem(raw) : raw;
    if (/^[a-z0-9]+$/.test(t)) out.push(t);
  }
  return out;
}

export function fmeasure(precision: number, recall: number): number {
  return precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
}

/** The (|ref|+1)×(|can|+1) LCS length table, row-major. */
function lcsTable(ref: readonly string[], can: readonly string[]): Int32Array {
  const cols = can.length + 1;
  const t = new Int32Array((ref.length + 1) * cols);
  for (let i = 1; i <= ref.length; i++) {
    const r = ref[i - 1];
    for (let j = 1; j <= can.length; j++) {
      t[i * cols + j] = r === can[j - 1] ? t[(i - 1) * cols + j - 1] + 1 : Math.max(t[(i - 1) * cols + j], t[i * cols + j - 1]);
    }
  }
  return t;
}

export function lcsLength(ref: readonly string[], can: readonly string[]): number {
  if (ref.length === 0 || can.length === 0) return 0;
  return lcsTable(ref, can)[ref.length * (can.length + 1) + can.length];
}

/**
 * Positions in `ref` of ONE longest common subsequence with `can` — the one `rouge_score`'s
 * `_backtrack_norec` reads out (on a tie it moves up in `ref` rather than left in `can`). Which
 * LCS is chosen matters for the union in ROUGE-Lsum.
 */
export function lcsIndices(ref: readonly string[], can: readonly string[]): number[] {
  const cols = can.length + 1;
  const t = lcsTable(ref, can);
  const out: number[] = [];
  let i = ref.length;
  let j = can.length;
  while (i > 0 && j > 0) {
    if (ref[i - 1] === can[j - 1]) {
      out.push(i - 1);
      i--;
      j--;
    } else if (t[i * cols + j - 1] > t[(i - 1) * cols + j]) {
      j--;
    } else {
      i--;
    }
  }
  return out.reverse();
}

/** Tokens of `ref` at the union of its LCS positions with each candidate sentence, in order. */
export function unionLcs(ref: readonly string[], candidates: ReadonlyArray<readonly string[]>): string[] {
  const positions = new Set<number>();
  for (const c of candidates) for (const i of lcsIndices(ref, c)) positions.add(i);
  return [...positions].sort((a, b) => a - b).map((i) => ref[i]);
}

/** ROUGE-L on token sequences (`_score_lcs`). */
export function scoreLcs(reference: readonly string[], prediction: readonly string[]): RougeScore {
  if (reference.length === 0 || prediction.length === 0) return ZERO;
  const lcs = lcsLength(reference, prediction);
  const precision = lcs / prediction.length;
  const recall = lcs / reference.length;
  return { precision, recall, fmeasure: fmeasure(precision, recall) };
}

/** Summary-level union-LCS on tokenised sentences (`_summary_level_lcs`). */
export function summaryLevelLcs(referenceSentences: ReadonlyArray<readonly string[]>, predictionSentences: ReadonlyArray<readonly string[]>): RougeScore {
  if (referenceSentences.length === 0 || predictionSentences.length === 0) return ZERO;
  const m = referenceSentences.reduce((s, x) => s + x.length, 0);
  const n = predictionSentences.reduce((s, x) => s + x.length, 0);
  if (m === 0 || n === 0) return ZERO;
  const countRef = new Map<string, number>();
  const countPred = new Map<string, number>();
  for (const s of referenceSentences) for (const t of s) countRef.set(t, (countRef.get(t) ?? 0) + 1);
  for (const s of predictionSentences) for (const t of s) countPred.set(t, (countPred.get(t) ?? 0) + 1);
  let hits = 0;
  for (const r of referenceSentences) {
    for (const t of unionLcs(r, predictionSentences)) {
      const cp = countPred.get(t) ?? 0;
      const cr = countRef.get(t) ?? 0;
      if (cp > 0 && cr > 0) {
        hits++;
        countPred.set(t, cp - 1);
        countRef.set(t, cr - 1);
      }
    }
  }
  const precision = hits / n;
  const recall = hits / m;
  return { precision, recall, fmeasure: fmeasure(precision, recall) };
}

/** ROUGE-L (no sentence split) between two texts. */
export function rougeL(reference: string, prediction: string): RougeScore {
  return scoreLcs(rougeTokenize(reference), rougeTokenize(prediction));
}

/**
 * The sentences `rouge_score` sees for ROUGE-Lsum after ASQA/ALCE's preprocessing:
 * `"\n".join(sent_tokenize(text.lower()))`, split on newlines, empty strings dropped.
 */
export function lsumSentences(text: string, splitter: SentenceSplitter): string[] {
  return splitter
    .split(text.toLowerCase())
    .join('\n')
    .split('\n')
    .filter((s) => s.length > 0);
}

/** ROUGE-Lsum between two texts, sentences split by `splitter` (default: Punkt from the data dir). */
export function rougeLsum(reference: string, prediction: string, splitter: SentenceSplitter = defaultSentenceSplitter()): RougeScore {
  return summaryLevelLcs(
    lsumSentences(reference, splitter).map((s) => rougeTokenize(s)),
    lsumSentences(prediction, splitter).map((s) => rougeTokenize(s)),
  );
}

/** The best F-measure over the references (0 when there are none). */
export function maxFOverReferences(references: readonly string[], prediction: string, score: (reference: string, prediction: string) => RougeScore): number {
  let best = 0;
  for (const r of references) best = Math.max(best, score(r, prediction).fmeasure);
  return best;
}

const NO_REFERENCES = 'no reference long answers';

/** ROUGE-L F (max over reference long answers), 0–100; null without references. */
export const RougeL: SyncScorer<string, readonly string[]> = ({ output, expected }): Score => ({
  name: 'rougeL',
  score: expected.length === 0 ? null : 100 * maxFOverReferences(expected, output, rougeL),
  ...(expected.length === 0 ? { reason: NO_REFERENCES } : {}),
});


/** ROUGE-Lsum F (max over reference long answers), 0–100; the splitter is named in the metadata. */
export const RougeLsum: SyncScorer<string, readonly string[], { splitter?: SentenceSplitter }> = ({ output, expected, splitter }): Score => {
  const s = splitter ?? defaultSentenceSplitter();
  return {
    name: 'rougeLsum',
    score: expected.length === 0 ? null : 100 * maxFOverReferences(expected, output, (r, p) => rougeLsum(r, p, s)),
    metadata: { sentence_splitter: s.name },
    ...(expected.length === 0 ? { reason: NO_REFERENCES } : {}),
  };
};

/** Registry entry: ROUGE-L and ROUGE-Lsum of ASQA long answers against the reference long answers. */
export const rougeFamily: MetricFamily<'rougeL' | 'rougeLsum'> = {
  family: 'rouge',
  reference: "Lin 2004; Google rouge_score (use_stemmer=True) with ASQA/ALCE's Punkt preprocessing for rougeLsum",
  metrics: ['rougeL', 'rougeLsum'],
  datasets: ['asqa'],
  defaults: ['rougeLsum', 'rougeL'],
  splitsSentences: ['rougeLsum'],
  score: ({ text, example, splitter }, want) => [
    ...(want.has('rougeL') ? [RougeL({ output: text, expected: example.longAnswers })] : []),
    ...(want.has('rougeLsum') ? [RougeLsum({ output: text, expected: example.longAnswers, ...(splitter ? { splitter } : {}) })] : []),
  ],
};
