/**
 * 2WikiMultihopQA (Ho et al., COLING 2020), one of Verify-and-Edit's multi-hop datasets, in the
 * official release layout (`dev.json`, `train.json`; the shared data carries a six-question
 * `train_subset.json` of Verify-and-Edit's few-shot examples): an array of
 * `{_id, type, question, context: [[title, [sentence, …]], …], supporting_facts: [[title,
 * sentence index], …], evidences: [[subject, relation, object], …], answer}`.
 *
 * Example fields: `answers = [answer]`; `passages` are the context paragraphs in file order, each
 * the paragraph's sentences joined with spaces, `supporting` when `supporting_facts` names its
 * title; `rationale` is the supporting sentences in `supporting_facts` order (a CoT demo);
 * `meta` keeps the question `type` (comparison, inference, compositional, bridge_comparison) and
 * the `evidences` triples.
 */
import { z } from 'zod';
import { describeIssues, readJsonFile, throwProblems, unreadScalars } from './read';
import type { Example } from './types';

const recordSchema = z.object({
  _id: z.union([z.string(), z.number()]).transform(String),
  type: z.string().nullish(),
  question: z.string(),
  answer: z.string(),
  context: z.array(z.tuple([z.string(), z.array(z.string())])),
  supporting_facts: z.array(z.tuple([z.string(), z.int()])).default([]),
  evidences: z.array(z.array(z.string())).nullish(),
});

export function loadTwoWikiMultihop(path: string): Example[] {
  const data = readJsonFile(path, '2WikiMultihopQA file');
  if (!Array.isArray(data)) throwProblems(path, ['expected an array of {_id, question, answer, context, supporting_facts} records (dev.json)']);
  const problems: string[] = [];
  let bad = 0;
  const examples: Example[] = [];
  const seen = new Set<string>();
  data.forEach((raw, index) => {
    const r = recordSchema.safeParse(raw);
    const idText = typeof raw === 'object' && raw !== null && '_id' in raw ? ` (_id ${String((raw as { _id: unknown })._id)})` : '';
    if (!r.success) {
      problems.push(...describeIssues(`record ${index}${idText}`, r.error, raw));
      bad++;
      return;
    }
    const d = r.data;
    if (seen.has(d._id)) {
      problems.push(`record ${index}: _id ${d._id} occurs twice`);
      bad++;
      return;
    }
    seen.add(d._id);
    const paragraphs = new Map(d.context.map(([title, sentences]) => [title, sentences]));
    const supportingTitles = new Set(d.supporting_facts.map(([title]) => title));
    // Supporting facts that name a sentence the context lacks are skipped (upstream has a few).
    const rationale = d.supporting_facts
      .map(([title, i]) => paragraphs.get(title)?.[i]?.trim())
      .filter((s): s is string => !!s)
      .join(' ');
    examples.push({
      id: d._id,
      dataset: '2wikimultihop',
      question: d.question,
      answers: [d.answer],
      qaPairs: [],
      longAnswers: [],
      passages: d.context.map(([title, sentences]) => ({ title, text: sentences.map((s) => s.trim()).join(' '), supporting: supportingTitles.has(title) })),
      ...(rationale ? { rationale } : {}),
      meta: { ...unreadScalars(raw, Object.keys(recordSchema.shape)), ...(d.type ? { type: d.type } : {}), ...(d.evidences ? { evidences: d.evidences } : {}) },
    });
  });
  if (problems.length > 0) throwProblems(path, problems, undefined, bad);
  return examples;
}
