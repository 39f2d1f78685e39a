/**
 * qa-feedback (allenai/FineGrainedRLHF `tasks/qa_feedback/data/*.json`): ASQA *train* questions,
 * each `{question, text, answer: [long answer], passages: [{content, wikipage}]}` (`text` is the
 * question and passages flattened into one prompt string; the structured `passages` are used).
 *
 * These have long answers and grounding passages but no disambiguated questions, so they serve as
 * few-shot demos and as extra corpus passages, not as an evaluation set. They load as
 * `dataset: 'asqa'` examples with ids `qa-feedback-<index>` and `meta.source = 'qa-feedback'`.
 */
import { z } from 'zod';
import { describeIssues, readJsonFile, throwProblems } from './read';
import type { Example } from './types';

const recordSchema = z.object({
  question: z.string(),
  text: z.string().nullish(),
  answer: z.union([z.array(z.string()), z.string().transform((s) => [s])]),
  passages: z.array(z.object({ content: z.string().nullish(), wikipage: z.string().nullish() })).nullish(),
});

/** A cheap shape test: an array whose first record has `question`, `answer` and `passages`. */
export function isQaFeedbackLayout(data: unknown): data is unknown[] {
  if (!Array.isArray(data) || data.length === 0) return false;
  const first = data[0] as Record<string, unknown> | null;
  return typeof first === 'object' && first !== null && 'question' in first && 'answer' in first && 'passages' in first;
}

export function qaFeedbackExamples(path: string, data: unknown[]): Example[] {
  const problems: string[] = [];
  let bad = 0;
  const examples: Example[] = [];
  data.forEach((raw, index) => {
    const r = recordSchema.safeParse(raw);
    if (!r.success) {
      problems.push(...describeIssues(`record ${index}`, r.error, raw));
      bad++;
      return;
    }
    examples.push({
      id: `qa-feedback-${index}`,
      dataset: 'asqa',
      question: r.data.question,
      answers: [],
      qaPairs: [],
      longAnswers: r.data.answer,
      passages: (r.data.passages ?? []).filter((p) => p.content).map((p) => ({ title: p.wikipage ?? '', text: p.content as string })),
      meta: { source: 'qa-feedback', index },
    });
  });
  if (problems.length > 0) throwProblems(path, problems, 'each record needs question, answer[] and passages[{content, wikipage}]', bad);
  return examples;
}

/** Read a qa-feedback file (demos and passages; see the module comment). */
export function loadQaFeedback(path: string): Example[] {
  const data = readJsonFile(path, 'qa-feedback file');
  if (!Array.isArray(data)) throwProblems(path, ['expected an array of {question, text, answer, passages} records']);
  return qaFeedbackExamples(path, data);
}
