import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/jsonl';
import { AmbiqaError } from '../errors';
import type { RunTracker } from '../tracking/types';
import { configToYaml, resolveExperimentConfig, type ConfigRegistry, type ExperimentConfig, type LoadOptions } from './config';
import { expandGrid, gridAxes, type GridAxis, type GridPoint } from './grid';
import { applyOverrides } from './overrides';
import { noteOf, warnOf, type RunEnvironment } from './observers';
import { readRunJson, runFiles, writeJson, writeRunJson, type MlflowRecord } from '../run-files';
import { runStarted } from './run-dir';
import { acquireDirLock, SWEEP_LOCK_FILE } from './run-lock';
import { configParams, guard, type TrackingFactory } from './run-tracking';
import { runExperiment, type RunComponents } from './runner';
import { redactConfig } from './secrets';
import { stepsAreValues, sweepPairedMetrics, sweepPointMetrics, sweepPointTags, sweepStep } from './sweep-charts';
import { compareDirs, writeComparison, writeComparisonReport, type ComparedDirs } from '../report/compare';
import { trialsMarkdown } from '../report/compare-trials';
import { summaryCsv, summaryMarkdown, type SummaryRow } from './summary';
import { runExitStatus } from './cli-support';
import { ExitStatus, worstExitStatus } from './exit-status';

/**
 * `ambiqa sweep`: one run per point of the config's `sweep:` grid, each a nested MLflow run under
 * one parent, all in one process so that they share the loaded models and, through the LLM
 * cache, every identical call (VE's threshold sweep draws its n samples once, and every
 * threshold after the first replays them). The parent gets a summary table.
 *
 * Layout: `artifacts/sweeps/<name>/` holds `sweep.yaml`, `mlflow.json`, `summary.{md,csv,json}`
 * and `runs/<point label>/` (ordinary run dirs).
 */
export interface SweepRequest {
  /** The config as read from YAML, CLI overrides already applied. */
  raw: Record<string, unknown>;
  source: string;
  registry: ConfigRegistry;
  options: Pick<LoadOptions, 'name' | 'limit' | 'trials' | 'checkFiles'> & { defaultName: string };
  sweepDir: (name: string) => string;
  /**
   * Whether an existing sweep is finished. A function: decided under the sweep folder's lock
   * (the notebook's `existing: 'fresh'` empties the folder there first).
   */
  resume?: boolean | ((dir: string) => boolean);
  /** Checks before the first point runs, under the sweep folder's lock (the preflight of every point). */
  preflight?: (plan: SweepPlan) => Promise<void>;
  /** Builds a point's components; the caller shares models and caches between calls. */
  components: (config: ExperimentConfig) => Promise<RunComponents>;
  tracking?: TrackingFactory | null;
  /**
   * Signal, warnings, progress (labelled by point), tags and figures (each point's and the
   * sweep's ablations) for every point and the parent run.
   */
  env?: RunEnvironment;
  /** Printed lines (the plan, the summary). Default: stdout. */
  log?: (line: string) => void;
}

export interface SweepPlan {
  name: string;
  dir: string;
  base: ExperimentConfig;
  axes: GridAxis[];
  points: Array<{ point: GridPoint; config: ExperimentConfig; runDir: string }>;
  /** The point the others are compared with, paired (`sweep.reference`, default 0). */
  referenceIndex: number;
}

/** Validate the base config and every grid point before anything runs. */
export function planSweep(request: Pick<SweepRequest, 'raw' | 'source' | 'registry' | 'options' | 'sweepDir'>): SweepPlan {
  const { raw, source, registry, options } = request;
  const base = resolveExperimentConfig(raw, registry, { ...options, source });
  if (!base.sweep) {
    throw new AmbiqaError(`${source}: has no sweep: section`, 'add e.g. `sweep: {pipeline.options.threshold: [1, 2, 3, 4, 5]}`, or use `ambiqa run`');
  }
  const { reference, ...grid } = base.sweep;
  const axes = gridAxes(grid as Record<string, unknown[]>);
  const dir = request.sweepDir(base.name);
  const { sweep: _s, ...rawBase } = raw;
  const gridPoints = expandGrid(axes);
  const referenceIndex = findReferencePoint(axes, gridPoints, reference, source);
  const points = gridPoints.map((point) => {
    const pointRaw = applyOverrides(rawBase, point.overrides, `${source} (sweep point ${point.label})`);
    const config = resolveExperimentConfig(pointRaw, registry, {
      ...options,
      source: `${source} (sweep point ${point.label})`,
      name: `${base.name}.${point.label}`,
    });
    return { point, config, runDir: join(dir, 'runs', point.label) };
  });
  return { name: base.name, dir, base, axes, points, referenceIndex };
}

/**
 * The point `sweep.reference` names: a point label (`pruneThreshold=0.5`), a value of the only
 * axis (`0.5`), or a mapping from axis (label or dotted key) to value. Default: the first point.
 */
export function findReferencePoint(axes: readonly GridAxis[], points: readonly GridPoint[], reference: unknown, source = 'sweep'): number {
  if (reference === undefined || reference === null) return 0;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  let index = -1;
  if (typeof reference === 'string') index = points.findIndex((p) => p.label === reference);
  if (index < 0 && axes.length === 1 && typeof reference !== 'object') index = points.findIndex((p) => same(p.values[axes[0].label], reference));
  if (index < 0 && typeof reference === 'object' && !Array.isArray(reference)) {
    const wanted = Object.entries(reference as Record<string, unknown>).map(([k, v]) => [axes.find((a) => a.key === k || a.label === k)?.label, v] as const);
    if (wanted.every(([label]) => label !== undefined) && wanted.length === axes.length) {
      index = points.findIndex((p) => wanted.every(([label, v]) => same(p.values[label!], v)));
    }
  }
  if (index < 0) {
    throw new AmbiqaError(
      `${source}: sweep.reference ${JSON.stringify(reference)} is not a point of the grid`,
      `use a point label (${points.slice(0, 4).map((p) => p.label).join(', ')}${points.length > 4 ? ', …' : ''})${axes.length === 1 ? ` or one of ${JSON.stringify(axes[0].values)}` : ''}`,
    );
  }
  return index;
}

export interface SweepOutcome {
  status: 'FINISHED' | 'KILLED' | 'FAILED';
  /**
   * The worst of the points' exit statuses (`worstExitStatus`): 0 only when every point answered
   * every question; the rows say which point had which.
   */
  exitStatus: number;
  dir: string;
  rows: SummaryRow[];
  summary: string;
  mlflow: MlflowRecord | null;
}

/** Refuse (before models load) to write into an existing sweep without `--resume`. */
export function checkSweepDir(dir: string, resume: boolean): void {
  if (existsSync(join(dir, 'sweep.yaml')) && !resume) {
    throw new AmbiqaError(`sweep directory already exists: ${dir}`, 'add --resume to finish it, or --name <new-name> for a new sweep');
  }
}

export async function runSweep(request: SweepRequest): Promise<SweepOutcome> {
  const plan = planSweep(request);
  // One writer per sweep folder, as per run folder (run-lock.ts), taken once, here; each point's
  // run folder is locked by its own session.
  const lock = acquireDirLock(plan.dir, { file: SWEEP_LOCK_FILE, what: 'sweep directory', notify: noteOf(request.env) });
  try {
    const resume = typeof request.resume === 'function' ? request.resume(plan.dir) : (request.resume ?? false);
    checkSweepDir(plan.dir, resume);
    await request.preflight?.(plan);
    return await sweepSession(request, plan, resume);
  } finally {
    lock.release();
  }
}

async function sweepSession(request: SweepRequest, plan: SweepPlan, resume: boolean): Promise<SweepOutcome> {
  const log = request.log ?? ((l: string) => process.stdout.write(l + '\n'));
  const env = request.env ?? {};
  const warn = warnOf(env);
  const sweepFile = join(plan.dir, 'sweep.yaml');
  mkdirSync(join(plan.dir, 'runs'), { recursive: true });
  writeFileSync(sweepFile, configToYaml(redactConfig(plan.base), `sweep ${plan.name}: ${plan.points.length} points`));
  log(`sweep ${plan.name}: ${plan.points.length} runs over ${plan.axes.map((a) => `${a.key} ∈ ${JSON.stringify(a.values)}`).join(' × ')}`);

  // ---------------------------------------------------------------- the parent run
  const mlflowPath = join(plan.dir, runFiles.mlflow);
  let parent: RunTracker | null = null;
  let mlflow = readRunJson(mlflowPath, 'mlflow');
  if (request.tracking && plan.base.tracking.enabled) {
    const tracking = await request.tracking(plan.dir);
    parent = await tracking.startRun({
      experimentName: plan.base.tracking.experiment,
      runName: plan.name,
      ...(resume && mlflow?.runId ? { resumeRunId: mlflow.runId } : {}),
      tags: {
        ...plan.base.tracking.tags,
        ...env.tags,
        'ambiqa.sweep': plan.name,
        'ambiqa.sweep.role': 'parent',
        'ambiqa.sweep.axes': plan.axes.map((a) => a.key).join(','),
        'ambiqa.pipeline': plan.base.pipeline.name,
        'ambiqa.dataset': plan.base.dataset.name,
        'ambiqa.sweep_dir': plan.dir,
      },
    });
    mlflow = {
      experimentName: plan.base.tracking.experiment,
      experimentId: parent.experimentId,
      runId: parent.runId,
      runName: plan.name,
      runUrl: tracking.runUrl(parent.experimentId, parent.runId),
    };
    writeRunJson(mlflowPath, 'mlflow', mlflow);
    const swept = new Set(plan.axes.map((a) => a.key));
    const params = Object.fromEntries(Object.entries(configParams(redactConfig(plan.base))).filter(([k]) => !swept.has(k)));
    for (const axis of plan.axes) params[`sweep.${axis.key}`] = JSON.stringify(axis.values);
    await guard(warn, 'log the sweep params', () => parent!.logParams(params));
  }

  // ---------------------------------------------------------------- the children
  const rows: SummaryRow[] = [];
  let status: SweepOutcome['status'] = 'FINISHED';
  try {
    for (const { point, config, runDir } of plan.points) {
      if (env.signal?.aborted) {
        status = 'KILLED';
        rows.push({ point, runDir, status: 'NOT RUN', metrics: null, exitStatus: ExitStatus.interrupted });
        continue;
      }
      const state = readRunJson(join(runDir, runFiles.state), 'state');
      const done = resume && state?.status === 'FINISHED' ? readRunJson(join(runDir, runFiles.metrics), 'metrics') : null;
      if (done) {
        log(`[${point.index + 1}/${plan.points.length}] ${point.label}: finished earlier, kept`);
        rows.push({ point, runDir, status: 'FINISHED', metrics: done, exitStatus: runExitStatus({ status: 'FINISHED', metrics: done }) });
        continue;
      }
      log(`[${point.index + 1}/${plan.points.length}] ${point.label}`);
      const components = await request.components(config);
      const progress = env.progress;
      const outcome = await runExperiment({
        config,
        runDir,
        resume: resume && runStarted(runDir),
        components,
        tracking: request.tracking ?? null,
        parentRunId: parent?.runId,
        env: {
          ...env,
          warn,
          tags: { ...env.tags, 'ambiqa.sweep': plan.name, 'ambiqa.sweep.point': point.label, ...sweepPointTags(plan.axes, point) },
          // The point's progress line is labelled by its point, not its run name.
          progress: progress && (() => progress(point.label)),
        },
      });
      rows.push({ point, runDir, status: outcome.status, metrics: outcome.metrics, exitStatus: runExitStatus(outcome) });
      if (outcome.status === 'KILLED') status = 'KILLED';
      else if (outcome.status === 'FAILED' && status === 'FINISHED') status = 'FAILED';
    }
  } catch (error) {
    if (parent) await guard(warn, 'mark the sweep run FAILED', () => parent!.finish('FAILED'));
    throw error;
  }

  const markdown = await summariseSweep(plan, rows, parent, { warn, log, status, ...(env.figures ? { figures: env.figures } : {}) });
  if (parent) await guard(warn, 'finish the sweep run', () => parent!.finish(status));
  return { status, exitStatus: worstExitStatus(rows.map((r) => r.exitStatus ?? ExitStatus.error)), dir: plan.dir, rows, summary: markdown, mlflow };
}

/** What the summary of a sweep reads of its plan: `SweepPlan`, or one rebuilt from `sweep.yaml` (re-scoring). */
export type SweepLayout = Pick<SweepPlan, 'name' | 'dir' | 'axes' | 'referenceIndex'> & {
  points: ReadonlyArray<{ point: GridPoint; config: Pick<ExperimentConfig, 'name'>; runDir: string }>;
};

/**
 * The sweep's summary from its points' rows: paired deltas against the reference point,
 * `summary.{md,csv,json}`, `comparison.{json,html}`, printed, and — with `parent` — the parent
 * run's ablation metrics, files and figures (the caller finishes the parent). Written after the
 * points ran, and again by `ambiqa score --run <sweep>` after they were re-scored.
 */
export async function summariseSweep(
  plan: SweepLayout,
  rows: SummaryRow[],
  parent: RunTracker | null,
  options: { warn: (m: string) => void; log: (line: string) => void; status: SweepOutcome['status']; figures?: RunEnvironment['figures'] },
): Promise<string> {
  const { warn, log, status } = options;
  // ---------------------------------------------------------------- paired deltas
  // Each point against the reference on the same questions (src/metrics/paired.ts): the summary,
  // the report and the parent's chart speak in paired deltas beside the per-point values.
  const paired = pairedAgainstReference(plan, rows, warn);
  for (const r of rows) {
    const mine = paired?.comparison.rows.filter((x) => x.run === plan.points[r.point.index].config.name);
    if (mine && mine.length > 0) r.paired = mine;
    if (paired && r.point.index === plan.referenceIndex) r.reference = true;
  }

  // ---------------------------------------------------------------- the summary
  // Under trials, the variance split and power of each paired delta follow the table.
  const trialTables = paired ? trialsMarkdown(paired.comparison) : '';
  const markdown = summaryMarkdown(plan.axes, rows) + (trialTables ? `\n${trialTables}` : '');
  // Through the run-dir writer, which masks known secrets like every other run file.
  writeFileAtomic(join(plan.dir, 'summary.md'), `# sweep ${plan.name}\n\n${markdown}`);
  writeFileAtomic(join(plan.dir, 'summary.csv'), summaryCsv(plan.axes, rows));
  writeJson(
    join(plan.dir, 'summary.json'),
    rows.map((r) => ({
      label: r.point.label,
      values: r.point.values,
      status: r.status,
      runDir: r.runDir,
      metrics: r.metrics,
      ...(r.reference ? { reference: true } : {}),
      ...(r.paired ? { paired: r.paired } : {}),
    })),
  );
  if (paired) {
    writeComparison(paired.comparison, join(plan.dir, 'comparison.json'));
    await guard(warn, 'write the sweep comparison report', async () => void writeComparisonReport(paired.comparison, join(plan.dir, 'comparison.html'), { traceMode: 'none' }));
  }
  log('');
  log(markdown);
  if (parent) {
    // The parent carries each point's headline numbers as a metric history against the swept
    // value (sweep-charts.ts), which MLflow's chart view plots as the ablation curve.
    await guard(warn, 'tag the sweep steps', () => parent!.setTags({ 'ambiqa.sweep.step': stepsAreValues(plan.axes) ? plan.axes[0].key : 'point index' }));
    for (const r of rows) {
      if (!r.metrics) continue;
      const m = { ...sweepPointMetrics(plan.axes, r.point, r.metrics), ...sweepPairedMetrics(r, paired?.comparison.metrics) };
      await guard(warn, 'log the sweep metrics', () => parent!.logMetrics(m, sweepStep(plan.axes, r.point)));
    }
    for (const f of ['summary.md', 'summary.csv', 'summary.json', 'sweep.yaml', ...(paired ? ['comparison.json', 'comparison.html'] : [])]) {
      if (!existsSync(join(plan.dir, f))) continue;
      await guard(warn, `upload ${f}`, () => parent!.logArtifact(join(plan.dir, f)));
    }
    const figures = options.figures;
    if (figures && status === 'FINISHED') await guard(warn, 'log the sweep figures to MLflow', async () => void (await figures(plan.dir, parent!)));
  }
  return markdown;
}

/**
 * Every finished point against the reference point, paired on the questions both answered. Null
 * (with a warning) when the reference did not finish or fewer than two points did.
 */
function pairedAgainstReference(plan: SweepLayout, rows: readonly SummaryRow[], warn: (m: string) => void): ComparedDirs | null {
  const finished = rows.filter((r) => r.metrics && r.status !== 'NOT RUN' && existsSync(join(r.runDir, runFiles.results)));
  const reference = plan.points[plan.referenceIndex];
  if (!finished.some((r) => r.point.index === plan.referenceIndex)) {
    if (rows.length > 1) warn(`no paired deltas: the reference point ${reference.point.label} has no results`);
    return null;
  }
  if (finished.length < 2) return null;
  try {
    return compareDirs(
      finished.map((r) => r.runDir),
      { baseline: reference.config.name },
    );
  } catch (error) {
    warn(`no paired deltas against ${reference.point.label}: ${(error as Error).message}`);
    return null;
  }
}
