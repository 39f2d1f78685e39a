/**
 * FEVER claims as Verify-and-Edit processed them (`Fever/data/paper_test_processed.jsonl`):
 * `{id, question: <claim>, label, evidence: [[[annotation id, evidence id, page, sentence]]],
 * pars: [evidence sentence text]}`. The original FEVER layout (`claim` instead of `question`,
 * no `pars`, as in `train_subset.jsonl`) is read too.
 *
 * Which claims: Verify-and-Edit evaluates 1,000 sampled claims whose ids are listed in
 * `sampled_ids.json` beside the data file. With `split: 'all'` every claim is loaded; with
 * `split: 'sampled'` the list is required; with any other split (e.g. the default `dev`) the list
 * is used when it is there and names only claims of this file (so `train_subset.jsonl`, which sits
 * beside it, loads whole), and every claim is loaded otherwise. An explicit `idsFile` wins.
 *
 * Passages: the `pars` sentences, titled by their Wikipedia page (FEVER's escaped page names
 * turned back into text) when the evidence list lines up with them one to one, else by the single
 * evidence page, else untitled.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { AmbiqaError } from '../errors';
import { describeIssues, readJsonFile, readJsonlFile, throwProblems, unreadScalars } from './read';
import type { Example, ExamplePassage, FeverLabel } from './types';

export const FEVER_LABELS: readonly FeverLabel[] = ['SUPPORTS', 'REFUTES', 'NOT ENOUGH INFO'];

const evidenceItem = z.tuple([z.unknown(), z.unknown(), z.string().nullable(), z.number().nullable()]).rest(z.unknown());

const recordSchema = z
  .object({
    id: z.union([z.string(), z.number()]).transform(String),
    question: z.string().optional(),
    claim: z.string().optional(),
    label: z.enum(['SUPPORTS', 'REFUTES', 'NOT ENOUGH INFO']),
    evidence: z.array(z.array(evidenceItem)).nullish(),
    pars: z.array(z.string()).nullish(),
  })
  .refine((r) => r.question !== undefined || r.claim !== undefined, { message: 'needs "question" or "claim" (the claim text)' });

/** FEVER page ids escape brackets and use underscores: `Psych_-LRB-season_2-RRB-` → `Psych (season 2)`. */
export function feverPageTitle(page: string): string {
  return page
    .replace(/-LRB-/g, '(')
    .replace(/-RRB-/g, ')')
    .replace(/-LSB-/g, '[')
    .replace(/-RSB-/g, ']')
    .replace(/-LCB-/g, '{')
    .replace(/-RCB-/g, '}')
    .replace(/-COLON-/g, ':')
    .replace(/_/g, ' ');
}

function passagesOf(pars: string[], evidence: Array<Array<[unknown, unknown, string | null, number | null, ...unknown[]]>>): ExamplePassage[] {
  const sentences: Array<{ page: string; sentence: number | null }> = [];
  const seen = new Set<string>();
  for (const set of evidence) {
    for (const [, , page, sentence] of set) {
      if (page === null) continue;
      const key = `${page}\t${sentence}`;
      if (!seen.has(key)) {
        seen.add(key);
        sentences.push({ page, sentence });
      }
    }
  }
  const pages = [...new Set(sentences.map((s) => s.page))];
  return pars.map((text, i) => ({
    title: sentences.length === pars.length ? feverPageTitle(sentences[i].page) : pages.length === 1 ? feverPageTitle(pages[0]) : '',
    text,
  }));
}

function readIds(path: string): Set<string> {
  const ids = readJsonFile(path, 'FEVER id list');
  if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'number' || typeof x === 'string')) {
    throw new AmbiqaError(`FEVER id list ${path}: expected a JSON array of claim ids`);
  }
  return new Set(ids.map(String));
}

export interface FeverOptions {
  split?: string;
  /** A JSON array of claim ids to keep (default: `sampled_ids.json` beside the data file; see above). */
  idsFile?: string;
}

export function loadFever(path: string, options: FeverOptions = {}): Example[] {
  const { lines, problems: parseProblems } = readJsonlFile(path, 'FEVER file');
  const problems = parseProblems.map((p) => `line ${p.line}: ${p.message}`);
  let bad = parseProblems.length;
  const besideIds = join(dirname(path), 'sampled_ids.json');
  let idsFile = options.idsFile;
  // An id list found beside the file (not asked for) is applied only if it belongs to this file.
  let automatic = false;
  if (!idsFile && options.split !== 'all') {
    if (existsSync(besideIds)) {
      idsFile = besideIds;
      automatic = options.split !== 'sampled';
    } else if (options.split === 'sampled') {
      throw new AmbiqaError(`FEVER split "sampled" needs ${besideIds}`, 'put the Verify-and-Edit sampled_ids.json beside the data file, or use split "all"');
    }
  }
  let keep = idsFile ? readIds(idsFile) : null;
  if (keep && automatic) {
    const inFile = new Set<string>();
    for (const { value } of lines) {
      const id = (value as { id?: unknown } | null)?.id;
      if (id !== undefined && id !== null) inFile.add(String(id));
    }
    if (![...keep].every((id) => inFile.has(id))) {
      keep = null;
      idsFile = undefined;
    }
  }
  const examples: Example[] = [];
  for (const { line, value } of lines) {
    const r = recordSchema.safeParse(value);
    if (!r.success) {
      problems.push(...describeIssues(`line ${line}`, r.error, value));
      bad++;
      continue;
    }
    const d = r.data;
    if (keep && !keep.has(d.id)) continue;
    const extra = unreadScalars(value, Object.keys(recordSchema.shape));
    examples.push({
      id: d.id,
      dataset: 'fever',
      question: (d.question ?? d.claim) as string,
      answers: [d.label],
      label: d.label,
      qaPairs: [],
      longAnswers: [],
      passages: passagesOf(d.pars ?? [], (d.evidence ?? []) as Array<Array<[unknown, unknown, string | null, number | null]>>),
      ...(extra ? { meta: extra } : {}),
    });
  }
  if (problems.length > 0) throwProblems(path, problems, 'FEVER lines look like {"id", "question" or "claim", "label": "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"}', bad);
  if (keep && examples.length < keep.size) {
    const found = new Set(examples.map((e) => e.id));
    const missing = [...keep].filter((id) => !found.has(id));
    throw new AmbiqaError(
      `FEVER id list ${idsFile} names ${missing.length} claim(s) that ${path} does not have (e.g. ${missing.slice(0, 3).join(', ')})`,
      'use the id list that belongs to this data file, or split "all"',
    );
  }
  return examples;
}
