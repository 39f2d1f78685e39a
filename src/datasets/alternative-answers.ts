/**
 * Alternative correct answers that Verify-and-Edit counts in its adversarial-HotpotQA EM
 * (RuochenZhao/Verify-and-Edit `HotpotAdv/annotations/alt_answers.jsonlines`, read by
 * `dataset_utils.read_alternative_answers` and added to each question's `answer_choices`):
 * one JSON object per line, `{"qas_id": "...", "answer": "..."}`, several lines per question
 * allowed (172 lines for 120 of the 308 questions). Duplicates are kept once, in file order, as
 * the reference keeps them.
 *
 * A missing or malformed file is one line naming the file (and the first bad line), thrown
 * while the dataset is loaded, i.e. before any model is called.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { readJsonlFile } from './read';

/** The file's name as shipped beside `sim_dev.json` in the shared data. */
export const ALTERNATIVES_FILE_NAME = 'alt_answers.jsonl';

/** Where a dataset file's alternative answers are looked for when none is named: beside it. */
export function defaultAlternativesPath(dataPath: string): string {
  return join(dirname(dataPath), ALTERNATIVES_FILE_NAME);
}

const lineSchema = z.object({
  qas_id: z.union([z.string().min(1), z.number()]).transform(String),
  answer: z.string().refine((s) => s.trim() !== '', 'empty answer'),
});

const HINT = 'each line is {"qas_id": "<question id>", "answer": "<alternative answer>"} (data/README.md)';

/** question id → its alternative answers (file order, duplicates once). */
export function loadAlternativeAnswers(path: string): Map<string, string[]> {
  if (!existsSync(path)) throw new AmbiqaError(`alternative-answers file ${path} does not exist`, `give dataset.alternatives the path of ${ALTERNATIVES_FILE_NAME}, or leave the metrics em_alt and f1_alt out`);
  if (statSync(path).isDirectory()) throw new AmbiqaError(`alternative-answers file ${path} is a folder, not a file`, HINT);
  const { lines, problems } = readJsonlFile(path, 'alternative-answers file');
  const bad: Array<{ line: number; message: string }> = [...problems];
  const out = new Map<string, string[]>();
  for (const { line, value } of lines) {
    const r = lineSchema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0];
      bad.push({ line, message: `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}` });
      continue;
    }
    const list = out.get(r.data.qas_id) ?? [];
    if (!list.includes(r.data.answer)) list.push(r.data.answer);
    out.set(r.data.qas_id, list);
  }
  if (bad.length > 0) {
    bad.sort((a, b) => a.line - b.line);
    const more = bad.length > 1 ? ` (and ${bad.length - 1} more bad line${bad.length === 2 ? '' : 's'})` : '';
    // One line: the file, the first bad line and what is wrong with it.
    throw new AmbiqaError(`alternative-answers file ${path} line ${bad[0].line}: ${bad[0].message.replace(/\s+/g, ' ')}${more}`, HINT);
  }
  if (out.size === 0) throw new AmbiqaError(`alternative-answers file ${path} holds no answers`, HINT);
  return out;
}
