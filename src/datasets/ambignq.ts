/**
 * AmbigNQ (Min et al. 2020), the `*_light.json` files: an array of `{id, question, annotations}`
 * where each annotation is `{type: "singleAnswer", answer: [...]}` or `{type: "multipleQAs",
 * qaPairs: [{question, answer: [...]}]}` (one annotation per annotator).
 *
 * Example fields: `answers` is every acceptable answer of every annotation (for EM/F1 of a single
 * predicted answer); `qaPairs` are those of the first multipleQAs annotation (empty when every
 * annotator saw one answer); `meta.annotations` keeps each annotation's answer clusters
 * (`{type, answers: string[][]}`), which AmbigNQ's multi-answer F1 needs.
 */
import { z } from 'zod';
import { describeIssues, readJsonFile, throwProblems, unreadScalars } from './read';
import type { Example, QaPair } from './types';

const annotationSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('singleAnswer'), answer: z.array(z.string()) }),
  z.object({
    type: z.literal('multipleQAs'),
    qaPairs: z.array(z.object({ question: z.string(), answer: z.array(z.string()) })),
  }),
]);

const recordSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  question: z.string(),
  annotations: z.array(annotationSchema),
});

export function loadAmbigNq(path: string): Example[] {
  const data = readJsonFile(path, 'AmbigNQ file');
  if (!Array.isArray(data)) throwProblems(path, ['expected an array of {id, question, annotations} records (AmbigNQ *_light.json)']);
  const problems: string[] = [];
  let bad = 0;
  const examples: Example[] = [];
  data.forEach((raw, index) => {
    const r = recordSchema.safeParse(raw);
    const idText = typeof raw === 'object' && raw !== null && 'id' in raw ? ` (id ${String((raw as { id: unknown }).id)})` : '';
    if (!r.success) {
      problems.push(...describeIssues(`record ${index}${idText}`, r.error, raw));
      bad++;
      return;
    }
    const answers: string[] = [];
    const add = (a: string): void => {
      if (!answers.includes(a)) answers.push(a);
    };
    let qaPairs: QaPair[] = [];
    const annotations = r.data.annotations.map((a) => {
      if (a.type === 'singleAnswer') {
        a.answer.forEach(add);
        return { type: a.type, answers: [a.answer] };
      }
      for (const qa of a.qaPairs) qa.answer.forEach(add);
      if (qaPairs.length === 0) qaPairs = a.qaPairs.map((qa) => ({ question: qa.question, shortAnswers: qa.answer }));
      return { type: a.type, answers: a.qaPairs.map((qa) => qa.answer) };
    });
    examples.push({
      id: r.data.id,
      dataset: 'ambignq',
      question: r.data.question,
      answers,
      qaPairs,
      longAnswers: [],
      passages: [],
      meta: { ...unreadScalars(raw, Object.keys(recordSchema.shape)), annotations },
    });
  });
  if (problems.length > 0) throwProblems(path, problems, 'AmbigNQ records look like {"id", "question", "annotations": [{"type": "singleAnswer", "answer": [...]}]}', bad);
  return examples;
}
