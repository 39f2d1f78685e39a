/**
 * Answer coverage AC@k (METHODS.md): for each question, the fraction of its gold disambiguated
 * questions with at least one short answer contained (`hasAnswer`) in the top-k passages
 * retrieved for the ambiguous question; averaged over questions. One retrieval at the largest k
 * serves every k.
 */
import { existsSync, readFileSync } from 'node:fs';
import { AmbiqaError } from '../errors';
import { coverageAt, firstAnswerRanks, type CoverageItem } from './has-answer';
import { questionKey, type Retriever } from './types';
import { validateK } from './validate';

export interface CoverageResult {
  retriever: string;
  /** Leak control: `own` when each question's own annotated passages were excluded. */
  exclude: 'none' | 'own';
  questions: number;
  ks: number[];
  /** AC@k ×100, one per k. */
  coverage: number[];
  /** Per question: the first rank (0-based, -1 = not found) of each gold DQ's answers. */
  perQuestion: { id: string; firstRanks: number[] }[];
  seconds: number;
}

export async function measureCoverage(
  items: readonly CoverageItem[],
  retriever: Retriever,
  ks: readonly number[],
  onProgress?: (done: number, total: number) => void,
  options: { exclude?: 'none' | 'own'; dataset?: string } = {},
): Promise<CoverageResult> {
  const exclude = options.exclude ?? 'none';
  if (exclude === 'own' && !retriever.forQuestion) {
    throw new AmbiqaError(`coverage with exclude own needs a retriever with per-question views (got ${retriever.name})`, 'wrap it with withExclusion(retriever, corpus, "own")');
  }
  if (ks.length === 0) throw new AmbiqaError('no k values given', 'pass --k 5,10,20,50,100');
  ks.forEach((k) => validateK(k, '--k'));
  const sortedKs = [...new Set(ks)].sort((a, b) => a - b);
  const kMax = sortedKs[sortedKs.length - 1];
  const started = Date.now();
  const perQuestion: CoverageResult['perQuestion'] = [];
  const scored = items.filter((item) => item.answerSets.length > 0);
  for (let i = 0; i < scored.length; i++) {
    const item = scored[i];
    // With `own`, the question's view of the retriever: its own annotated passages left out.
    const view = exclude === 'own' ? retriever.forQuestion!(questionKey(options.dataset ?? 'asqa', item.id)) : retriever;
    const ranked = await view.search(item.question, kMax);
    perQuestion.push({ id: item.id, firstRanks: firstAnswerRanks(ranked, item.answerSets) });
    onProgress?.(i + 1, scored.length);
  }
  const coverage = sortedKs.map((k) => {
    if (perQuestion.length === 0) return 0;
    const sum = perQuestion.reduce((s, q) => s + coverageAt(q.firstRanks, k), 0);
    return (100 * sum) / perQuestion.length;
  });
  return {
    retriever: retriever.name,
    exclude,
    questions: perQuestion.length,
    ks: sortedKs,
    coverage,
    perQuestion,
    seconds: (Date.now() - started) / 1000,
  };
}

/**
 * ASQA questions as coverage items: the query is the ambiguous question; each `qa_pairs[]` entry
 * is one gold DQ whose `short_answers` count. Read from the official layout
 * `{"dev": {id: {ambiguous_question, qa_pairs: [...]}}}` (or any split key).
 */
export function readAsqaCoverageItems(path: string): CoverageItem[] {
  if (!existsSync(path)) throw new AmbiqaError(`ASQA file ${path} does not exist`, 'pass --data <path to ASQA json>');
  let root: unknown;
  try {
    root = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${path}: not valid JSON (${(error as Error).message})`, 'pass the ASQA file in its official layout');
  }
  const items: CoverageItem[] = [];
  for (const split of Object.values((root ?? {}) as Record<string, Record<string, any>>)) {
    if (typeof split !== 'object' || split === null) continue;
    for (const [id, ex] of Object.entries(split)) {
      if (typeof ex?.ambiguous_question !== 'string' || !Array.isArray(ex.qa_pairs)) {
        throw new AmbiqaError(`${path}: example ${id} lacks ambiguous_question/qa_pairs`, 'pass the ASQA file in its official layout');
      }
      const answerSets = ex.qa_pairs
        .map((qa: { short_answers?: unknown }) => (Array.isArray(qa.short_answers) ? qa.short_answers.filter((a): a is string => typeof a === 'string' && a.trim() !== '') : []))
        .filter((set: string[]) => set.length > 0);
      items.push({ id, question: ex.ambiguous_question, answerSets });
    }
  }
  if (items.length === 0) throw new AmbiqaError(`${path}: no ASQA questions found`, 'pass the ASQA file in its official layout');
  return items;
}
