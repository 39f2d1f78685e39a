/**
 * A study bundle (`ambiqa bundle`): one static site for the runs, sweeps and comparisons of a
 * study. `index.html` lists them with their headline metrics and what produced them; each has a
 * page drawn by the report's own renderers (render.ts, compare.ts), with plotly.js written once
 * under `assets/` and loaded by relative path instead of inlined in every page; pages link each
 * other (a sweep to its points' run pages, a comparison to its runs when they are bundled) and
 * back to the index; each run's rows are downloadable as JSONL and CSV beside its page.
 *
 * Every address in the site is relative and names a file (`runs/x/index.html`, never a folder),
 * so it opens from file:// as from any static host, and nothing on a page asks the network for
 * anything. What came from a model or a dataset is escaped in HTML and guarded in CSV (a cell
 * starting with = + - @ is not read as a formula); known secrets are masked in every file.
 *
 * Layout:
 *   index.html, ambiqa-bundle.json (the manifest: what is where, and where it came from)
 *   assets/plotly.min.js
 *   runs/<slug>/index.html, results.jsonl, results.csv, config.yaml, metrics.json, provenance.json, figures/*.png
 *   sweeps/<slug>/index.html, sweep.yaml, summary.json, figures/*.png
 *   comparisons/<slug>/index.html, comparison.json
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../common/jsonl';
import { packageRoot } from '../config/paths';
import { knownSecrets, redactText } from '../common/secrets';
import { AmbiqaError } from '../errors';
import { chromiumPath, escapeHtml, exportFigures, plotlyJs, withPngRenderer } from '../plots/export';
import type { Figure } from '../plots/types';
import type { MethodCatalog } from '../plots/methods';
import { metricOf, pipelineOf } from '../plots/runs';
import { rowKey, runFiles, scoreValues, type ExampleResult } from '../run-files';
import type { Comparison } from '../run-files/comparison';
import { REPORT_CSS } from './assets';
import { buildLoadedReport, redactHtml, type BuiltReport } from './build';
import { isComparisonFile, loadComparisonTraces, readComparison, renderComparisonReport } from './compare';
import { isRunDir, isSweepDir, loadRun, loadSweep, type LoadedRun, type LoadedSweep } from './load';
import type { ReportOptions } from './render';

export const BUNDLE_MANIFEST = 'ambiqa-bundle.json';
export const BUNDLE_KIND = 'ambiqa.bundle';
const PLOTLY_ASSET = 'assets/plotly.min.js';

// ------------------------------------------------------------------------------ provenance

/**
 * What produced a run, as far as its folder says. Read from `provenance.json` in the run folder
 * (written when the run starts, by `ambiqa reproduce`'s recording: `code`, `data`, `models`,
 * `engine`, `retriever`), else a `provenance` object in `run.json`; also accepted in the field
 * names of src/experiments/provenance.ts's `Provenance` or as MLflow tag names
 * (`ambiqa.git.commit`, `ambiqa.model.llm.sha256`, …). Whatever is not there is `undefined` and
 * shown as "not recorded": a page never guesses.
 */
export interface PageProvenance {
  commit?: string;
  dirty?: boolean;
  ambiqaVersion?: string;
  /** Each model the run recorded: role (llm, judge, embedder), name, sha256 (in-process models), endpoint. */
  models: Array<{ role: string; name?: string; sha256?: string; provider?: string; baseUrl?: string }>;
  /** The LLM as the traces name it (provider/model), which every run has. */
  tracedLlm?: string;
  datasetSha256?: string;
  datasetPath?: string;
  /** Every data file recorded (dataset, demos, ids, corpus …) by config field. */
  dataFiles: Array<{ field: string; path?: string; sha256?: string }>;
  engine?: string;
  /** The retriever's own description (engine, index checksum, server), as recorded. */
  retriever?: string;
  /** sha256 of the run's config.yaml as written. */
  configSha256?: string;
  /** The file the provenance was read from (relative to the run folder), if any. */
  source?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const obj = (v: unknown): Record<string, unknown> | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

function readJsonObject(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return obj(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    return undefined;
  }
}

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

type Recorded = Omit<PageProvenance, 'configSha256' | 'source' | 'tracedLlm'>;

/** Normalise a recorded provenance object (provenance.json, `Provenance` field names or MLflow tag names) into `PageProvenance`. */
export function normaliseProvenance(raw: Record<string, unknown>): Recorded {
  const tags = obj(raw.tags) ?? raw;
  const tag = (k: string) => str(tags[k]);
  const code = obj(raw.code) ?? {};
  const models: PageProvenance['models'] = [];
  const model = (role: string, o: Record<string, unknown>) => {
    const m: PageProvenance['models'][number] = { role };
    for (const k of ['name', 'sha256', 'provider', 'baseUrl'] as const) if (str(o[k])) m[k] = str(o[k])!;
    models.push(m);
  };
  if (Array.isArray(raw.models)) for (const m of raw.models) model(str(obj(m)?.role) ?? 'model', obj(m) ?? {});
  else for (const [role, m] of Object.entries(obj(raw.models) ?? {})) if (obj(m)) model(role, obj(m)!);
  for (const role of ['llm', 'judge', 'embedder']) {
    const name = tag(`ambiqa.model.${role}`);
    const sha256 = tag(`ambiqa.model.${role}.sha256`);
    if ((name || sha256) && !models.some((m) => m.role === role)) models.push({ role, ...(name ? { name } : {}), ...(sha256 ? { sha256 } : {}) });
  }
  const dataFiles: PageProvenance['dataFiles'] = [];
  for (const [field, f] of Object.entries(obj(raw.data) ?? {})) {
    const o = obj(f);
    if (o) dataFiles.push({ field, ...(str(o.path) ? { path: str(o.path)! } : {}), ...(str(o.sha256) ? { sha256: str(o.sha256)! } : {}) });
  }
  const legacyDataset = obj(raw.dataset);
  if (!dataFiles.some((d) => d.field === 'dataset')) {
    const sha256 = str(legacyDataset?.sha256) ?? str(raw.datasetSha256) ?? tag('ambiqa.data.dataset.sha256') ?? tag('ambiqa.dataset.sha256');
    const path = str(legacyDataset?.path) ?? tag('ambiqa.data.dataset.path') ?? tag('ambiqa.dataset.path');
    if (sha256 || path) dataFiles.unshift({ field: 'dataset', ...(path ? { path } : {}), ...(sha256 ? { sha256 } : {}) });
  }
  const engineObj = obj(raw.engine);
  const engine =
    str(raw.engine) ??
    (engineObj
      ? [
          str(engineObj.nodeLlamaCpp) ? `node-llama-cpp ${str(engineObj.nodeLlamaCpp)}` : undefined,
          str(engineObj.llamaCpp) ? `llama.cpp ${str(engineObj.llamaCpp)}` : undefined,
          str(engineObj.cpu) ? `CPU ${str(engineObj.cpu)}` : undefined,
          str(engineObj.name),
          str(engineObj.version),
          str(engineObj.build),
        ].filter(Boolean).join(', ') || undefined
      : undefined) ??
    str(raw.engineBuild) ??
    tag('ambiqa.engine.node_llama_cpp') ??
    tag('ambiqa.engine');
  const retrieverObj = obj(raw.retriever);
  const retriever = retrieverObj ? Object.entries(retrieverObj).filter(([, v]) => str(v)).map(([k, v]) => `${k}=${String(v)}`).join(', ') || undefined : undefined;
  const dirtyRaw = code.dirty ?? raw.gitDirty ?? raw.dirty ?? tags['ambiqa.git.dirty'];
  const out: Recorded = { models, dataFiles };
  const commit = str(code.commit) ?? str(raw.gitCommit) ?? str(raw.commit) ?? tag('ambiqa.git.commit') ?? tag('mlflow.source.git.commit');
  if (commit) out.commit = commit;
  if (typeof dirtyRaw === 'boolean') out.dirty = dirtyRaw;
  else if (dirtyRaw === 'true' || dirtyRaw === 'false') out.dirty = dirtyRaw === 'true';
  const version = str(code.ambiqaVersion) ?? str(raw.ambiqaVersion) ?? tag('ambiqa.version');
  if (version) out.ambiqaVersion = version;
  const dataset = dataFiles.find((d) => d.field === 'dataset');
  if (dataset?.sha256) out.datasetSha256 = dataset.sha256;
  if (dataset?.path) out.datasetPath = dataset.path;
  if (engine) out.engine = engine;
  if (retriever) out.retriever = retriever;
  return out;
}

export function runProvenance(run: LoadedRun): PageProvenance {
  let found: PageProvenance = { models: [], dataFiles: [] };
  const file = readJsonObject(join(run.dir, runFiles.provenance));
  const inState = obj(readJsonObject(join(run.dir, runFiles.state))?.provenance);
  if (file) found = { ...normaliseProvenance(file), source: runFiles.provenance };
  else if (inState) found = { ...normaliseProvenance(inState), source: runFiles.state };
  const trace = run.traces[0];
  if (trace) found.tracedLlm = `${trace.llm.provider}/${trace.llm.model}`;
  const config = join(run.dir, runFiles.config);
  if (existsSync(config)) found.configSha256 = sha256File(config);
  return found;
}

// ------------------------------------------------------------------------------ downloads

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled.
 * Text from a model or a dataset that starts with = + - @ (or a tab or carriage return) would be
 * read as a formula by a spreadsheet (CSV injection): it gets a leading apostrophe, the guard
 * spreadsheets themselves use, so the cell shows the text and runs nothing. Numbers written here
 * (scores) are not guarded: a negative score is a number, not a formula.
 */
export function csvCell(value: string | number | undefined, guard = true): string {
  if (value === undefined) return '';
  let text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value;
  if (guard && typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The rows as CSV: id, trial (when any row has one), question, output, error (when any), one column per score. */
export function resultsCsv(rows: readonly ExampleResult[]): string {
  const scoreNames = [...new Set(rows.flatMap((r) => Object.keys(scoreValues(r))))];
  const trials = rows.some((r) => (r.trial ?? 0) > 0);
  const errors = rows.some((r) => r.error !== undefined);
  const head = ['id', ...(trials ? ['trial'] : []), 'question', 'output', ...(errors ? ['error'] : []), ...scoreNames];
  const lines = [head.map((h) => csvCell(h)).join(',')];
  for (const r of rows) {
    const scores = scoreValues(r);
    lines.push(
      [
        csvCell(r.id),
        ...(trials ? [csvCell(r.trial ?? 0)] : []),
        csvCell(r.question),
        csvCell(r.output),
        ...(errors ? [csvCell(r.error)] : []),
        ...scoreNames.map((n) => csvCell(scores[n])),
      ].join(','),
    );
  }
  return lines.join('\r\n') + '\r\n';
}

// ------------------------------------------------------------------------------ inputs

export type BundleInputKind = 'run' | 'sweep' | 'comparison';

/** The comparison file a path names: the file itself, or `comparison.json` in a folder `ambiqa compare` wrote. */
function comparisonFileOf(abs: string): string | undefined {
  if (isComparisonFile(abs)) return abs;
  const inside = join(abs, 'comparison.json');
  return existsSync(abs) && statSync(abs).isDirectory() && isComparisonFile(inside) ? inside : undefined;
}

/** What a path given to `ambiqa bundle` is; one line naming it when it is none of the three. */
export function classifyBundleInput(path: string): { kind: BundleInputKind; path: string } {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new AmbiqaError(`${path}: does not exist`, 'pass run folders, sweep folders and comparison files');
  if (existsSync(join(abs, BUNDLE_MANIFEST))) throw new AmbiqaError(`${path}: is an ambiqa bundle, not a run, sweep or comparison`, 'pass the folders and files the bundle was built from');
  const comparison = comparisonFileOf(abs);
  if (comparison) return { kind: 'comparison', path: comparison };
  if (statSync(abs).isDirectory()) {
    if (isRunDir(abs)) return { kind: 'run', path: abs };
    if (isSweepDir(abs)) return { kind: 'sweep', path: abs };
  }
  throw new AmbiqaError(
    `${path}: not a run folder (no ${runFiles.results} or ${runFiles.metrics}), a sweep folder (no run folders under runs/) or a comparison file (no "kind": "ambiqa.comparison")`,
    'pass what `ambiqa run`, `ambiqa sweep` and `ambiqa compare` wrote',
  );
}

// ------------------------------------------------------------------------------ manifest

const manifestEntrySchema = z.object({
  kind: z.enum(['run', 'sweep', 'comparison']),
  name: z.string(),
  /** The page, relative to the bundle. */
  page: z.string(),
  /** The folder or file it was built from (absolute, on the machine that built it). */
  source: z.string(),
  /** A sweep point: the sweep's page. */
  sweep: z.string().optional(),
  /** Runs: the downloads and copies beside the page, relative to the bundle. */
  files: z.array(z.string()).optional(),
  provenance: z.record(z.string(), z.unknown()).optional(),
});

export const bundleManifestSchema = z.object({
  kind: z.literal(BUNDLE_KIND),
  format: z.literal(1),
  createdAt: z.string(),
  /** The ambiqa that built it. */
  ambiqaVersion: z.string().optional(),
  entries: z.array(manifestEntrySchema),
});
export type BundleManifest = z.output<typeof bundleManifestSchema>;
export type BundleEntry = z.output<typeof manifestEntrySchema>;

/** The manifest of a bundle folder, or undefined when the folder is not one. */
export function readBundleManifest(dir: string): BundleManifest | undefined {
  const raw = readJsonObject(join(dir, BUNDLE_MANIFEST));
  if (!raw) return undefined;
  const parsed = bundleManifestSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

// ------------------------------------------------------------------------------ building

export interface BundleOptions {
  out: string;
  /** Replace `out` even when it is not a bundle. */
  force?: boolean;
  /** The method catalog (`methodCatalog()`): figures, decision statistics, judges. */
  methods: MethodCatalog;
  /** Traces embedded in run pages (default compact); sweep pages never embed them (their points' pages do). */
  traces?: ReportOptions['traces'];
  dataPath?: string;
  generatedAt?: string;
  /**
   * Render a PNG of every figure whose run or sweep folder holds none (headless chromium, as
   * `ambiqa report --figures-dir` does), so every figure has its fallback. Default: only the PNGs
   * the folders hold are copied.
   */
  png?: boolean;
}

export interface BuiltBundle {
  out: string;
  manifest: BundleManifest;
  /** Bytes on disk of every file written. */
  bytes: number;
  notes: string[];
}

interface RunItem {
  kind: 'run';
  run: LoadedRun;
  slug: string;
  /** The sweep page it belongs to, when it is a sweep's point. */
  sweepSlug?: string;
  provenance: PageProvenance;
}
interface SweepItem {
  kind: 'sweep';
  sweep: LoadedSweep;
  slug: string;
  points: RunItem[];
}
interface ComparisonItem {
  kind: 'comparison';
  comparison: Comparison;
  file: string;
  slug: string;
}

/** A folder-safe, unique name for a page: letters, digits and `._-` of the name. */
function slugger(): (name: string) => string {
  const used = new Set<string>();
  return (name) => {
    const base = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 80) || 'item';
    let slug = base;
    for (let i = 2; used.has(slug.toLowerCase()); i++) slug = `${base}-${i}`;
    used.add(slug.toLowerCase());
    return slug;
  };
}

const within = (child: string, parent: string): boolean => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);

/** Refuse an --out that would replace something that is not a bundle, or that holds the inputs. */
function checkOut(out: string, inputs: readonly string[], force: boolean): void {
  for (const input of inputs) {
    if (within(input, out)) throw new AmbiqaError(`--out ${out}: holds the input ${input}; replacing it would delete it`, 'write the bundle to a new folder');
  }
  if (within(process.cwd(), out)) throw new AmbiqaError(`--out ${out}: holds the current folder; replacing it would delete it`, 'write the bundle to a new folder');
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new AmbiqaError(`--out ${out}: exists and is not a folder`, 'choose a new folder for the bundle');
  if (readdirSync(out).length === 0 || readBundleManifest(out) || force) return;
  throw new AmbiqaError(`--out ${out}: exists and is not an ambiqa bundle (no ${BUNDLE_MANIFEST}); refusing to replace it`, 'choose a new folder, or pass --force to replace it');
}

const fmt = (x: number | null | undefined, digits = 1) => (x === null || x === undefined || !Number.isFinite(x) ? '' : x.toFixed(digits));

/** Bundle the given run folders, sweep folders and comparison files into one static site at `options.out`. */
export async function buildBundle(paths: readonly string[], options: BundleOptions): Promise<BuiltBundle> {
  if (paths.length === 0) throw new AmbiqaError('no run folders, sweep folders or comparison files given', 'e.g. `ambiqa bundle artifacts/runs/a artifacts/sweeps/s --out study`');
  const out = resolve(options.out);
  const inputs = paths.map(classifyBundleInput);
  checkOut(out, inputs.map((i) => i.path), options.force ?? false);
  if (options.png && !existsSync(chromiumPath())) {
    throw new AmbiqaError(`--png: no chromium at ${chromiumPath()} to render the figures' PNGs`, 'install it with `npx ambiqa setup`, set AMBIQA_CHROMIUM, or leave out --png (the PNGs the run folders hold are still copied)');
  }
  /** Figures to render as PNG beside a page (`options.png`): the page's figures folder → name → figure. */
  const toRender: Array<{ dir: string; figures: Record<string, Figure> }> = [];
  const queueRender = (dir: string, wanted: readonly string[], report: BuiltReport) => {
    const figures = Object.fromEntries(report.figures.figures.filter((f) => wanted.includes(f.name)).map((f) => [f.name, f.figure]));
    if (Object.keys(figures).length > 0) toRender.push({ dir: join(dir, 'figures'), figures });
  };
  const generatedAt = options.generatedAt ?? new Date().toISOString();
  const notes: string[] = [];
  const slug = { run: slugger(), sweep: slugger(), comparison: slugger() };

  // Load each input once; a run given twice, or given and also a sweep's point, gets one page.
  const runsByDir = new Map<string, RunItem>();
  const sweeps: SweepItem[] = [];
  const comparisons: ComparisonItem[] = [];
  const addRun = (run: LoadedRun, sweepSlug?: string): RunItem => {
    const known = runsByDir.get(run.dir);
    if (known) {
      if (sweepSlug && !known.sweepSlug) known.sweepSlug = sweepSlug;
      return known;
    }
    const item: RunItem = { kind: 'run', run, slug: slug.run(run.name), ...(sweepSlug ? { sweepSlug } : {}), provenance: runProvenance(run) };
    runsByDir.set(run.dir, item);
    return item;
  };
  for (const input of inputs) {
    if (input.kind === 'sweep') {
      if (sweeps.some((s) => s.sweep.dir === input.path)) continue;
      const sweep = loadSweep(input.path);
      const s = slug.sweep(sweep.name);
      sweeps.push({ kind: 'sweep', sweep, slug: s, points: sweep.runs.map((r) => addRun(r, s)) });
    } else if (input.kind === 'comparison') {
      if (comparisons.some((c) => c.file === input.path)) continue;
      const comparison = readComparison(input.path);
      const parent = basename(dirname(input.path));
      comparisons.push({ kind: 'comparison', comparison, file: input.path, slug: slug.comparison(parent && parent !== '.' ? parent : basename(input.path, '.json')) });
    }
  }
  // Plain runs after the sweeps, so that a run also given as a sweep's point is known as one.
  for (const input of inputs) if (input.kind === 'run' && !runsByDir.has(input.path)) addRun(loadRun(input.path));
  const runs = [...runsByDir.values()];

  // Build in a sibling folder and move it into place: an interrupted bundle leaves `out` as it was.
  const building = join(dirname(out), `.${basename(out)}.building-${process.pid}`);
  rmSync(building, { recursive: true, force: true });
  mkdirSync(join(building, 'assets'), { recursive: true });
  writeFileSync(join(building, PLOTLY_ASSET), plotlyJs());
  const entries: BundleEntry[] = [];
  const runPage = (r: RunItem) => `runs/${r.slug}/index.html`;
  const sweepPage = (s: SweepItem) => `sweeps/${s.slug}/index.html`;
  const pageOptions = (pagePath: string, framing: { preface: string; afterHeader: string }) => ({ plotlySrc: rel(pagePath, PLOTLY_ASSET), ...framing });

  try {
    for (const r of runs) {
      const dir = join(building, 'runs', r.slug);
      mkdirSync(dir, { recursive: true });
      const files = writeRunDownloads(r.run, dir);
      const page = runPage(r);
      const sweep = r.sweepSlug ? sweeps.find((s) => s.slug === r.sweepSlug) : undefined;
      const pngs = pngCopier(r.run.dir, dir, options.png ?? false);
      const preface = prefaceHtml(page, {
        kind: 'run',
        up: sweep ? [{ href: sweepPage(sweep), text: `sweep ${sweep.sweep.name}` }] : [],
        downloads: [
          { href: `runs/${r.slug}/results.csv`, text: 'results.csv' },
          { href: `runs/${r.slug}/results.jsonl`, text: 'results.jsonl' },
          ...files.filter((f) => f !== 'results.csv' && f !== 'results.jsonl').map((f) => ({ href: `runs/${r.slug}/${f}`, text: f })),
        ],
        provenance: provenanceTable(r.provenance, r.run, rel(page, `runs/${r.slug}/${runFiles.config}`)),
      });
      const report = buildLoadedReport({ kind: 'run', run: r.run }, {
        methods: options.methods,
        ...(options.dataPath ? { dataPath: options.dataPath } : {}),
        traces: options.traces ?? 'compact',
        page: pageOptions(page, preface),
        figurePng: pngs.png,
      });
      for (const n of report.notes) notes.push(`${r.run.name}: ${n}`);
      queueRender(dir, pngs.missing(), report);
      writeFileSync(join(building, page), report.html);
      entries.push({
        kind: 'run',
        name: r.run.name,
        page,
        source: r.run.dir,
        ...(sweep ? { sweep: sweepPage(sweep) } : {}),
        files: [...files, ...pngs.copied()].map((f) => `runs/${r.slug}/${f}`),
        provenance: { ...r.provenance },
      });
    }
    for (const s of sweeps) {
      const dir = join(building, 'sweeps', s.slug);
      mkdirSync(dir, { recursive: true });
      const page = sweepPage(s);
      const pngs = pngCopier(s.sweep.dir, dir, options.png ?? false);
      // The sweep's spec and summary, for download (through the secret mask, as every copy).
      const copies = ['sweep.yaml', 'summary.json'].filter((f) => existsSync(join(s.sweep.dir, f)));
      for (const f of copies) writeFileAtomic(join(dir, f), readFileSync(join(s.sweep.dir, f), 'utf8'));
      const preface = prefaceHtml(page, {
        kind: 'sweep',
        up: [],
        downloads: copies.map((f) => ({ href: `sweeps/${s.slug}/${f}`, text: f })),
        links: {
          title: 'Points of this sweep',
          items: s.points.map((p, i) => ({ href: runPage(p), text: s.sweep.runs[i]?.sweepValues ? pointLabel(s.sweep.runs[i]!) : p.run.name, note: headline(p.run) })),
        },
        provenance: sweepProvenanceHtml(s),
      });
      const report = buildLoadedReport({ kind: 'sweep', sweep: s.sweep }, {
        methods: options.methods,
        ...(options.dataPath ? { dataPath: options.dataPath } : {}),
        traces: 'none',
        page: pageOptions(page, preface),
        figurePng: pngs.png,
        // Each point's examples are on its own page; the sweep's page keeps its tables of figures.
        pointPage: (i) => (s.points[i] ? rel(page, runPage(s.points[i]!)) : undefined),
      });
      for (const n of report.notes) notes.push(`${s.sweep.name}: ${n}`);
      queueRender(dir, pngs.missing(), report);
      writeFileSync(join(building, page), report.html);
      entries.push({ kind: 'sweep', name: s.sweep.name, page, source: s.sweep.dir, files: [...copies, ...pngs.copied()].map((f) => `sweeps/${s.slug}/${f}`) });
    }
    for (const c of comparisons) {
      const dir = join(building, 'comparisons', c.slug);
      mkdirSync(dir, { recursive: true });
      const page = `comparisons/${c.slug}/index.html`;
      writeFileAtomic(join(dir, 'comparison.json'), readFileSync(c.file, 'utf8'));
      const preface = prefaceHtml(page, {
        kind: 'comparison',
        up: [],
        downloads: [{ href: `comparisons/${c.slug}/comparison.json`, text: 'comparison.json' }],
        links: {
          title: 'Compared runs',
          items: c.comparison.runs.map((run) => {
            const bundled = run.dir ? runsByDir.get(resolve(run.dir)) : undefined;
            return bundled
              ? { href: runPage(bundled), text: run.name, note: run.name === c.comparison.baseline ? 'baseline' : '' }
              : { text: run.name, note: `not in this bundle${run.name === c.comparison.baseline ? ' (baseline)' : ''}` };
          }),
        },
        provenance: comparisonProvenanceHtml(c, runsByDir),
      });
      const html = renderComparisonReport(c.comparison, { traces: options.traces === 'none' ? new Map() : loadComparisonTraces(c.comparison), traceMode: options.traces ?? 'compact', generatedAt, page: pageOptions(page, preface) });
      writeFileSync(join(building, page), html);
      entries.push({ kind: 'comparison', name: comparisonTitle(c.comparison), page, source: c.file, files: [`comparisons/${c.slug}/comparison.json`] });
    }
    if (toRender.length > 0) {
      // One chromium with plotly loaded for every figure (seconds to start, then a fraction of a second each).
      await withPngRenderer(async (renderer) => {
        for (const job of toRender) await exportFigures(job.figures, job.dir, { formats: ['png'], renderer });
      });
      const rendered = toRender.reduce((n, j) => n + Object.keys(j.figures).length, 0);
      notes.push(`rendered ${rendered} figure PNG${rendered === 1 ? '' : 's'} the run and sweep folders did not hold`);
      for (const e of entries) {
        const job = toRender.find((j) => join(building, e.page, '..', 'figures') === j.dir);
        if (job) e.files = [...(e.files ?? []), ...Object.keys(job.figures).map((n) => `${dirname(e.page)}/figures/${n}.png`)];
      }
    }
    const version = ambiqaVersion();
    const manifest: BundleManifest = { kind: BUNDLE_KIND, format: 1, createdAt: generatedAt, ...(version ? { ambiqaVersion: version } : {}), entries };
    writeFileAtomic(join(building, BUNDLE_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
    writeFileSync(join(building, 'index.html'), indexHtml({ runs, sweeps, comparisons, runPage, sweepPage, generatedAt }));
    if (existsSync(out)) rmSync(out, { recursive: true, force: true });
    mkdirSync(dirname(out), { recursive: true });
    renameSync(building, out);
    return { out, manifest, bytes: diskBytes(out), notes };
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw error;
  }
}

/** `to` (a bundle path) as a relative URL from the page at `from` (a bundle path). */
function rel(from: string, to: string): string {
  const r = relative(dirname(from), to).split(sep).join('/');
  return r.split('/').map(encodeURIComponent).join('/');
}

function diskBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    total += s.isDirectory() ? diskBytes(p) : s.size;
  }
  return total;
}

/** results.jsonl (the rows as the run holds them, one per row key) and results.csv, plus config.yaml and metrics.json. */
function writeRunDownloads(run: LoadedRun, dir: string): string[] {
  const secrets = knownSecrets();
  // writeFileAtomic masks every known secret; rows are redacted before too, for the CSV's quoting.
  writeFileAtomic(join(dir, 'results.jsonl'), run.results.map((r) => JSON.stringify(r) + '\n').join(''));
  writeFileAtomic(join(dir, 'results.csv'), redactText(resultsCsv(run.results), secrets));
  const files = ['results.csv', 'results.jsonl'];
  // provenance.json too: `ambiqa reproduce <bundle>` re-runs a bundled run from these files.
  for (const name of [runFiles.config, runFiles.metrics, runFiles.provenance]) {
    const from = join(run.dir, name);
    if (existsSync(from)) {
      writeFileAtomic(join(dir, name), readFileSync(from, 'utf8'));
      files.push(name);
    }
  }
  return files;
}

/** The PNGs a run or sweep folder holds for its figures (`<dir>/figures/<name>.png`, written when figures were logged), copied beside the page. */
function pngCopier(sourceDir: string, pageDir: string, render: boolean): { png: (name: string) => string | undefined; copied: () => string[]; missing: () => string[] } {
  const copied: string[] = [];
  const missing: string[] = [];
  return {
    png: (name) => {
      if (!/^[A-Za-z0-9._-]+$/.test(name)) return undefined;
      const from = join(sourceDir, 'figures', `${name}.png`);
      if (!existsSync(from)) {
        if (!render) return undefined;
        // Rendered once the pages are written (buildBundle's `png`).
        missing.push(name);
        return `figures/${encodeURIComponent(name)}.png`;
      }
      mkdirSync(join(pageDir, 'figures'), { recursive: true });
      copyFileSync(from, join(pageDir, 'figures', `${name}.png`));
      copied.push(`figures/${name}.png`);
      return `figures/${encodeURIComponent(name)}.png`;
    },
    copied: () => [...copied],
    missing: () => [...missing],
  };
}

function pointLabel(run: LoadedRun): string {
  const values = run.sweepValues ?? {};
  const parts = Object.entries(values).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return parts.length > 0 ? parts.join(', ') : run.name;
}

/** The metric names of a run: metrics.json's, else the rows'. */
function metricNamesOf(run: LoadedRun): string[] {
  const names = new Set(Object.keys(run.metrics?.metrics ?? {}));
  if (names.size === 0) for (const r of run.results) for (const k of Object.keys(scoreValues(r))) names.add(k);
  return [...names];
}

/** A run's headline as text: each metric's mean and 95% CI. */
function headline(run: LoadedRun): string {
  return metricNamesOf(run)
    .map((m) => {
      const a = metricOf(run, m);
      if (!a) return '';
      return `${m} ${fmt(a.mean)}${a.ciLow !== a.ciHigh ? ` [${fmt(a.ciLow)}, ${fmt(a.ciHigh)}]` : ''}`;
    })
    .filter(Boolean)
    .join(' · ');
}

function comparisonTitle(c: Comparison): string {
  return `${c.runs.filter((r) => r.name !== c.baseline).map((r) => r.name).join(', ')} vs ${c.baseline}`;
}

// ------------------------------------------------------------------------------ HTML

const BUNDLE_CSS = `
nav.bundle{display:flex;gap:16px;flex-wrap:wrap;align-items:baseline;border-bottom:1px solid var(--line);padding-bottom:8px;margin-bottom:12px;font-size:14px}
section.provenance{background:var(--bg2);padding:8px 12px;margin-bottom:16px;font-size:13px}
section.provenance h2{margin:0 0 6px;border:0;font-size:15px}
section.provenance td.missing{color:var(--muted);font-style:italic}
code.hash{font-size:12px;word-break:break-all}
`;

/** Shows a figure's PNG when plotly.js did not load (a page copied without its assets/ folder). */
const PNG_FALLBACK_JS = `window.addEventListener('load',function(){if(window.Plotly)return;document.querySelectorAll('p.png-link a').forEach(function(a){var img=new Image();img.src=a.getAttribute('href');img.alt='figure';img.style.maxWidth='100%';a.parentNode.parentNode.insertBefore(img,a.parentNode);});});`;

interface Link {
  href?: string;
  text: string;
  note?: string;
}

/** The bundle's framing of every page: a bar above (back to the index, the kind, downloads), and after the page's title what produced it and its links. */
function prefaceHtml(
  page: string,
  o: { kind: BundleInputKind; up: Link[]; downloads: Link[]; links?: { title: string; items: Link[] }; provenance: string },
): { preface: string; afterHeader: string } {
  const a = (l: Link) => (l.href ? `<a href="${escapeHtml(rel(page, l.href))}">${escapeHtml(l.text)}</a>` : escapeHtml(l.text));
  const nav = [
    `<a href="${escapeHtml(rel(page, 'index.html'))}" class="to-index">← study index</a>`,
    `<span class="note">${o.kind} page</span>`,
    ...o.up.map((l) => `<span>part of ${a(l)}</span>`),
    ...(o.downloads.length > 0 ? [`<span>download: ${o.downloads.map(a).join(' · ')}</span>`] : []),
  ];
  const links = o.links
    ? `<section class="bundle-links"><h2>${escapeHtml(o.links.title)}</h2><ul>${o.links.items.map((l) => `<li>${a(l)}${l.note ? ` <span class="note">${escapeHtml(l.note)}</span>` : ''}</li>`).join('')}</ul></section>`
    : '';
  return {
    preface: `<style>${BUNDLE_CSS}</style><nav class="bundle">${nav.join('')}</nav><script>${PNG_FALLBACK_JS}</script>`,
    afterHeader: `${o.provenance}${links}`,
  };
}

const missing = '<td class="missing">not recorded</td>';
const cell = (v: string | undefined, code = false) => (v ? `<td>${code ? `<code class="hash">${escapeHtml(v)}</code>` : escapeHtml(v)}</td>` : missing);

/** A model as one line: role, name, provider or endpoint, and its sha256 or "sha256 not recorded". */
function modelHtml(m: PageProvenance['models'][number]): string {
  const where = [m.provider, m.baseUrl].filter(Boolean).join(' at ');
  const sha = m.sha256 ? `<code class="hash">sha256 ${escapeHtml(m.sha256)}</code>` : m.baseUrl ? '<span class="missing">endpoint: no file checksum</span>' : '<span class="missing">sha256 not recorded</span>';
  return `${escapeHtml(m.role)}: ${escapeHtml(m.name ?? '(unnamed)')}${where ? ` <span class="note">(${escapeHtml(where)})</span>` : ''} ${sha}`;
}

function provenanceRows(p: PageProvenance, run: LoadedRun, configHref: string | undefined): string {
  const dataset = run.config.dataset;
  const d = obj(dataset);
  const datasetName = typeof dataset === 'string' ? dataset : d ? [str(d.name), str(d.split)].filter(Boolean).join(' / ') : undefined;
  const models = p.models.length > 0 ? `<td>${p.models.map(modelHtml).join('<br>')}</td>` : missing;
  const commit = p.commit ? `${p.commit}${p.dirty ? ' (uncommitted changes)' : ''}` : undefined;
  const config = configHref && p.configSha256
    ? `<td><a href="${escapeHtml(configHref)}">config.yaml</a> <code class="hash">sha256 ${escapeHtml(p.configSha256)}</code></td>`
    : missing;
  const otherData = p.dataFiles.filter((f) => f.field !== 'dataset');
  return [
    `<tr><th>commit</th>${cell(commit, true)}</tr>`,
    `<tr><th>ambiqa</th>${cell(p.ambiqaVersion)}</tr>`,
    `<tr><th>config</th>${config}</tr>`,
    `<tr><th>models</th>${models}</tr>`,
    `<tr><th>LLM (traces)</th>${cell(p.tracedLlm)}</tr>`,
    `<tr><th>dataset</th>${cell([datasetName, p.datasetPath].filter(Boolean).join(' · ') || undefined)}</tr>`,
    `<tr><th>dataset sha256</th>${cell(p.datasetSha256, true)}</tr>`,
    otherData.length > 0
      ? `<tr><th>other data</th><td>${otherData.map((f) => `${escapeHtml(f.field)}: ${escapeHtml(f.path ?? '')} ${f.sha256 ? `<code class="hash">sha256 ${escapeHtml(f.sha256)}</code>` : '<span class="missing">sha256 not recorded</span>'}`).join('<br>')}</td></tr>`
      : '',
    `<tr><th>engine build</th>${cell(p.engine)}</tr>`,
    p.retriever ? `<tr><th>retriever</th>${cell(p.retriever)}</tr>` : '',
    scoringRow(run),
    run.state ? `<tr><th>status</th>${cell(`${run.state.status}, ${run.state.done}/${run.state.total} questions, updated ${run.state.updatedAt}`)}</tr>` : '',
  ].join('');
}

/** Each re-scoring of the run (`ambiqa score --run`: metrics.json `scoring`): what, when, with which reader, by which version and commit. */
function scoringRow(run: LoadedRun): string {
  const scoring = run.metrics?.scoring ?? [];
  if (scoring.length === 0) return '';
  const line = (e: (typeof scoring)[number]) =>
    `${escapeHtml(e.metrics.join(', '))} at ${escapeHtml(e.at)}${e.reader ? ` with reader ${escapeHtml(e.reader)}` : ''} by ambiqa ${escapeHtml(e.version)}` +
    `${e.commit ? ` <code class="hash">${escapeHtml(e.commit)}</code>` : ''} <span class="note">(${escapeHtml(e.id)})</span>`;
  return `<tr><th>re-scored</th><td>${scoring.map(line).join('<br>')}</td></tr>`;
}

function provenanceTable(p: PageProvenance, run: LoadedRun, configHref: string): string {
  const source = p.source ? `from the run folder's ${escapeHtml(p.source)}` : 'the run folder records no provenance file';
  return `<section class="provenance"><h2>What produced this</h2><table class="provenance">${provenanceRows(p, run, configHref)}</table><p class="note">Read ${source}; built from ${escapeHtml(run.dir)}.</p></section>`;
}

/** One value when every point agrees, else each point's. */
function agreed(values: Array<string | undefined>): string | undefined {
  const set = [...new Set(values.map((v) => v ?? 'not recorded'))];
  if (set.length === 1) return set[0] === 'not recorded' ? undefined : set[0];
  return set.join(' | ');
}

function sweepProvenanceHtml(s: SweepItem): string {
  const ps = s.points.map((p) => p.provenance);
  const models = agreed(ps.map((p) => (p.models.length > 0 ? p.models.map((m) => `${m.role}: ${m.name ?? '?'} sha256 ${m.sha256 ?? 'not recorded'}`).join('; ') : undefined)));
  const rows = [
    ['commit', agreed(ps.map((p) => p.commit))],
    ['ambiqa', agreed(ps.map((p) => p.ambiqaVersion))],
    ['models', models],
    ['LLM (traces)', agreed(ps.map((p) => p.tracedLlm))],
    ['dataset sha256', agreed(ps.map((p) => p.datasetSha256))],
    ['engine build', agreed(ps.map((p) => p.engine))],
  ] as const;
  const sweepYaml = join(s.sweep.dir, 'sweep.yaml');
  const specSha = existsSync(sweepYaml) ? sha256File(sweepYaml) : undefined;
  return (
    `<section class="provenance"><h2>What produced this</h2><table class="provenance">` +
    `<tr><th>sweep spec</th>${specSha ? `<td><a href="sweep.yaml">sweep.yaml</a> <code class="hash">sha256 ${escapeHtml(specSha)}</code></td>` : missing}</tr>` +
    rows.map(([k, v]) => `<tr><th>${k}</th>${cell(v, k !== 'ambiqa' && k !== 'LLM (traces)')}</tr>`).join('') +
    `</table><p class="note">Over its ${s.points.length} points (each point's page has its own); built from ${escapeHtml(s.sweep.dir)}.</p></section>`
  );
}

function comparisonProvenanceHtml(c: ComparisonItem, runsByDir: ReadonlyMap<string, RunItem>): string {
  const m = c.comparison.method;
  const rows = c.comparison.runs.map((run) => {
    const p = run.dir ? runsByDir.get(resolve(run.dir))?.provenance : undefined;
    return `<tr><td>${escapeHtml(run.name)}</td>${cell(p?.commit, true)}${cell(p?.models.map((x) => `${x.name ?? x.role} ${x.sha256 ?? '(sha256 not recorded)'}`).join('; ') || undefined, true)}${cell(p?.datasetSha256, true)}</tr>`;
  });
  return (
    `<section class="provenance"><h2>What produced this</h2>` +
    `<p>ambiqa compare at ${escapeHtml(c.comparison.createdAt)}: baseline ${escapeHtml(c.comparison.baseline)}, metrics ${escapeHtml(c.comparison.metrics.join(', '))}, ${m.resamples} bootstrap resamples, seed ${m.seed}; from ${escapeHtml(c.file)}.</p>` +
    `<table class="provenance"><thead><tr><th>run</th><th>commit</th><th>models</th><th>dataset sha256</th></tr></thead><tbody>${rows.join('')}</tbody></table>` +
    `<p class="note">A run's provenance is shown when the run is in this bundle; otherwise its page and provenance are not here.</p></section>`
  );
}

/** The version of ambiqa that builds the bundle. */
function ambiqaVersion(): string | undefined {
  return str(readJsonObject(join(packageRoot, 'package.json'))?.version);
}

function indexHtml(o: {
  runs: RunItem[];
  sweeps: SweepItem[];
  comparisons: ComparisonItem[];
  runPage: (r: RunItem) => string;
  sweepPage: (s: SweepItem) => string;
  generatedAt: string;
}): string {
  const a = (href: string, text: string) => `<a href="${escapeHtml(rel('index.html', href))}">${escapeHtml(text)}</a>`;
  const produced = (p: PageProvenance) =>
    `<td>${p.commit ? `<code class="hash">${escapeHtml(p.commit.slice(0, 12))}</code>${p.dirty ? ' (dirty)' : ''}` : '<span class="missing">commit not recorded</span>'}<br>` +
    `${p.models.length > 0 ? p.models.map((m) => `${escapeHtml(m.name ?? m.role)}${m.sha256 ? ` <code class="hash">${escapeHtml(m.sha256.slice(0, 12))}…</code>` : ''}`).join('<br>') : escapeHtml(p.tracedLlm ?? 'model not recorded')}<br>` +
    `${p.datasetSha256 ? `data <code class="hash">${escapeHtml(p.datasetSha256.slice(0, 12))}…</code>` : '<span class="missing">dataset checksum not recorded</span>'}</td>`;
  const runRows = o.runs.map((r) => {
    const errors = r.run.results.filter((x) => x.error).length;
    const questions = new Set(r.run.results.map((x) => x.id)).size;
    const trials = Math.max(1, ...r.run.results.map((x) => (x.trial ?? 0) + 1));
    const rowsText = trials > 1 ? `${questions} × ${trials} trials` : String(new Set(r.run.results.map(rowKey)).size);
    const sweep = r.sweepSlug ? o.sweeps.find((s) => s.slug === r.sweepSlug) : undefined;
    return (
      `<tr><td>${a(o.runPage(r), r.run.name)}${sweep ? `<br><span class="note">point of ${escapeHtml(sweep.sweep.name)}</span>` : ''}</td>` +
      `<td>${escapeHtml(pipelineOf(r.run))}</td><td class="num">${rowsText}${errors ? ` <span class="note">(${errors} failed)</span>` : ''}</td>` +
      `<td>${escapeHtml(headline(r.run)) || '<span class="note">no metrics</span>'}</td>${produced(r.provenance)}` +
      `<td>${a(`runs/${r.slug}/results.csv`, 'CSV')} · ${a(`runs/${r.slug}/results.jsonl`, 'JSONL')}</td></tr>`
    );
  });
  const sweepRows = o.sweeps.map((s) => {
    const metrics = [...new Set(s.points.flatMap((p) => metricNamesOf(p.run)))];
    const ranges = metrics.map((m) => {
      const means = s.points.map((p) => ({ label: pointLabel(p.run), mean: metricOf(p.run, m)?.mean })).filter((x): x is { label: string; mean: number } => x.mean !== undefined && Number.isFinite(x.mean));
      if (means.length === 0) return '';
      const best = means.reduce((x, y) => (y.mean > x.mean ? y : x));
      const lo = Math.min(...means.map((x) => x.mean));
      return `${m} ${fmt(lo)}–${fmt(best.mean)} (highest: ${best.label})`;
    }).filter(Boolean);
    return (
      `<tr><td>${a(o.sweepPage(s), s.sweep.name)}</td><td>${escapeHtml(s.sweep.axes.join(', '))}</td><td class="num">${s.points.length}</td>` +
      `<td>${escapeHtml(ranges.join(' · '))}</td><td>${s.points.map((p) => a(o.runPage(p), pointLabel(p.run))).join('<br>')}</td>${produced(s.points[0]?.provenance ?? { models: [], dataFiles: [] })}</tr>`
    );
  });
  const comparisonRows = o.comparisons.map((c) => {
    const cmp = c.comparison;
    const deltas = cmp.rows.map((r) => `${r.run} ${r.metric} Δ ${Number.isFinite(r.meanDelta) ? `${r.meanDelta > 0 ? '+' : ''}${fmt(r.meanDelta)} [${fmt(r.ciLow)}, ${fmt(r.ciHigh)}]` : 'n/a'}${r.pHolm !== null ? ` p(Holm) ${r.pHolm < 0.001 ? r.pHolm.toExponential(1) : r.pHolm.toFixed(3)}` : ''}`);
    return (
      `<tr><td>${a(`comparisons/${c.slug}/index.html`, comparisonTitle(cmp))}</td><td>${escapeHtml(cmp.dataset)}</td><td class="num">${cmp.questions.length}</td>` +
      `<td>${deltas.map(escapeHtml).join('<br>')}</td><td>ambiqa compare, ${escapeHtml(cmp.createdAt)}<br>${cmp.method.resamples} resamples, seed ${cmp.method.seed}</td></tr>`
    );
  });
  const section = (title: string, head: string[], rows: string[]) =>
    rows.length === 0 ? '' : `<h2>${title}</h2><table class="study"><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
  const body = [
    `<h1>ambiqa study</h1><div class="meta"><span><b>runs:</b> ${o.runs.length}</span><span><b>sweeps:</b> ${o.sweeps.length}</span><span><b>comparisons:</b> ${o.comparisons.length}</span><span><b>bundled:</b> ${escapeHtml(o.generatedAt)} by ambiqa ${escapeHtml(ambiqaVersion() ?? '(version unknown)')}</span></div>`,
    section('Sweeps', ['sweep', 'axes', 'points', 'metric range over points', 'point pages', 'produced by (first point)'], sweepRows),
    section('Comparisons', ['comparison', 'dataset', 'questions', 'paired Δ [95% CI]', 'produced by'], comparisonRows),
    section('Runs', ['run', 'pipeline', 'questions', 'metrics: mean [95% CI]', 'produced by', 'download'], runRows),
    `<p class="note">Each page states what produced it (commit, config, models with their sha256, dataset checksum, engine build; "not recorded" where the run folder does not say). Per-question results of each run: CSV (id, trial, question, output, one column per score; cells that would start a spreadsheet formula begin with an apostrophe) and JSONL (the rows as the run wrote them). <code>${BUNDLE_MANIFEST}</code> lists every page and file with its source.</p>`,
  ].join('\n');
  return redactHtml(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>ambiqa study</title>
<style>${REPORT_CSS}${BUNDLE_CSS}.missing{color:var(--muted);font-style:italic}</style>
</head><body>
${body}
</body></html>
`);
}
