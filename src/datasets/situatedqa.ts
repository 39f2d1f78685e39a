/**
 * SituatedQA (Zhang & Choi 2021), `data/qa_data/{temp,geo}.{train,dev,test}.jsonl`: one line per
 * (question, context) pair, `{question, id, edited_question, date, date_type, answer[],
 * any_answer[]}` for temporal contexts and `{..., location, ...}` for geographic ones.
 *
 * The system answers `edited_question` (the question with its date or location), so that is the
 * example's `question`; `answer` are the gold answers. The file's `id` names the *underlying*
 * question and repeats across its contexts (and is a 64-bit integer, kept exact), so the example id
 * is `<id>@<date or location>`, with `#2`, `#3`, … appended to repeats within the file, in file
 * order. `meta` keeps `sourceId`, `originalQuestion`, `date`/`dateType` or `location`, `anyAnswer`.
 */
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { describeIssues, readJsonlFile, throwProblems } from './read';
import type { Example } from './types';

const recordSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  question: z.string(),
  edited_question: z.string(),
  answer: z.array(z.string()),
  any_answer: z.array(z.string()).nullish(),
  date: z.union([z.string(), z.number()]).transform(String).nullish(),
  date_type: z.string().nullish(),
  location: z.string().nullish(),
});

export function loadSituatedQa(path: string): Example[] {
  const { lines, problems: parseProblems } = readJsonlFile(path, 'SituatedQA file');
  const problems = parseProblems.map((p) => `line ${p.line}: ${p.message}`);
  let bad = parseProblems.length;
  const examples: Example[] = [];
  const seen = new Map<string, number>();
  for (const { line, value } of lines) {
    const r = recordSchema.safeParse(value);
    if (!r.success) {
      problems.push(...describeIssues(`line ${line}`, r.error, value));
      bad++;
      continue;
    }
    const d = r.data;
    const context = d.location ?? d.date;
    if (context == null) {
      problems.push(`line ${line}: neither "date" nor "location" is set`);
      bad++;
      continue;
    }
    const base = `${d.id}@${context}`;
    const count = (seen.get(base) ?? 0) + 1;
    seen.set(base, count);
    examples.push({
      id: count === 1 ? base : `${base}#${count}`,
      dataset: 'situatedqa',
      question: d.edited_question,
      answers: d.answer,
      qaPairs: [],
      longAnswers: [],
      passages: [],
      meta: {
        sourceId: d.id,
        originalQuestion: d.question,
        ...(d.location != null ? { location: d.location } : { date: d.date, dateType: d.date_type ?? null }),
        anyAnswer: d.any_answer ?? [],
      },
    });
  }
  if (problems.length > 0) throwProblems(path, problems, 'SituatedQA lines look like {"id", "question", "edited_question", "date" or "location", "answer": [...]}', bad);
  if (examples.length === 0) throw new AmbiqaError(`SituatedQA file ${path} has no records`);
  return examples;
}
