/**
 * ASQA (Stelmakh et al. 2022), official layout:
 * `{"<split>": {"<id>": {ambiguous_question, qa_pairs[{question, short_answers[], context,
 * wikipage}], wikipages[{title, url}], annotations[{long_answer, knowledge[{content, wikipage}]}]}}}`
 * with split keys such as `dev` and `train`. A file that is directly `{"<id>": {...}}` is read too.
 *
 * Also accepted, because its questions are ASQA *train* questions and make good demos: the
 * qa-feedback layout (an array of `{question, text, answer[], passages[{content, wikipage}]}`),
 * read by qa-feedback.ts.
 *
 * Which questions a file yields (`questions`): the ambiguous questions (the default, ASQA as
 * published); their disambiguated questions (DQs), each loaded as a question of its own with one
 * interpretation, itself; or `mixed`, each ambiguous question followed by its first answerable
 * DQ. The DQs are the unambiguous control that an ambiguity detector (ToC's and Diva's early
 * exits) needs: ASQA alone holds only ambiguous questions, and AmbigNQ's unambiguous ones have no
 * passages in the shared corpus, whereas a DQ's supporting passage is in it, as its AQ's are.
 */
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { describeIssues, readJsonFile, throwProblems, unreadScalars } from './read';
import { isQaFeedbackLayout, qaFeedbackExamples } from './qa-feedback';
import type { Example, ExamplePassage } from './types';

const NO_CONTEXT = 'No context provided';

/** What `loadAsqa` yields: the published ambiguous questions, their DQs, or both interleaved. */
export const asqaQuestionKinds = ['ambiguous', 'disambiguated', 'mixed'] as const;
export type AsqaQuestionKind = (typeof asqaQuestionKinds)[number];

/**
 * The DQs of an ambiguous-question example that have a short answer, each as an example of its
 * own: `<aq id>.dq<k>` (k counts the file's qa_pairs from 1, so ids stay stable), its one pair
 * itself, its supporting passage, no long answer (ROUGE is undefined for it), `sourceId` the AQ.
 */
function disambiguatedExamples(aq: Example): Example[] {
  const out: Example[] = [];
  aq.qaPairs.forEach((pair, index) => {
    if (pair.shortAnswers.length === 0) return;
    out.push({
      id: `${aq.id}.dq${index + 1}`,
      dataset: aq.dataset,
      question: pair.question,
      answers: [...pair.shortAnswers],
      qaPairs: [pair],
      longAnswers: [],
      passages: pair.context ? [{ title: pair.wikipage ?? '', text: pair.context }] : [],
      sourceId: aq.id,
      // The AQ's own scalar fields (a file's extra ones) hold for its DQs too (`groupBy`).
      meta: { ...aq.meta, ambiguousQuestion: aq.question },
    });
  });
  return out;
}

/** Apply the `questions` choice to ambiguous-question examples (file order kept). */
function selectAsqaQuestions(path: string, examples: Example[], kind: AsqaQuestionKind): Example[] {
  if (kind === 'ambiguous') return examples;
  const out: Example[] = [];
  for (const aq of examples) {
    const dqs = disambiguatedExamples(aq);
    if (kind === 'mixed') out.push(aq, ...dqs.slice(0, 1));
    else out.push(...dqs);
  }
  if (!out.some((e) => e.sourceId !== undefined)) {
    throw new AmbiqaError(
      `ASQA file ${path}: questions "${kind}" needs disambiguated questions with short answers (qa_pairs), and this file has none`,
      'use questions: ambiguous for this file',
    );
  }
  return out;
}

const qaPairSchema = z.object({
  question: z.string(),
  short_answers: z.array(z.string()),
  context: z.string().nullish(),
  wikipage: z.string().nullish(),
});

const entrySchema = z.object({
  ambiguous_question: z.string(),
  qa_pairs: z.array(qaPairSchema),
  wikipages: z.array(z.object({ title: z.string().nullish(), url: z.string().nullish() })).nullish(),
  annotations: z
    .array(
      z.object({
        long_answer: z.string(),
        knowledge: z.array(z.object({ content: z.string().nullish(), wikipage: z.string().nullish() })).nullish(),
      }),
    )
    .nullish(),
});

type Entry = z.infer<typeof entrySchema>;

function isEntryLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'ambiguous_question' in value;
}

function toExample(id: string, e: Entry, extra?: Record<string, unknown>): Example {
  const passages: ExamplePassage[] = [];
  const seen = new Set<string>();
  for (const a of e.annotations ?? []) {
    for (const k of a.knowledge ?? []) {
      if (!k.content || seen.has(k.content)) continue;
      seen.add(k.content);
      passages.push({ title: k.wikipage ?? '', text: k.content });
    }
  }
  const answers: string[] = [];
  for (const qa of e.qa_pairs) for (const a of qa.short_answers) if (!answers.includes(a)) answers.push(a);
  return {
    id,
    dataset: 'asqa',
    question: e.ambiguous_question,
    answers,
    qaPairs: e.qa_pairs.map((qa) => ({
      question: qa.question,
      shortAnswers: qa.short_answers,
      ...(qa.context && qa.context !== NO_CONTEXT ? { context: qa.context } : {}),
      ...(qa.wikipage ? { wikipage: qa.wikipage } : {}),
    })),
    longAnswers: (e.annotations ?? []).map((a) => a.long_answer),
    passages,
    ...(extra ? { meta: extra } : {}),
  };
}

/**
 * Read an ASQA file; `split` picks the top-level key (default `dev`, or the only key there is),
 * `questions` which questions it yields (default the ambiguous ones).
 */
export function loadAsqa(path: string, split?: string, questions: AsqaQuestionKind = 'ambiguous'): Example[] {
  return selectAsqaQuestions(path, loadAmbiguousQuestions(path, split), questions);
}

function loadAmbiguousQuestions(path: string, split?: string): Example[] {
  const data = readJsonFile(path, 'ASQA file');
  if (isQaFeedbackLayout(data)) return qaFeedbackExamples(path, data);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new AmbiqaError(`ASQA file ${path}: expected an object {"dev": {"<id>": {...}}}, got ${Array.isArray(data) ? 'an array' : typeof data}`);
  }
  const top = data as Record<string, unknown>;
  let records: Record<string, unknown>;
  const keys = Object.keys(top);
  if (keys.length > 0 && keys.every((k) => isEntryLike(top[k]))) {
    records = top; // a bare {"<id>": {...}} map
  } else {
    const splits = keys.filter((k) => typeof top[k] === 'object' && top[k] !== null && !Array.isArray(top[k]));
    const chosen = split ?? (splits.includes('dev') ? 'dev' : splits.length === 1 ? splits[0] : undefined);
    if (chosen === undefined || !(chosen in top)) {
      throw new AmbiqaError(
        `ASQA file ${path}: ${chosen === undefined ? 'which split?' : `no split "${chosen}"`} (the file has ${splits.map((s) => `"${s}"`).join(', ') || 'no splits'})`,
        `pass one of them as the split (dataset.split in a config, --split on the command line)`,
      );
    }
    const value = top[chosen];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new AmbiqaError(`ASQA file ${path}: split "${chosen}" should map question ids to questions`);
    }
    records = value as Record<string, unknown>;
  }
  const problems: string[] = [];
  let bad = 0;
  const examples: Example[] = [];
  for (const [id, raw] of Object.entries(records)) {
    const r = entrySchema.safeParse(raw);
    if (!r.success) {
      problems.push(...describeIssues(`question "${id}"`, r.error, raw));
      bad++;
    }
    else examples.push(toExample(id, r.data, unreadScalars(raw, Object.keys(entrySchema.shape))));
  }
  if (problems.length > 0) throwProblems(path, problems, 'each question needs ambiguous_question, qa_pairs[{question, short_answers[]}] and annotations[{long_answer}]', bad);
  return examples;
}
