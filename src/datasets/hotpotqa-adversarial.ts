/**
 * Adversarial HotpotQA as Verify-and-Edit uses it (`HotpotAdv/data/sim_dev.json`,
 * `sim_train.json`): an array of `{qas_id, question, answer, paragraphs[{title, context, is_supp}],
 * rationale[{title, sentence}]}`. Adversarial paragraphs are titled `added`.
 *
 * Example fields: `answers = [answer]`; `passages` are the four paragraphs in file order with
 * `supporting = is_supp`; `rationale` is the gold rationale sentences joined with spaces. With
 * `alternatives` (alternative-answers.ts), every example gets `alternativeAnswers` (possibly empty).
 * Other scalar fields of a record (a `type` or `level`, where a file has them) are kept in `meta`.
 */
import { z } from 'zod';
import { describeIssues, readJsonFile, throwProblems, unreadScalars } from './read';
import type { Example } from './types';

const recordSchema = z.object({
  qas_id: z.union([z.string(), z.number()]).transform(String),
  question: z.string(),
  answer: z.union([z.string(), z.array(z.string())]),
  paragraphs: z.array(z.object({ title: z.string(), context: z.string(), is_supp: z.boolean().nullish() })),
  rationale: z.union([z.array(z.object({ title: z.string().nullish(), sentence: z.string() })), z.string()]).nullish(),
});

export function loadHotpotQaAdversarial(path: string, alternatives?: ReadonlyMap<string, readonly string[]>): Example[] {
  const data = readJsonFile(path, 'adversarial HotpotQA file');
  if (!Array.isArray(data)) throwProblems(path, ['expected an array of {qas_id, question, answer, paragraphs} records (sim_dev.json)']);
  const problems: string[] = [];
  let bad = 0;
  const examples: Example[] = [];
  data.forEach((raw, index) => {
    const r = recordSchema.safeParse(raw);
    const idText = typeof raw === 'object' && raw !== null && 'qas_id' in raw ? ` (qas_id ${String((raw as { qas_id: unknown }).qas_id)})` : '';
    if (!r.success) {
      problems.push(...describeIssues(`record ${index}${idText}`, r.error, raw));
      bad++;
      return;
    }
    const d = r.data;
    const extra = unreadScalars(raw, Object.keys(recordSchema.shape));
    const rationale = d.rationale == null ? undefined : typeof d.rationale === 'string' ? d.rationale : d.rationale.map((s) => s.sentence).join(' ');
    examples.push({
      id: d.qas_id,
      dataset: 'hotpotqa-adversarial',
      question: d.question,
      answers: Array.isArray(d.answer) ? d.answer : [d.answer],
      qaPairs: [],
      longAnswers: [],
      passages: d.paragraphs.map((p) => ({ title: p.title, text: p.context, supporting: p.is_supp ?? false })),
      ...(rationale !== undefined ? { rationale } : {}),
      ...(alternatives ? { alternativeAnswers: [...(alternatives.get(d.qas_id) ?? [])] } : {}),
      ...(extra ? { meta: extra } : {}),
    });
  });
  if (problems.length > 0) throwProblems(path, problems, undefined, bad);
  return examples;
}
