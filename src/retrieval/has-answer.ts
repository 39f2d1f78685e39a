/**
 * Answer containment as DPR defines it (`has_answer` with `match_type="string"` and its
 * `SimpleTokenizer`), which ToC's coverage numbers use:
 *
 * 1. Unicode-normalise both sides to NFD (so composed `é` and `e` + combining accent agree;
 *    accents are *not* stripped: `Sacré` does not contain `Sacre`).
 * 2. Tokens are runs of letters, digits and combining marks (`[\p{L}\p{N}\p{M}]+`), or any
 *    single character that is neither a separator nor a control/format character.
 * 3. Lower-case the tokens.
 * 4. The passage contains the answer when the answer's token sequence occurs, contiguously, in
 *    the passage's token sequence. Partial tokens never match: `Paris` is not in `Parisian`.
 *
 * One deliberate difference: DPR counts an answer that has no tokens at all (an empty string)
 * as contained in every passage; here it is contained in none, so a blank gold answer cannot
 * inflate coverage.
 */
import type { Passage, ScoredPassage } from './types';

const TOKEN = /[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]/gu;

/** DPR's uncased token sequence of `text`. */
export function answerTokens(text: string): string[] {
  const tokens = text.normalize('NFD').match(TOKEN);
  if (!tokens) return [];
  for (let i = 0; i < tokens.length; i++) tokens[i] = tokens[i].toLowerCase();
  return tokens;
}

/** True when `needle` occurs as a contiguous run inside `haystack`. */
function containsSequence(haystack: readonly string[], needle: readonly string[]): boolean {
  const n = needle.length;
  if (n === 0 || n > haystack.length) return false;
  const first = needle[0];
  outer: for (let i = 0; i + n <= haystack.length; i++) {
    if (haystack[i] !== first) continue;
    for (let j = 1; j < n; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * Passage texts tokenised recently. ToC checks every passage a question retrieved against each
 * new child's answer (evidence picking), so one passage is tokenised dozens of times per
 * question: that was the runner's largest CPU cost per call against an API endpoint
 * (docs/performance.md, "Against an API endpoint"). Bounded: cleared when full.
 */
const tokenMemo = new Map<string, readonly string[]>();
const TOKEN_MEMO_LIMIT = 4096;

function memoTokens(text: string): readonly string[] {
  let tokens = tokenMemo.get(text);
  if (!tokens) {
    if (tokenMemo.size >= TOKEN_MEMO_LIMIT) tokenMemo.clear();
    tokens = answerTokens(text);
    tokenMemo.set(text, tokens);
  }
  return tokens;
}

/**
 * Does the passage contain at least one of `answers`? As in DPR, only the passage's text is
 * searched, not its title or section.
 */
export function hasAnswer(passage: Passage | string, answers: readonly string[]): boolean {
  const text = typeof passage === 'string' ? passage : passage.text;
  return hasAnswerInTokens(memoTokens(text), answers.map(answerTokens));
}

/** The same test on pre-tokenised inputs, for loops that check many answers against one passage. */
export function hasAnswerInTokens(passageTokens: readonly string[], answers: readonly (readonly string[])[]): boolean {
  for (const answer of answers) if (containsSequence(passageTokens, answer)) return true;
  return false;
}

/** One question's gold: its disambiguated questions, each with its acceptable short answers. */
export interface CoverageItem {
  id: string;
  /** The query sent to the retriever (for ASQA, the ambiguous question). */
  question: string;
  /** One entry per gold DQ: the short answers that count for it. */
  answerSets: string[][];
}

/**
 * For each answer set, the 0-based rank of the first passage that contains one of its answers,
 * or -1 when none of `ranked` does. AC@k for every k follows from these ranks without
 * re-retrieving.
 */
export function firstAnswerRanks(ranked: readonly ScoredPassage[], answerSets: readonly string[][]): number[] {
  const passageTokens = ranked.map((r) => answerTokens(r.passage.text));
  return answerSets.map((set) => {
    const tokenised = set.map(answerTokens);
    for (let i = 0; i < passageTokens.length; i++) if (hasAnswerInTokens(passageTokens[i], tokenised)) return i;
    return -1;
  });
}

/** AC@k of one question: the fraction of its answer sets found within the first k passages. */
export function coverageAt(firstRanks: readonly number[], k: number): number {
  if (firstRanks.length === 0) return 0;
  let hit = 0;
  for (const r of firstRanks) if (r >= 0 && r < k) hit++;
  return hit / firstRanks.length;
}
