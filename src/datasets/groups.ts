/**
 * The fields a run can report its metrics by (`groupBy`, issue 46): scalar facts of a question
 * that its example carries, read here once so that a row records them when it is built and a
 * report or `compare` groups without the dataset file.
 *
 * - `kind`: ASQA, `ambiguous` or `disambiguated` (a DQ loaded as a question of its own:
 *   `questions: disambiguated | mixed`, marked by its `sourceId`); AmbigNQ, `ambiguous` (an
 *   annotator wrote several interpretations) or `unambiguous`.
 * - `label`: FEVER's gold label.
 * - every scalar (string, number, boolean, null) a loader keeps in `meta`: SituatedQA `date`,
 *   `dateType`, `location`; 2WikiMultihopQA `type`; `source` of qa-feedback questions; and the
 *   unused scalar fields of a record that loaders keep as they are (`meta` is plain JSON).
 *
 * A field a question lacks (a DQ's `ambiguousQuestion` on an AQ) is the group `NO_GROUP`, so the
 * groups of a field always add up to the run.
 */
import { AmbiqaError } from '../errors';
import type { DatasetName, Example } from './types';

/** The group of a question that lacks the field. */
export const NO_GROUP = '(none)';

/** `kind` from what both an example and a recorded row hold (a row's target keeps `sourceId` and the pairs). */
export function questionKind(question: { dataset: DatasetName | string | undefined; sourceId?: string | undefined; qaPairs: readonly unknown[] }): string | undefined {
  if (question.dataset === 'asqa') return question.sourceId !== undefined ? 'disambiguated' : 'ambiguous';
  if (question.dataset === 'ambignq') return question.qaPairs.length > 0 ? 'ambiguous' : 'unambiguous';
  return undefined;
}

const isScalar = (v: unknown): v is string | number | boolean | null => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** Every group field the example has, with its value as text. */
export function exampleGroupFields(example: Example): Record<string, string> {
  const out: Record<string, string> = {};
  const kind = questionKind(example);
  if (kind !== undefined) out.kind = kind;
  if (example.label !== undefined) out.label = example.label;
  for (const [key, value] of Object.entries(example.meta ?? {})) {
    if (!(key in out) && isScalar(value)) out[key] = value === null ? NO_GROUP : String(value);
  }
  return out;
}

/** The example's group under each of `fields` (`NO_GROUP` where it lacks one). */
export function exampleGroups(example: Example, fields: readonly string[]): Record<string, string> {
  const own = exampleGroupFields(example);
  return Object.fromEntries(fields.map((f) => [f, own[f] ?? NO_GROUP]));
}

/** The group fields any of the examples has, sorted (`kind` first). */
export function availableGroupFields(examples: readonly Example[]): string[] {
  const names = new Set<string>();
  for (const e of examples) for (const k of Object.keys(exampleGroupFields(e))) names.add(k);
  return [...names].sort((a, b) => (a === 'kind' ? -1 : b === 'kind' ? 1 : a.localeCompare(b)));
}

/**
 * Refuse a `groupBy` field that none of the run's questions has, in one line naming `groupBy` and
 * listing the fields there are; called before any model call (the preflight, the session's start).
 */
export function checkGroupBy(fields: readonly string[] | undefined, examples: readonly Example[], where = 'groupBy'): void {
  if (!fields || fields.length === 0) return;
  const available = availableGroupFields(examples);
  const unknown = fields.filter((f) => !available.includes(f));
  if (unknown.length === 0) return;
  const dataset = examples[0]?.dataset ?? 'the dataset';
  throw new AmbiqaError(
    `${where}: ${unknown.map((f) => `'${f}'`).join(', ')} ${unknown.length > 1 ? 'are not fields' : 'is not a field'} of the ${dataset} questions of this run; available: ${available.join(', ') || 'none'}`,
    'group by one of the available fields (docs/experiments.md, "Groups")',
  );
}
