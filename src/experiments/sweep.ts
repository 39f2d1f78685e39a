import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/jsonl';
import { AmbiqaError } from '../errors';
import type { RunTracker } from '../tracking/types';
import { configToYaml, resolveExperimentConfig, type ConfigRegistry, type ExperimentConfig, type LoadOptions } from './config';
import { expandGrid, gridAxes, type GridAxis, type GridPoint } from './grid';
import { applyOverrides } from './overrides';
import type { ProgressSink } from './progress';
import type { RunMetrics } from '../run-files';
import { readJson, runFiles, writeJson, type MlflowRecord, type RunState } from '../run-files';
import { runStarted } from './run-dir';
import { configParams, guard, type FigureLogger, type TrackingFactory } from './run-tracking';
import { runExperiment, type RunComponents } from './runner';
import { redactConfig } from './secrets';
import { stepsAreValues, sweepPointMetrics, sweepPointTags, sweepStep } from './sweep-charts';
import { summaryCsv, summaryMarkdown, type SummaryRow } from './summary';

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
  options: Pick<LoadOptions, 'name' | 'limit' | 'checkFiles'> & { defaultName: string };
  sweepDir: (name: string) => string;
  resume?: boolean;
  /** Builds a point's components; the caller shares models and caches between calls. */
  components: (config: ExperimentConfig) => Promise<RunComponents>;
  tracking?: TrackingFactory | null;
  /** Draw and log figures (each point's and the sweep's ablations) to MLflow. */
  figures?: FigureLogger;
  tags?: Record<string, string>;
  progress?: (label: string) => ProgressSink;
  signal?: AbortSignal;
  warn?: (message: string) => void;
  /** Printed lines (the plan, the summary). Default: stdout. */
  log?: (line: string) => void;
}

export interface SweepPlan {
  name: string;
  dir: string;
  base: ExperimentConfig;
  axes: GridAxis[];
  points: Array<{ point: GridPoint; config: ExperimentConfig; runDir: string }>;
}

/** Validate the base config and every grid point before anything runs. */
export function planSweep(request: Pick<SweepRequest, 'raw' | 'source' | 'registry' | 'options' | 'sweepDir'>): SweepPlan {
  const { raw, source, registry, options } = request;
  const base = resolveExperimentConfig(raw, registry, { ...options, source });
  if (!base.sweep) {
    throw new AmbiqaError(`${source}: has no sweep: section`, 'add e.g. `sweep: {pipeline.options.threshold: [1, 2, 3, 4, 5]}`, or use `ambiqa run`');
  }
  const axes = gridAxes(base.sweep);
  const dir = request.sweepDir(base.name);
  const { sweep: _s, ...rawBase } = raw;
  const points = expandGrid(axes).map((point) => {
    const pointRaw = applyOverrides(rawBase, point.overrides, `${source} (sweep point ${point.label})`);
    const config = resolveExperimentConfig(pointRaw, registry, {
      ...options,
      source: `${source} (sweep point ${point.label})`,
      name: `${base.name}.${point.label}`,
    });
    return { point, config, runDir: join(dir, 'runs', point.label) };
  });
  return { name: base.name, dir, base, axes, points };
}

export interface SweepOutcome {
  status: 'FINISHED' | 'KILLED' | 'FAILED';
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
  const log = request.log ?? ((l: string) => process.stdout.write(l + '\n'));
  const warn = request.warn ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
  const resume = request.resume ?? false;
  const sweepFile = join(plan.dir, 'sweep.yaml');
  checkSweepDir(plan.dir, resume);
  mkdirSync(join(plan.dir, 'runs'), { recursive: true });
  writeFileSync(sweepFile, configToYaml(redactConfig(plan.base), `sweep ${plan.name}: ${plan.points.length} points`));
  log(`sweep ${plan.name}: ${plan.points.length} runs over ${plan.axes.map((a) => `${a.key} ∈ ${JSON.stringify(a.values)}`).join(' × ')}`);

  // ---------------------------------------------------------------- the parent run
  const mlflowPath = join(plan.dir, runFiles.mlflow);
  let parent: RunTracker | null = null;
  let mlflow = readJson<MlflowRecord>(mlflowPath);
  if (request.tracking && plan.base.tracking.enabled) {
    const tracking = await request.tracking(plan.dir);
    parent = await tracking.startRun({
      experimentName: plan.base.tracking.experiment,
      runName: plan.name,
      ...(resume && mlflow?.runId ? { resumeRunId: mlflow.runId } : {}),
      tags: {
        ...plan.base.tracking.tags,
        ...request.tags,
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
    writeJson(mlflowPath, mlflow);
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
      if (request.signal?.aborted) {
        status = 'KILLED';
        rows.push({ point, runDir, status: 'NOT RUN', metrics: null });
        continue;
      }
      const state = readJson<RunState>(join(runDir, runFiles.state));
      const done = resume && state?.status === 'FINISHED' ? readJson<RunMetrics>(join(runDir, runFiles.metrics)) : null;
      if (done) {
        log(`[${point.index + 1}/${plan.points.length}] ${point.label}: finished earlier, kept`);
        rows.push({ point, runDir, status: 'FINISHED', metrics: done });
        continue;
      }
      log(`[${point.index + 1}/${plan.points.length}] ${point.label}`);
      const components = await request.components(config);
      const outcome = await runExperiment({
        config,
        runDir,
        resume: resume && runStarted(runDir),
        components,
        tracking: request.tracking ?? null,
        ...(request.figures ? { figures: request.figures } : {}),
        ...(parent ? { parentRunId: parent.runId } : {}),
        tags: { ...request.tags, 'ambiqa.sweep': plan.name, 'ambiqa.sweep.point': point.label, ...sweepPointTags(plan.axes, point) },
        ...(request.progress ? { progress: request.progress(point.label) } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        warn,
      });
      rows.push({ point, runDir, status: outcome.status, metrics: outcome.metrics });
      if (outcome.status === 'KILLED') status = 'KILLED';
      else if (outcome.status === 'FAILED' && status === 'FINISHED') status = 'FAILED';
    }
  } catch (error) {
    if (parent) await guard(warn, 'mark the sweep run FAILED', () => parent!.finish('FAILED'));
    throw error;
  }

  // ---------------------------------------------------------------- the summary
  const markdown = summaryMarkdown(plan.axes, rows);
  // Through the run-dir writer, which masks known secrets like every other run file.
  writeFileAtomic(join(plan.dir, 'summary.md'), `# sweep ${plan.name}\n\n${markdown}`);
  writeFileAtomic(join(plan.dir, 'summary.csv'), summaryCsv(plan.axes, rows));
  writeJson(
    join(plan.dir, 'summary.json'),
    rows.map((r) => ({ label: r.point.label, values: r.point.values, status: r.status, runDir: r.runDir, metrics: r.metrics })),
  );
  log('');
  log(markdown);
  if (parent) {
    // The parent carries each point's headline numbers as a metric history against the swept
    // value (sweep-charts.ts), which MLflow's chart view plots as the ablation curve.
    await guard(warn, 'tag the sweep steps', () => parent!.setTags({ 'ambiqa.sweep.step': stepsAreValues(plan.axes) ? plan.axes[0].key : 'point index' }));
    for (const r of rows) {
      if (!r.metrics) continue;
      const m = sweepPointMetrics(plan.axes, r.point, r.metrics);
      await guard(warn, 'log the sweep metrics', () => parent!.logMetrics(m, sweepStep(plan.axes, r.point)));
    }
    for (const f of ['summary.md', 'summary.csv', 'summary.json', 'sweep.yaml']) {
      await guard(warn, `upload ${f}`, () => parent!.logArtifact(join(plan.dir, f)));
    }
    const figures = request.figures;
    if (figures && status === 'FINISHED') await guard(warn, 'log the sweep figures to MLflow', async () => void (await figures(plan.dir, parent!)));
    await guard(warn, 'finish the sweep run', () => parent!.finish(status));
  }
  return { status, dir: plan.dir, rows, summary: markdown, mlflow };
}
