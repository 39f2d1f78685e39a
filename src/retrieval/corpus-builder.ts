/**
 * Pools the passages that the evaluation data carries into one retrieval corpus (there is no
 * full Wikipedia offline). Each source format is read as its upstream release lays it out (see
 * `shared/data/README.md`); this module only wants passages, not evaluation examples, so it
 * parses the raw files itself rather than going through `src/datasets/`.
 *
 * Every text is cleaned (white space collapsed), cut into ~100-word windows, given a stable id
 * and de-duplicated on (title, section, text) across all sources: the first source listed keeps
 * the passage.
 *
 * Each passage records the evaluation questions it was annotated for (`annotatedFor`, keys
 * `<dataset>:<id>` as the loaders in src/datasets name examples): an ASQA question's contexts and
 * knowledge, a HotpotQA question's paragraphs, a FEVER claim's evidence. A passage several
 * questions share (de-duplicated) lists them all. `retriever.exclude: own` uses this to keep a
 * question's own annotated passages out of its retrieval results.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dataDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import { cleanText, passageId, readPassageRows, windowText } from './corpus';
import { questionKey, type Passage } from './types';

export const SOURCE_KINDS = ['asqa', 'qa-feedback', 'hotpotqa-adversarial', '2wikimultihop', 'fever', 'jsonl'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export interface CorpusSource {
  kind: SourceKind;
  path: string;
}

/** A document before windowing: one Wikipedia paragraph, evidence group or user passage. */
export interface RawDocument {
  /** Dataset name, the prefix of the passage id (`asqa`, `fever`, ...). */
  source: string;
  title: string;
  section?: string;
  text: string;
  /** A user-given id (JSONL input only); windows of a split passage get `#<n>` appended. */
  id?: string;
  /** Keys (`questionKey`) of the evaluation questions this document was annotated for. */
  questions?: string[];
}

function readJson(path: string, kind: string): unknown {
  if (!existsSync(path)) throw new AmbiqaError(`${kind} file ${path} does not exist`, 'check the path given to --from');
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${path}: not valid JSON (${(error as Error).message})`, `pass the ${kind} file in its official layout`);
  }
}

function formatError(path: string, kind: string, what: string): AmbiqaError {
  return new AmbiqaError(`${path}: not in the ${kind} layout (${what})`, `pass the ${kind} file in its official layout (see shared/data/README.md)`);
}

/** ASQA: `qa_pairs[].context` titled by `wikipage`, and `annotations[].knowledge[].content`. */
export function readAsqa(path: string): RawDocument[] {
  const root = readJson(path, 'ASQA') as Record<string, unknown>;
  const splits = Object.values(root ?? {});
  if (splits.length === 0 || splits.some((s) => typeof s !== 'object' || s === null)) {
    throw formatError(path, 'ASQA', 'expected {"dev": {id: example}} or {"train": ...}');
  }
  const docs: RawDocument[] = [];
  for (const split of splits as Record<string, any>[]) {
    for (const [id, ex] of Object.entries(split)) {
      if (!ex || !Array.isArray(ex.qa_pairs)) throw formatError(path, 'ASQA', `example ${id} has no qa_pairs`);
      // A few knowledge snippets carry no wikipage; the question's first listed page is the
      // closest stand-in for their title.
      const fallbackTitle: string = ex.wikipages?.[0]?.title ?? '';
      const questions = [questionKey('asqa', id)];
      for (const qa of ex.qa_pairs) {
        const context = typeof qa.context === 'string' ? qa.context : '';
        if (!context || context === 'No context provided') continue;
        docs.push({ source: 'asqa', title: qa.wikipage ?? fallbackTitle, text: context, questions });
      }
      for (const annotation of ex.annotations ?? []) {
        for (const k of annotation.knowledge ?? []) {
          if (typeof k.content !== 'string' || !k.content.trim()) continue;
          docs.push({ source: 'asqa', title: k.wikipage ?? fallbackTitle, text: k.content, questions });
        }
      }
    }
  }
  return docs;
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&#39;': "'", '&apos;': "'", '&lt;': '<', '&gt;': '>' };
const unescapeHtml = (s: string) => s.replace(/&(amp|quot|#39|apos|lt|gt);/g, (m) => ENTITIES[m]);

/**
 * qa-feedback: each `text` is `question: … context: wikipage: T text: BODY | wikipage: T2 text: …`.
 * A body repeats its title on its first line; that echo is dropped.
 */
export function readQaFeedback(path: string): RawDocument[] {
  const rows = readJson(path, 'qa-feedback');
  if (!Array.isArray(rows)) throw formatError(path, 'qa-feedback', 'expected a JSON array');
  const docs: RawDocument[] = [];
  rows.forEach((row, i) => {
    if (typeof row?.text !== 'string') throw formatError(path, 'qa-feedback', `record ${i} has no "text"`);
    const start = row.text.indexOf('wikipage: ');
    if (start < 0) return;
    const chunks = row.text.slice(start).split(/ \| (?=wikipage: )/);
    for (const chunk of chunks) {
      const m = /^wikipage: ([\s\S]*?) text: ([\s\S]*)$/.exec(chunk);
      if (!m) continue;
      const title = unescapeHtml(m[1].trim());
      let body = m[2];
      const firstBreak = body.indexOf('\n\n');
      if (firstBreak >= 0 && unescapeHtml(body.slice(0, firstBreak).trim()) === title) body = body.slice(firstBreak + 2);
      if (body.trim()) docs.push({ source: 'qa-feedback', title, text: body });
    }
  });
  return docs;
}

/**
 * Adversarial HotpotQA (Verify-and-Edit's `sim_dev.json`): 4 paragraphs per question. The
 * adversarial ones are titled `added` upstream; they are kept (with that title) because they are
 * the distractors this setting is about.
 */
export function readHotpotAdversarial(path: string): RawDocument[] {
  const rows = readJson(path, 'adversarial HotpotQA');
  if (!Array.isArray(rows)) throw formatError(path, 'adversarial HotpotQA', 'expected a JSON array');
  const docs: RawDocument[] = [];
  rows.forEach((row, i) => {
    if (!Array.isArray(row?.paragraphs)) throw formatError(path, 'adversarial HotpotQA', `record ${i} has no "paragraphs"`);
    const questions = row.qas_id !== undefined ? [questionKey('hotpotqa-adversarial', String(row.qas_id))] : undefined;
    for (const p of row.paragraphs) {
      if (typeof p?.context === 'string' && p.context.trim()) {
        docs.push({ source: 'hotpotqa-adversarial', title: String(p.title ?? ''), text: p.context, ...(questions ? { questions } : {}) });
      }
    }
  });
  return docs;
}

/** 2WikiMultihopQA (`dev.json`): the 10 paragraphs of each question (`context: [[title, sentences]]`). */
export function readTwoWikiMultihop(path: string): RawDocument[] {
  const rows = readJson(path, '2WikiMultihopQA');
  if (!Array.isArray(rows)) throw formatError(path, '2WikiMultihopQA', 'expected a JSON array');
  const docs: RawDocument[] = [];
  rows.forEach((row, i) => {
    if (!Array.isArray(row?.context)) throw formatError(path, '2WikiMultihopQA', `record ${i} has no "context"`);
    const questions = row._id !== undefined ? [questionKey('2wikimultihop', String(row._id))] : undefined;
    for (const paragraph of row.context) {
      if (!Array.isArray(paragraph) || !Array.isArray(paragraph[1])) continue;
      const text = paragraph[1].filter((s: unknown) => typeof s === 'string').join(' ');
      if (text.trim()) docs.push({ source: '2wikimultihop', title: String(paragraph[0] ?? ''), text, ...(questions ? { questions } : {}) });
    }
  });
  return docs;
}

const PTB: Record<string, string> = { '-LRB-': '(', '-RRB-': ')', '-LSB-': '[', '-RSB-': ']', '-LCB-': '{', '-RCB-': '}', '-COLON-': ':' };
const unPtb = (s: string) => s.replace(/-(LRB|RRB|LSB|RSB|LCB|RCB|COLON)-/g, (m) => PTB[m]);

/** FEVER page names are `Psych_-LRB-season_2-RRB-`; make them `Psych (season 2)`. */
export function feverTitle(page: string): string {
  return unPtb(page.replace(/_/g, ' ')).replace(/\( /g, '(').replace(/ \)/g, ')').normalize('NFC');
}

/**
 * FEVER (`paper_test_processed.jsonl`): `pars` holds the gold evidence sentences in the order of
 * the distinct (page, line) pairs of `evidence`. Sentences are grouped by page and ordered by
 * line number, so each page becomes a Wikipedia-like paragraph of its known sentences.
 */
export function readFever(path: string): RawDocument[] {
  if (!existsSync(path)) throw new AmbiqaError(`FEVER file ${path} does not exist`, 'check the path given to --from');
  const pages = new Map<string, Map<number, string>>();
  // The claims whose evidence each page holds (all windows of the page count as theirs).
  const claims = new Map<string, Set<string>>();
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      if (!raw.trim()) return;
      let row: any;
      try {
        row = JSON.parse(raw);
      } catch (error) {
        throw new AmbiqaError(`${path}:${i + 1}: not valid JSON (${(error as Error).message})`, 'pass the FEVER JSONL file unchanged');
      }
      if (!Array.isArray(row?.pars) || !Array.isArray(row?.evidence)) {
        throw formatError(path, 'FEVER', `line ${i + 1} has no "pars"/"evidence"`);
      }
      const slots: [string, number][] = [];
      const seen = new Set<string>();
      for (const set of row.evidence) {
        for (const e of set) {
          if (typeof e?.[2] !== 'string') continue;
          const key = `${e[2]}\u0000${e[3]}`;
          if (seen.has(key)) continue;
          seen.add(key);
          slots.push([e[2], Number(e[3])]);
        }
      }
      row.pars.forEach((sentence: unknown, j: number) => {
        if (typeof sentence !== 'string' || !sentence.trim() || slots.length === 0) return;
        // In the rare record where counts disagree, fall back to the first page named.
        const [page, line] = slots[j] ?? [slots[0][0], Number.MAX_SAFE_INTEGER - j];
        if (row.id !== undefined) {
          let owners = claims.get(page);
          if (!owners) claims.set(page, (owners = new Set()));
          owners.add(questionKey('fever', String(row.id)));
        }
        let lines = pages.get(page);
        if (!lines) pages.set(page, (lines = new Map()));
        if (!lines.has(line)) lines.set(line, unPtb(sentence));
      });
    });
  const docs: RawDocument[] = [];
  for (const [page, lines] of pages) {
    const text = [...lines.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s).join(' ');
    const owners = claims.get(page);
    docs.push({ source: 'fever', title: feverTitle(page), text, ...(owners?.size ? { questions: [...owners] } : {}) });
  }
  return docs;
}

/** A user's JSONL of passages: `{id?, title, section?, text}` per line. */
export function readUserJsonl(path: string): RawDocument[] {
  return readPassageRows(path).map((row) => ({
    source: row.source ?? 'user',
    title: row.title,
    section: row.section,
    text: row.text,
    id: row.id,
    ...(row.annotatedFor ? { questions: row.annotatedFor } : {}),
  }));
}

export function readSource(source: CorpusSource): RawDocument[] {
  switch (source.kind) {
    case 'asqa':
      return readAsqa(source.path);
    case 'qa-feedback':
      return readQaFeedback(source.path);
    case 'hotpotqa-adversarial':
      return readHotpotAdversarial(source.path);
    case '2wikimultihop':
      return readTwoWikiMultihop(source.path);
    case 'fever':
      return readFever(source.path);
    case 'jsonl':
      return readUserJsonl(source.path);
  }
}

/** The files of `shared/data` that carry passages, where they exist. */
export function defaultSources(root = dataDir()): CorpusSource[] {
  const candidates: CorpusSource[] = [
    { kind: 'asqa', path: join(root, 'asqa', 'ASQA_dev.json') },
    { kind: 'qa-feedback', path: join(root, 'qa-feedback', 'dev.json') },
    { kind: 'hotpotqa-adversarial', path: join(root, 'hotpotqa-adversarial', 'sim_dev.json') },
    { kind: 'hotpotqa-adversarial', path: join(root, 'hotpotqa-adversarial', 'sim_train.json') },
    { kind: '2wikimultihop', path: join(root, '2wikimultihop', 'dev.json') },
    { kind: 'fever', path: join(root, 'fever', 'paper_test_processed.jsonl') },
  ];
  return candidates.filter((c) => existsSync(c.path));
}

export interface SourceStats {
  kind: SourceKind;
  path: string;
  documents: number;
  passages: number;
  duplicates: number;
}

export interface BuiltCorpus {
  passages: Passage[];
  stats: SourceStats[];
}

export interface BuildOptions {
  /** Target window length in words (default 100). */
  windowWords?: number;
}

/** Window, id and de-duplicate the documents of every source, in the order given. */
export function buildCorpus(sources: readonly CorpusSource[], options: BuildOptions = {}): BuiltCorpus {
  if (sources.length === 0) {
    throw new AmbiqaError('no corpus sources given and none found in the data folder', 'pass --from <kind>=<path> or set AMBIQA_DATA_DIR');
  }
  const words = options.windowWords ?? 100;
  const passages: Passage[] = [];
  const byContent = new Map<string, Passage>();
  const seenIds = new Set<string>();
  const stats: SourceStats[] = [];
  for (const source of sources) {
    const docs = readSource(source);
    const stat: SourceStats = { kind: source.kind, path: source.path, documents: docs.length, passages: 0, duplicates: 0 };
    for (const doc of docs) {
      const title = cleanText(doc.title);
      const section = doc.section ? cleanText(doc.section) : undefined;
      const windows = windowText(cleanText(doc.text), words);
      windows.forEach((text, w) => {
        const key = `${title}\u0000${section ?? ''}\u0000${text}`;
        const earlier = byContent.get(key);
        if (earlier) {
          // The same text annotated for another question: one passage, owned by both.
          for (const q of doc.questions ?? []) if (!earlier.annotatedFor?.includes(q)) (earlier.annotatedFor ??= []).push(q);
          stat.duplicates++;
          return;
        }
        let id = doc.id ? (windows.length > 1 ? `${doc.id}#${w}` : doc.id) : passageId(doc.source, title, section, text);
        if (seenIds.has(id)) {
          if (doc.id) throw new AmbiqaError(`${source.path}: passage id ${doc.id} occurs twice`, 'passage ids must be unique');
          id = passageId(doc.source, title, section, `${text}\u0000${w}`);
        }
        seenIds.add(id);
        const p: Passage = { id, title, text, source: doc.source };
        if (section) p.section = section;
        if (doc.questions?.length) p.annotatedFor = [...new Set(doc.questions)];
        byContent.set(key, p);
        passages.push(p);
        stat.passages++;
      });
    }
    stats.push(stat);
  }
  if (passages.length === 0) {
    throw new AmbiqaError('the sources gave no passages', 'check the files passed with --from');
  }
  return { passages, stats };
}
