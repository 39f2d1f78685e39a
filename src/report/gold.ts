/**
 * Gold answers for a report, read from the dataset file the run's config names (results carry
 * only scores). Used for the "gold" column and for ToC's pruning figure (node Answer-F1 needs the
 * gold disambiguations). A missing or unreadable file only removes those parts of the report.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { dataDir } from '../config/paths';
import { loadAlternativeAnswers } from '../datasets/alternative-answers';
import { loadAmbigNq } from '../datasets/ambignq';
import { loadAsqa } from '../datasets/asqa';
import { loadFever } from '../datasets/fever';
import { loadHotpotQaAdversarial } from '../datasets/hotpotqa-adversarial';
import { loadSituatedQa } from '../datasets/situatedqa';
import { loadTwoWikiMultihop } from '../datasets/two-wiki-multihop';
import type { Example } from '../datasets/types';
import { describeError } from '../errors';
import type { GoldDqs } from '../plots/methods';
import type { GoldInfo } from './render';

export interface GoldSet {
  info: Map<string, GoldInfo>;
  dqs: GoldDqs;
  /** questionId → acceptable short answers (EM/F1 datasets; FEVER: the label). */
  answers: Map<string, string[]>;
  source: string;
}

const loaders: Record<string, (path: string, split?: string) => Example[]> = {
  asqa: (path, split) => loadAsqa(path, split),
  ambignq: (path) => loadAmbigNq(path),
  situatedqa: (path) => loadSituatedQa(path),
  'hotpotqa-adversarial': (path) => loadHotpotQaAdversarial(path),
  '2wikimultihop': (path) => loadTwoWikiMultihop(path),
  fever: (path) => loadFever(path),
};

export function goldFromExamples(examples: readonly Example[], source: string): GoldSet {
  const info = new Map<string, GoldInfo>();
  const dqs = new Map<string, Example['qaPairs']>();
  const answers = new Map<string, string[]>();
  for (const e of examples) {
    info.set(e.id, {
      answers: e.answers,
      qaPairs: e.qaPairs.map((q) => ({ question: q.question, shortAnswers: q.shortAnswers })),
      longAnswers: e.longAnswers,
      ...(e.label ? { label: e.label } : {}),
    });
    if (e.qaPairs.length > 0) dqs.set(e.id, e.qaPairs);
    // Alternative answers, where loaded, count as correct (as em_alt does) when figures score answers.
    const short = e.answers.length > 0 ? [...e.answers, ...(e.alternativeAnswers ?? [])] : e.label ? [e.label] : [];
    if (short.length > 0) answers.set(e.id, short);
  }
  return { info, dqs, answers, source };
}

/**
 * The dataset behind a run: `dataPath` when given, else the config's `dataset.path` (absolute, or
 * relative to the data dir). Returns the reason instead when it cannot be read.
 */
export function loadGoldForRun(config: Record<string, unknown>, dataPath?: string): GoldSet | { error: string } {
  const dataset = (config.dataset ?? {}) as Record<string, unknown>;
  const name = typeof dataset.name === 'string' ? dataset.name : undefined;
  if (!name || !loaders[name]) return { error: `the run's config names no known dataset (dataset.name: ${String(name)})` };
  let path = dataPath ?? (typeof dataset.path === 'string' ? dataset.path : undefined);
  if (!path) return { error: 'the run\'s config has no dataset.path' };
  if (!isAbsolute(path) && !existsSync(path)) path = join(dataDir(), path);
  if (!existsSync(path)) return { error: `dataset file ${path} not found (pass --data <file>)` };
  try {
    const split = typeof dataset.split === 'string' ? dataset.split : undefined;
    let examples = loaders[name](path, split);
    // The alternative answers the run counted (em_alt), so re-scored answers count them too.
    if (typeof dataset.alternatives === 'string' && existsSync(dataset.alternatives)) {
      const alternatives = loadAlternativeAnswers(dataset.alternatives);
      examples = examples.map((e) => ({ ...e, alternativeAnswers: alternatives.get(e.id) ?? [] }));
    }
    return goldFromExamples(examples, path);
  } catch (error) {
    return { error: `cannot read ${path}: ${describeError(error)}` };
  }
}
