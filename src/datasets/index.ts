/**
 * Dataset loading: one loader per file format (one file each, validated with zod), all returning
 * the common `Example` shape (types.ts). `loadDataset(name, path, options)` is the entry point;
 * `detectDataset(path)` guesses a file's format without validating it, so that a wrong
 * `--dataset` gets a message saying what the file looks like.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { AmbiqaError } from '../errors';
import { quoteForDisplay } from '../common/safe-name';
import { loadAmbigNq } from './ambignq';
import { asqaQuestionKinds, loadAsqa, type AsqaQuestionKind } from './asqa';
import { loadFever } from './fever';
import { loadAlternativeAnswers } from './alternative-answers';
import { loadHotpotQaAdversarial } from './hotpotqa-adversarial';
import { loadQaFeedback } from './qa-feedback';
import { assertReadableFile } from './read';
import { sampleIndices } from './sample';
import { loadSituatedQa } from './situatedqa';
import { loadTwoWikiMultihop } from './two-wiki-multihop';
import { datasetNames, type DatasetName, type Example } from './types';

export type { DatasetName, Example, ExamplePassage, FeverLabel, QaPair } from './types';
export { loadQaFeedback };
export { FEVER_LABELS, feverPageTitle } from './fever';
export { sampleIndices, seededRandom } from './sample';
export { ALTERNATIVES_FILE_NAME, defaultAlternativesPath, loadAlternativeAnswers } from './alternative-answers';

export { datasetNames } from './types';
export { asqaQuestionKinds, type AsqaQuestionKind } from './asqa';

/** Where each dataset's evaluation file lives under the data dir (as distributed upstream). */
export const defaultDatasetFiles: Record<DatasetName, string> = {
  asqa: 'asqa/ASQA_dev.json',
  ambignq: 'ambignq/dev_light.json',
  situatedqa: 'situatedqa/temp.dev.jsonl',
  'hotpotqa-adversarial': 'hotpotqa-adversarial/sim_dev.json',
  // The official release's dev file (not in the shared data, which has only the few-shot subset).
  '2wikimultihop': '2wikimultihop/dev.json',
  fever: 'fever/paper_test_processed.jsonl',
};

export function isDatasetName(name: string): name is DatasetName {
  return (datasetNames as readonly string[]).includes(name);
}

export interface LoadOptions {
  /** ASQA: the top-level split key (default `dev`). FEVER: `sampled` / `all` (see fever.ts). Others: ignored. */
  split?: string;
  /** Keep a seeded uniform random sample of this many examples (in file order). */
  sample?: number;
  /** Seed for `sample` (default 0). */
  seed?: number;
  /** Keep the first N examples (after `ids` and `sample`). */
  limit?: number;
  /** Keep only these example ids (in file order). */
  ids?: readonly string[];
  /** FEVER: a JSON array of claim ids to keep (default: `sampled_ids.json` beside the file). */
  idsFile?: string;
  /** ASQA: the ambiguous questions (default), their disambiguated questions, or both (asqa.ts). */
  questions?: AsqaQuestionKind;
  /**
   * Refuse a selected question longer than this many characters (default
   * `DEFAULT_MAX_QUESTION_CHARS`): it would be sent as is in every prompt of the run.
   */
  maxQuestionChars?: number;
  /**
   * Adversarial HotpotQA: a JSONL of alternative answers (`alternative-answers.ts`) to attach as
   * `alternativeAnswers`; a missing or malformed file throws before anything else is read.
   */
  alternatives?: string;
}

/**
 * The longest question a run takes by default. The shared data's longest is under 300 characters;
 * a question of megabytes is a broken file, and sent as is it costs gigabytes of memory, run
 * files and reports (and money on an API) before anything says so.
 */
export const DEFAULT_MAX_QUESTION_CHARS = 10_000;

/** What `detectDataset` can recognise. */
export type DetectedFormat = DatasetName | 'qa-feedback' | 'fever-ids' | 'hotpotqa' | 'predictions' | 'unknown';

const FORMAT_LABELS: Record<DetectedFormat, string> = {
  asqa: 'ASQA (dataset asqa)',
  ambignq: 'AmbigNQ (dataset ambignq)',
  situatedqa: 'SituatedQA (dataset situatedqa)',
  'hotpotqa-adversarial': 'adversarial HotpotQA (dataset hotpotqa-adversarial)',
  '2wikimultihop': '2WikiMultihopQA (dataset 2wikimultihop)',
  fever: 'FEVER claims (dataset fever)',
  'qa-feedback': 'qa-feedback (ASQA train questions with passages; loads as dataset asqa)',
  'fever-ids': 'a list of FEVER claim ids (sampled_ids.json)',
  hotpotqa: 'plain HotpotQA (not an ambiqa dataset)',
  predictions: 'a predictions file ({"id", "output"/"answer"} per line)',
  unknown: 'no format ambiqa knows',
};

export function describeFormat(format: DetectedFormat): string {
  return FORMAT_LABELS[format];
}

/** The first `bytes` bytes of a file as text (enough to recognise a format). */
function head(path: string, bytes = 65536): string {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.min(bytes, statSync(path).size));
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Guess a file's format from the keys in its first 64 KB. No validation (that is the loaders'
 * job); meant for messages such as "this file looks like AmbigNQ".
 */
export function detectDataset(path: string): DetectedFormat {
  if (!existsSync(path) || statSync(path).isDirectory()) return 'unknown';
  const text = head(path);
  const has = (key: string): boolean => text.includes(`"${key}"`);
  if (has('ambiguous_question')) return 'asqa';
  if (has('qas_id') && has('paragraphs')) return 'hotpotqa-adversarial';
  if (/"(singleAnswer|multipleQAs)"/.test(text)) return 'ambignq';
  if (has('edited_question')) return 'situatedqa';
  if (/"label"\s*:\s*"(SUPPORTS|REFUTES|NOT ENOUGH INFO)"/.test(text) && (has('claim') || has('evidence') || has('pars'))) return 'fever';
  if (has('passages') && has('answer') && has('question') && /^\s*\[/.test(text)) return 'qa-feedback';
  // 2WikiMultihopQA has HotpotQA's keys plus its evidence triples.
  if (has('supporting_facts') && (has('evidences') || /"type"\s*:\s*"(compositional|inference|bridge_comparison)"/.test(text))) return '2wikimultihop';
  if (has('supporting_facts') || (has('_id') && has('type') && has('answer')) || /"type"\s*:\s*"(comparison|bridge)"/.test(text)) return 'hotpotqa';
  if (/^\s*\[\s*-?\d+(\s*,\s*-?\d+)*\s*(,|\])/.test(text)) return 'fever-ids';
  const firstLine = text.split('\n').find((l) => l.trim());
  if (firstLine) {
    try {
      const value = JSON.parse(firstLine) as Record<string, unknown>;
      if (value && typeof value === 'object' && 'id' in value && ('output' in value || 'answer' in value)) return 'predictions';
    } catch {
      /* not one JSON object per line */
    }
  }
  return 'unknown';
}

const LOADERS: Record<DatasetName, (path: string, options: LoadOptions) => Example[]> = {
  asqa: (path, o) => loadAsqa(path, o.split, o.questions),
  ambignq: (path) => loadAmbigNq(path),
  situatedqa: (path) => loadSituatedQa(path),
  'hotpotqa-adversarial': (path) => loadHotpotQaAdversarial(path),
  '2wikimultihop': (path) => loadTwoWikiMultihop(path),
  fever: (path, o) => loadFever(path, { split: o.split, idsFile: o.idsFile }),
};

function positiveInt(value: number | undefined, option: string): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
    throw new AmbiqaError(`option ${option}=${value} must be a positive integer`);
  }
}

/**
 * Load a dataset file as `Example[]`: validate it with the format's loader, then keep `ids`,
 * draw the seeded `sample`, and cut to `limit`, in that order. Throws an AmbiqaError naming the
 * file (and line or record) on bad input, and saying what the file looks like when it is not the
 * named dataset.
 */
export function loadDataset(name: DatasetName, path: string, options: LoadOptions = {}): Example[] {
  if (!isDatasetName(name)) {
    throw new AmbiqaError(`unknown dataset "${String(name)}"`, `use one of: ${datasetNames.join(', ')}`);
  }
  positiveInt(options.sample, 'sample');
  if (options.questions !== undefined && !(asqaQuestionKinds as readonly string[]).includes(options.questions)) {
    throw new AmbiqaError(`option questions=${String(options.questions)} is not one of ${asqaQuestionKinds.join(', ')}`);
  }
  if (options.questions !== undefined && options.questions !== 'ambiguous' && name !== 'asqa') {
    throw new AmbiqaError(`option questions=${options.questions} applies to dataset asqa only, not ${name}`, 'leave questions out for this dataset');
  }
  positiveInt(options.limit, 'limit');
  if (options.alternatives !== undefined && name !== 'hotpotqa-adversarial') {
    throw new AmbiqaError(`option alternatives applies to dataset hotpotqa-adversarial only, not ${name}`, 'leave alternatives out for this dataset');
  }
  // The small alternatives file first: its one-line error comes before the dataset is parsed.
  const alternatives = options.alternatives !== undefined ? loadAlternativeAnswers(options.alternatives) : undefined;
  assertReadableFile(path, `${name} data file`);
  const detected = detectDataset(path);
  const compatible = detected === name || detected === 'unknown' || (name === 'asqa' && detected === 'qa-feedback');
  if (!compatible) {
    const hint = isDatasetName(detected) ? `use dataset "${detected}" for this file, or give the ${name} file` : `give the ${name} data file`;
    throw new AmbiqaError(`${path} does not look like ${FORMAT_LABELS[name]}: it looks like ${FORMAT_LABELS[detected]}`, hint);
  }
  let examples = LOADERS[name](path, options);
  refuseRepeatedIds(path, examples);
  if (alternatives) examples = examples.map((e) => ({ ...e, alternativeAnswers: [...(alternatives.get(e.id) ?? [])] }));
  if (options.ids) {
    const keep = new Set(options.ids);
    examples = examples.filter((e) => keep.has(e.id));
  }
  if (options.sample !== undefined) {
    examples = sampleIndices(examples.length, options.sample, options.seed ?? 0).map((i) => examples[i]);
  }
  if (options.limit !== undefined) examples = examples.slice(0, options.limit);
  if (examples.length === 0) {
    throw new AmbiqaError(`${path}: no ${name} examples${options.ids ? ' left after the id filter' : ''}`);
  }
  refuseLongQuestions(path, examples, options.maxQuestionChars ?? DEFAULT_MAX_QUESTION_CHARS);
  refuseOversizedFields(path, examples, options.maxQuestionChars ?? DEFAULT_MAX_QUESTION_CHARS);
  return examples;
}

/**
 * Limits on every other field of a record (the question has its own, above). A 20 MB
 * `long_answer` was taken and the run started: it is copied into results, traces, reports and
 * MLflow, and the metrics compare against it. The limits are far above the shared data's largest
 * (an ASQA long answer is under 3,000 characters, a HotpotQA paragraph under 10,000):
 *
 * - an id: `MAX_ID_CHARS` characters, no control characters (ids appear in every log line);
 * - an answer (a gold answer, a short answer, an alternative): `MAX_ANSWER_CHARS`;
 * - an interpretation's (disambiguated) question: the questions' own limit (`maxQuestionChars`),
 *   since `questions: disambiguated` asks it as the question;
 * - any other text (long answers, passages, contexts, rationales, format-specific facts):
 *   `MAX_TEXT_CHARS`;
 * - any list: `MAX_LIST_ITEMS` items; nesting: `MAX_DEPTH` levels.
 */
export const MAX_ID_CHARS = 256;
export const MAX_ANSWER_CHARS = 10_000;
export const MAX_TEXT_CHARS = 200_000;
export const MAX_LIST_ITEMS = 10_000;
const MAX_DEPTH = 8;

function refuseOversizedFields(path: string, examples: readonly Example[], maxQuestionChars: number): void {
  const refuse = (e: Example, field: string, what: string, limit: string): never => {
    throw new AmbiqaError(`${path}: question ${quoteForDisplay(e.id, 60)}: ${field} ${what}, over the limit of ${limit}`, 'fix the data file (a field of that size is a broken record)');
  };
  const answerFields = /^(answers|alternativeAnswers|qaPairs\[\d+\]\.shortAnswers)(\[\d+\])?$/;
  const questionFields = /^qaPairs\[\d+\]\.question$/;
  const walk = (e: Example, value: unknown, field: string, depth: number): void => {
    if (typeof value === 'string') {
      const limit = questionFields.test(field) ? maxQuestionChars : answerFields.test(field) ? MAX_ANSWER_CHARS : MAX_TEXT_CHARS;
      if (value.length > limit) refuse(e, field, `has ${value.length.toLocaleString('en-US')} characters`, `${limit.toLocaleString('en-US')}`);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    if (depth > MAX_DEPTH) refuse(e, field, 'is nested too deep', `${MAX_DEPTH} levels`);
    if (Array.isArray(value)) {
      if (value.length > MAX_LIST_ITEMS) refuse(e, field, `has ${value.length.toLocaleString('en-US')} items`, `${MAX_LIST_ITEMS.toLocaleString('en-US')}`);
      value.forEach((v, i) => walk(e, v, `${field}[${i}]`, depth + 1));
      return;
    }
    for (const [k, v] of Object.entries(value)) walk(e, v, field ? `${field}.${k}` : k, depth + 1);
  };
  for (const e of examples) {
    if (e.id.length > MAX_ID_CHARS) refuse(e, 'id', `has ${e.id.length.toLocaleString('en-US')} characters`, `${MAX_ID_CHARS}`);
    if (/[\u0000-\u001f\u007f]/.test(e.id)) {
      throw new AmbiqaError(`${path}: question ${quoteForDisplay(e.id, 60)}: id holds a control character; ids are printed in every log line`, 'fix the data file');
    }
    for (const [k, v] of Object.entries(e)) if (k !== 'id' && k !== 'question') walk(e, v, k, 1);
  }
}

/**
 * A question id given twice: results, resume and paired comparisons key on the id, so one of the
 * two would silently stand for both. (SituatedQA's ids are made unique by its loader: one source
 * question edited for several dates is several questions.)
 */
function refuseRepeatedIds(path: string, examples: readonly Example[]): void {
  const first = new Map<string, number>();
  const repeated: string[] = [];
  examples.forEach((e, i) => {
    if (first.has(e.id)) {
      if (!repeated.includes(e.id)) repeated.push(e.id);
    } else first.set(e.id, i);
  });
  if (repeated.length === 0) return;
  const count = (id: string) => examples.filter((e) => e.id === id).length;
  const shown = repeated.slice(0, 3).map((id) => `"${id}" (${count(id)} times)`).join(', ');
  throw new AmbiqaError(
    `${path}: question id ${shown}${repeated.length > 3 ? ` and ${repeated.length - 3} more` : ''} occurs more than once; every question needs its own id`,
    'remove the repeated record or give it an id of its own',
  );
}

function refuseLongQuestions(path: string, examples: readonly Example[], max: number): void {
  const long = examples.filter((e) => e.question.length > max);
  if (long.length === 0) return;
  const e = long[0]!;
  throw new AmbiqaError(
    `${path}: question "${e.id}" has ${e.question.length.toLocaleString('en-US')} characters, over the limit of ${max.toLocaleString('en-US')}${long.length > 1 ? ` (${long.length} questions are)` : ''}`,
    'fix the data file, or raise dataset.maxQuestionChars if such questions are meant',
  );
}
