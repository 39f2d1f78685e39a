/**
 * `buildReport(dir)`: the whole report pipeline for a run or sweep directory — load, pick the
 * figures, render one self-contained HTML file — as one function the CLI and notebooks share.
 * (Kept apart from mlflow.ts so that notebooks can import it without the tracking client.)
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { knownSecrets, redactText } from '../common/secrets';
import { dirname, resolve } from 'node:path';
import { readCoverageFile, type CoverageCurve } from '../plots/coverage';
import { exportFigures, type ExportedFigure, type PngRenderer } from '../plots/export';
import { followBrowsingServer } from '../tracking/server';
import type { RunTracker } from '../tracking/types';
import type { MethodCatalog } from '../plots/methods';
import { figuresForRun, figuresForSweep, type FigureChoice } from './figures';
import { goldForRows } from './gold';
import { loadRunOrSweep, type Loaded } from './load';
import { renderRunReport, renderSweepReport, type ReportOptions } from './render';
import { addReportGroups, type RowsAggregate } from './groups';

export interface BuildReportOptions {
  /**
   * The method catalog (`methodCatalog()` from src/pipelines/registry.ts): each method's figures,
   * decision statistics and judges. Passed in because the report may not import the pipelines.
   */
  methods: MethodCatalog;
  /**
   * Dataset file with the gold answers of rows written before format 3, which carry none
   * (default: the run config's dataset.path). Rows of format 3 carry their own.
   */
  dataPath?: string;
  /** `ambiqa coverage --out` files to plot. */
  coverageFiles?: string[];
  treeExample?: string;
  traces?: ReportOptions['traces'];
  maxMessageChars?: number;
  /** Show metrics by these groups too, computing those metrics.json lacks from the rows (`--group-by`; report/groups.ts). */
  groupBy?: readonly string[];
  /** The aggregate the runs used (`aggregateResults` of src/experiments), for groups computed here. */
  aggregate?: RowsAggregate;
}

export interface BuiltReport {
  loaded: Loaded;
  html: string;
  figures: FigureChoice;
  /** Notes for the person running it (gold not found, figures skipped). */
  notes: string[];
}

export function buildReport(dir: string, options: BuildReportOptions): BuiltReport {
  const loaded = loadRunOrSweep(dir);
  // Link MLflow where the user browses it now, not the port of a server that has since stopped.
  for (const target of loaded.kind === 'run' ? [loaded.run] : [loaded.sweep, ...loaded.sweep.runs]) {
    if (target.mlflow?.runUrl) {
      const { url, note } = followBrowsingServer(target.mlflow.runUrl);
      target.mlflow = { ...target.mlflow, runUrl: url, ...(note ? { runUrlNote: note } : {}) };
    }
  }
  const notes: string[] = [];
  if (options.groupBy && options.groupBy.length > 0) {
    notes.push(...addReportGroups(loaded.kind === 'run' ? [loaded.run] : loaded.sweep.runs, options.groupBy, options.aggregate));
  }
  const coverage: CoverageCurve[] = (options.coverageFiles ?? []).flatMap((f) => readCoverageFile(f));
  const firstRun = loaded.kind === 'run' ? loaded.run : loaded.sweep.runs[0];
  // Gold from the rows' targets; the dataset file only for rows written before format 3.
  const rows = loaded.kind === 'run' ? loaded.run.results : loaded.sweep.runs.flatMap((r) => r.results);
  const { gold: goldSet, error } = goldForRows(rows, firstRun.config, options.dataPath);
  if (error) notes.push(`gold answers not shown: ${error}`);
  const inputs = { gold: goldSet?.dqs, answers: goldSet?.answers, coverage, treeExample: options.treeExample };
  const figures = loaded.kind === 'run' ? figuresForRun(loaded.run, options.methods, inputs) : figuresForSweep(loaded.sweep.runs, options.methods, inputs);
  for (const s of figures.skipped) notes.push(`figure ${s.name} not drawn: ${s.reason}`);
  const reportOptions: ReportOptions = {
    figures,
    ...(goldSet ? { gold: goldSet.info } : {}),
    ...(options.traces ? { traces: options.traces } : {}),
    ...(options.maxMessageChars ? { maxMessageChars: options.maxMessageChars } : {}),
  };
  const rendered = loaded.kind === 'run' ? renderRunReport(loaded.run, options.methods, reportOptions) : renderSweepReport(loaded.sweep, options.methods, reportOptions);
  // Run dirs written before a key was known (or by an older version) may still hold it; mask
  // every secret this process knows, raw and as the page escapes it.
  const html = redactHtml(rendered);
  return { loaded, html, figures, notes };
}

/** `redactText` over a page: each known secret also in its HTML-escaped form. */
export function redactHtml(html: string): string {
  const secrets = knownSecrets();
  const escaped = secrets.map((x) => x.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;'));
  return redactText(html, [...new Set([...secrets, ...escaped])].sort((a, b) => b.length - a.length));
}

export function writeReport(report: BuiltReport, out: string): string {
  const path = resolve(out);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, report.html);
  return path;
}

/** Export the report's figures as HTML + PNG files (and log them and the report to MLflow). */
export async function exportReportFigures(
  report: BuiltReport,
  outDir: string,
  options: { png?: boolean; renderer?: PngRenderer; tracker?: RunTracker } = {},
): Promise<ExportedFigure[]> {
  const figures = Object.fromEntries(report.figures.figures.map((f) => [f.name, f.figure]));
  return exportFigures(figures, outDir, {
    formats: options.png === false ? ['html'] : ['html', 'png'],
    ...(options.renderer ? { renderer: options.renderer } : {}),
    ...(options.tracker ? { tracker: options.tracker } : {}),
  });
}
