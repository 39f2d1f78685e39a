/**
 * Gold answers for a report: the "gold" column, ToC's pruning figure (node Answer-F1 needs the
 * gold disambiguations), figures that score answers, and compare's per-DQ hits. They come from
 * the rows: each results line carries its question's target (format 3), so a run folder shows its
 * gold on any machine, whatever question kind its dataset options selected.
 *
 * Fallback, for rows of formats 1 and 2 only (written before rows had a target): the dataset file
 * the run's config names (or `--data`), read with the run's own dataset options. A missing or
 * unreadable file only removes those rows' gold from the report, with a note saying why.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { dataDir } from '../config/paths';
import { loadDataset, type AsqaQuestionKind } from '../datasets/index';
import { datasetNames, type DatasetName, type Example, type QaPair } from '../datasets/types';
import { describeError } from '../errors';
import type { GoldDqs } from '../plots/methods';
import type { ExampleResult, QuestionTarget } from '../run-files';
import type { GoldInfo } from './render';

export interface GoldSet {
  info: Map<string, GoldInfo>;
  dqs: Map<string, QaPair[]> & GoldDqs;
  /** questionId → acceptable short answers (EM/F1 datasets; FEVER: the label). */
  answers: Map<string, string[]>;
  /** Where the gold came from, for notes: the rows, a dataset file, or both. */
  source: string;
}

/** The part of an example (or a row's target) the report shows and scores with. */
type GoldOf = Pick<QuestionTarget, 'answers' | 'longAnswers' | 'label' | 'alternativeAnswers'> & { qaPairs: readonly QaPair[] };

function addGold(set: GoldSet, id: string, gold: GoldOf): void {
  set.info.set(id, {
    answers: gold.answers,
    qaPairs: gold.qaPairs.map((q) => ({ question: q.question, shortAnswers: q.shortAnswers })),
    longAnswers: gold.longAnswers,
    ...(gold.label ? { label: gold.label } : {}),
  });
  if (gold.qaPairs.length > 0) set.dqs.set(id, gold.qaPairs as QaPair[]);
  // Alternative answers, where loaded, count as correct (as em_alt does) when figures score answers.
  const short = gold.answers.length > 0 ? [...gold.answers, ...(gold.alternativeAnswers ?? [])] : gold.label ? [gold.label] : [];
  if (short.length > 0) set.answers.set(id, short);
}

const emptyGold = (source: string): GoldSet => ({ info: new Map(), dqs: new Map(), answers: new Map(), source });

export function goldFromExamples(examples: readonly Example[], source: string): GoldSet {
  const set = emptyGold(source);
  for (const e of examples) addGold(set, e.id, e);
  return set;
}

/** The gold the rows carry (format 3), keyed by question id; rows without a target are left out. */
export function goldFromRecords(rows: readonly ExampleResult[], source = 'the rows of results.jsonl'): GoldSet {
  const set = emptyGold(source);
  for (const r of rows) if (r.target && !set.info.has(r.id)) addGold(set, r.id, r.target);
  return set;
}

/**
 * The gold of a run's (or a sweep's) rows: their targets, and for rows without one (formats 1 and
 * 2) the dataset file (`dataPath`, else the config's). `error` says why some or all gold is not
 * shown; `gold` is absent when none is known.
 */
export function goldForRows(
  rows: readonly ExampleResult[],
  config: Record<string, unknown>,
  dataPath?: string,
): { gold?: GoldSet; error?: string } {
  const fromRows = goldFromRecords(rows);
  const missing = rows.filter((r) => !fromRows.info.has(r.id));
  if (missing.length === 0) return rows.length > 0 ? { gold: fromRows } : {};
  const fallback = loadGoldForRun(config, dataPath);
  if ('error' in fallback) {
    if (fromRows.info.size === 0) return { error: fallback.error };
    return { gold: fromRows, error: `${new Set(missing.map((r) => r.id)).size} question(s) of rows written before format 3 (no target): ${fallback.error}` };
  }
  if (fromRows.info.size === 0) return { gold: fallback };
  for (const id of fallback.info.keys()) {
    if (fromRows.info.has(id)) continue;
    fromRows.info.set(id, fallback.info.get(id)!);
    const dqs = fallback.dqs.get(id);
    if (dqs) fromRows.dqs.set(id, dqs);
    const answers = fallback.answers.get(id);
    if (answers) fromRows.answers.set(id, answers);
  }
  return { gold: { ...fromRows, source: `${fromRows.source} and ${fallback.source}` } };
}

/**
 * The dataset behind a run, for rows without a target (formats 1 and 2): `dataPath` when given,
 * else the config's `dataset.path` (absolute, or relative to the data dir), loaded with the run's
 * dataset options (`split`, `questions`, `alternatives`) by the loader the run used. Returns the
 * reason instead when it cannot be read.
 */
export function loadGoldForRun(config: Record<string, unknown>, dataPath?: string): GoldSet | { error: string } {
  const dataset = (config.dataset ?? {}) as Record<string, unknown>;
  const name = typeof dataset.name === 'string' ? dataset.name : undefined;
  if (!name || !(datasetNames as readonly string[]).includes(name)) return { error: `the run's config names no known dataset (dataset.name: ${String(name)})` };
  let path = dataPath ?? (typeof dataset.path === 'string' ? dataset.path : undefined);
  if (!path) return { error: 'the run\'s config has no dataset.path' };
  if (!isAbsolute(path) && !existsSync(path)) path = join(dataDir(), path);
  if (!existsSync(path)) return { error: `dataset file ${path} not found (pass --data <file>)` };
  try {
    const examples = loadDataset(name as DatasetName, path, {
      ...(name === 'asqa' && typeof dataset.split === 'string' ? { split: dataset.split } : {}),
      ...(name === 'asqa' && typeof dataset.questions === 'string' ? { questions: dataset.questions as AsqaQuestionKind } : {}),
      // The alternative answers the run counted (em_alt), so re-scored answers count them too.
      ...(name === 'hotpotqa-adversarial' && typeof dataset.alternatives === 'string' && existsSync(dataset.alternatives) ? { alternatives: dataset.alternatives } : {}),
    });
    return goldFromExamples(examples, path);
  } catch (error) {
    return { error: `cannot read ${path}: ${describeError(error)}` };
  }
}
