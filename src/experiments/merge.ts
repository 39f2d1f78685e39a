import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AmbiqaError } from '../errors';
import { emptyUsage, type Usage } from '../llm/types';
import { addUsage } from '../llm/usage';
import type { Trace } from '../trace/types';
import type { RunTracker } from '../tracking/types';
import { configFingerprint, configToYaml, diffConfigs, readResolvedConfig, type ExperimentConfig } from './config';
import { writeFileAtomic, writeJsonlAtomic } from '../common/jsonl';
import { type ExampleResult, type MetricAggregate, type RunMetrics, readResults, readTraces, rowKey, traceKey } from '../run-files';
import { readRunJson, runFiles, writeJson, writeRunJson, type MlflowRecord, type RunState } from '../run-files';
import { judgePriorSettings, readJudgePriors } from './judge-priors';
import { runStarted } from './run-dir';
import { configParams, guard, metricsForMlflow, type TrackingFactory } from './run-tracking';
import { addDecisions, summariseRun } from './runner';
import { parseShard } from './shard';
import { warnOf, type RunEnvironment } from './observers';
import { mergedProvenance } from './provenance';
import type { MethodAnalyses } from '../metrics/methods';

/**
 * `ambiqa merge`: shards of one experiment, run on several machines with `--shard i/N`, become
 * one run dir with recomputed aggregates (bootstrap CIs over all examples, not an average of
 * the shards' numbers), and one MLflow parent run with the shards' runs nested under it.
 */
export interface MergeRequest {
  dirs: string[];
  /** The merged run's name; default: the shards' name without the `.shard-iofN` suffix. */
  name?: string;
  outDir: (name: string) => string;
  aggregate: (results: ExampleResult[]) => Record<string, MetricAggregate>;
  /** The method catalog (`methodCatalog()`): each method's decision statistics and judges, recomputed over all shards. */
  methods: MethodAnalyses;
  /** Merge even when some shards are missing. */
  partial?: boolean;
  tracking?: TrackingFactory | null;
  /** Warnings and MLflow tags (the other parts of a run's environment do not apply to a merge). */
  env?: Pick<RunEnvironment, 'warn' | 'tags'>;
}

export interface MergeOutcome {
  dir: string;
  config: ExperimentConfig;
  results: ExampleResult[];
  metrics: RunMetrics;
  mlflow: MlflowRecord | null;
  missingShards: number[];
}

interface ShardRun {
  dir: string;
  config: ExperimentConfig;
  results: ExampleResult[];
  state: RunState | null;
  mlflow: MlflowRecord | null;
}

export async function mergeRuns(request: MergeRequest): Promise<MergeOutcome> {
  const warn = warnOf(request.env);
  if (request.dirs.length === 0) throw new AmbiqaError('merge: no run directories given', 'pass the shards\' run dirs, e.g. artifacts/runs/toc-asqa.shard-*');
  const shards: ShardRun[] = request.dirs.map((d) => {
    const dir = resolve(d);
    if (!existsSync(join(dir, runFiles.config))) throw notAShardDir(d, dir);
    const config = readResolvedConfig(join(dir, runFiles.config));
    return {
      dir,
      config,
      results: readResults(join(dir, runFiles.results)),
      state: readRunJson(join(dir, runFiles.state), 'state'),
      mlflow: readRunJson(join(dir, runFiles.mlflow), 'mlflow'),
    };
  });

  // ---------------------------------------------------------------- they must belong together
  const first = shards[0];
  for (const s of shards.slice(1)) {
    const diff = diffConfigs(configFingerprint(first.config), configFingerprint(s.config));
    if (diff.length > 0) {
      throw new AmbiqaError(`merge: ${s.dir} is not a shard of the same experiment as ${first.dir}: they differ in ${diff.join(', ')}`);
    }
  }
  const specs = shards.map((s) => {
    if (!s.config.shard) throw new AmbiqaError(`merge: ${s.dir} was not run with --shard`, 'merge combines shards of one experiment');
    return parseShard(s.config.shard);
  });
  const count = specs[0].count;
  const seen = new Map<number, string>();
  shards.forEach((s, i) => {
    if (specs[i].count !== count) throw new AmbiqaError(`merge: ${s.dir} is shard ${s.config.shard}, but ${first.dir} is one of ${count}`);
    const other = seen.get(specs[i].index);
    if (other) throw new AmbiqaError(`merge: shard ${s.config.shard} given twice: ${other} and ${s.dir}`);
    seen.set(specs[i].index, s.dir);
    if (s.state && s.state.status !== 'FINISHED') {
      const msg = `${s.dir} ended ${s.state.status} with ${s.state.done}/${s.state.total} examples`;
      if (!request.partial) throw new AmbiqaError(`merge: ${msg}`, 'finish it with `ambiqa run … --resume`, or pass --partial');
      warn(msg);
    }
  });
  const missingShards = Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  if (missingShards.length > 0 && !request.partial) {
    throw new AmbiqaError(
      `merge: missing shard${missingShards.length > 1 ? 's' : ''} ${missingShards.map((i) => `${i}/${count}`).join(', ')}`,
      'pass every shard\'s run dir, or --partial to merge what there is',
    );
  }

  // ---------------------------------------------------------------- one result set
  // Keyed by `rowKey`: under `trials: k` a shard holds k rows of each of its questions, all kept.
  const byKey = new Map<string, ExampleResult>();
  const traceFiles: string[] = [];
  for (const s of shards) {
    for (const r of s.results) {
      const prev = byKey.get(rowKey(r));
      if (prev && (prev as ExampleResult & { _dir?: string })._dir !== s.dir) {
        throw new AmbiqaError(`merge: example ${r.id}${r.trial ? ` (trial ${r.trial})` : ''} appears in more than one shard (${s.dir})`);
      }
      byKey.set(rowKey(r), Object.assign({ ...r }, { _dir: s.dir }));
    }
    traceFiles.push(join(s.dir, runFiles.traces));
  }
  const results = [...byKey.values()]
    .map(({ _dir, ...r }: ExampleResult & { _dir?: string }) => r)
    .sort((a, b) => (a.index ?? 0) - (b.index ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) || (a.trial ?? 0) - (b.trial ?? 0));
  const traces = new Map<string, Trace>();
  for (const f of traceFiles) for (const t of readTraces(f)) traces.set(traceKey(t), t);

  const baseName = first.config.name.replace(/\.shard-\d+of\d+$/, '');
  const name = request.name ?? baseName;
  const { shard: _shard, ...rest } = first.config;
  const config: ExperimentConfig = { ...rest, name };
  const dir = request.outDir(name);
  if (runStarted(dir)) {
    throw new AmbiqaError(`merge: ${dir} already exists`, 'pass --name <new-name>');
  }
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, runFiles.config), configToYaml(config, `merged from ${shards.length} shard(s) of ${baseName}`));
  writeJsonlAtomic(join(dir, runFiles.results), results);
  writeJsonlAtomic(
    join(dir, runFiles.traces),
    results.map((r) => traces.get(rowKey(r))).filter((t): t is Trace => t !== undefined),
  );
  const wallSeconds = shards.reduce((s, x) => s + (x.state?.wallSeconds ?? 0), 0);
  const total = shards.reduce((s, x) => s + (x.state?.total ?? x.results.length), 0);
  const complete = missingShards.length === 0 && shards.every((s) => !s.state || s.state.status === 'FINISHED');
  const metrics = summariseRun(results, request.aggregate, { wallSeconds, total, status: complete ? 'FINISHED' : 'KILLED', groupBy: config.groupBy });
  // How the shards measured (D-F1 reader, splitter …): the same config gives the same settings,
  // except what each machine resolved at its start (llm.threads): distinct values are all kept.
  const values = new Map<string, Set<string>>();
  for (const shard of shards) {
    for (const [key, value] of Object.entries(readRunJson(join(shard.dir, runFiles.metrics), 'metrics')?.settings ?? {})) {
      values.set(key, (values.get(key) ?? new Set()).add(value));
    }
  }
  const settings = Object.fromEntries([...values].map(([key, seen]) => [key, [...seen].join(' | ')]));
  if (Object.keys(settings).length > 0) metrics.settings = { ...settings, ...metrics.settings };
  // Decision statistics (decision_* rates, judge_mode) and judge quality over all shards'
  // questions at once, from their traces, as an unsharded run computes them (judge quality's CI
  // resamples questions across shards).
  addDecisions(metrics, results, [...traces.values()], request.methods);
  // judgeCalibration batch: every shard must have divided by the same stored prior.
  const priors = shards.map((s) => ({ dir: s.dir, priors: readJudgePriors(s.dir) })).filter((x) => x.priors !== undefined);
  if (priors.length > 0) {
    const reference = JSON.stringify(priors[0]!.priors!.purposes);
    const differing = priors.find((x) => JSON.stringify(x.priors!.purposes) !== reference);
    if (differing || priors.length !== shards.length) {
      throw new AmbiqaError(
        `merge: the shards' batch-calibration priors (${runFiles.judgePriors}) differ (${priors[0]!.dir} vs ${differing?.dir ?? 'a shard without one'})`,
        'their questions were judged against different priors; rerun the odd shard with the other shards\' judge-priors.json copied into its run dir',
      );
    }
    writeJson(join(dir, runFiles.judgePriors), priors[0]!.priors);
    metrics.settings = { ...metrics.settings, ...judgePriorSettings(priors[0]!.priors!) };
    // Every shard judged its calibration (the same prior, checked above): their calls add up.
    const calibration = priors
      .map(({ priors: p }): Usage => ({ ...emptyUsage(), calls: p!.usage.llmCalls, promptTokens: p!.usage.promptTokens, completionTokens: p!.usage.completionTokens, cacheHits: p!.usage.cacheHits }))
      .reduce(addUsage, emptyUsage());
    metrics.usage.calibration_llm_calls = calibration.calls;
    if (calibration.promptTokens !== undefined) metrics.usage.calibration_prompt_tokens = calibration.promptTokens;
  }
  writeRunJson(join(dir, runFiles.metrics), 'metrics', metrics);
  // What `ambiqa reproduce` checks: the shards' record when they agree (provenance.ts).
  const provenance = mergedProvenance(shards.map((s) => readRunJson(join(s.dir, runFiles.provenance), 'provenance')));
  if (provenance) writeRunJson(join(dir, runFiles.provenance), 'provenance', provenance);
  else warn(`merge: no ${runFiles.provenance} for the merged run (a shard has none, or the shards ran on different code, data or models): \`ambiqa reproduce\` will need --allow-different all`);
  writeJson(join(dir, 'shards.json'), {
    count,
    missing: missingShards,
    shards: shards.map((s) => ({ dir: s.dir, shard: s.config.shard, status: s.state?.status ?? 'unknown', examples: s.results.length, mlflow: s.mlflow })),
  });

  // ---------------------------------------------------------------- one MLflow parent
  let mlflow: MlflowRecord | null = null;
  if (request.tracking && config.tracking.enabled) {
    const tracking = await request.tracking(dir);
    const parent: RunTracker = await tracking.startRun({
      experimentName: config.tracking.experiment,
      runName: name,
      tags: {
        ...config.tracking.tags,
        ...request.env?.tags,
        'ambiqa.merged_shards': String(shards.length),
        'ambiqa.pipeline': config.pipeline.name,
        'ambiqa.dataset': config.dataset.name,
        'ambiqa.run_dir': dir,
      },
    });
    mlflow = {
      experimentName: config.tracking.experiment,
      experimentId: parent.experimentId,
      runId: parent.runId,
      runName: name,
      runUrl: tracking.runUrl(parent.experimentId, parent.runId),
    };
    writeRunJson(join(dir, runFiles.mlflow), 'mlflow', mlflow);
    await guard(warn, 'log params', () => parent.logParams({ ...configParams(config), ...metrics.settings }));
    await guard(warn, 'log metrics', () => parent.logMetrics(metricsForMlflow(metrics)));
    for (const f of [runFiles.config, runFiles.metrics, runFiles.results, runFiles.traces, ...(provenance ? [runFiles.provenance] : []), 'shards.json']) {
      await guard(warn, `upload ${f}`, () => parent.logArtifact(join(dir, f)));
    }
    // Nest the shards' own runs under the parent: a tag, so their history stays as it was.
    for (const s of shards) {
      if (!s.mlflow?.runId) {
        warn(`${s.dir} has no MLflow run (tracking was off); it is merged but not nested`);
        continue;
      }
      await guard(warn, `nest ${s.dir}'s MLflow run`, async () => {
        const child = await tracking.startRun({
          experimentName: s.mlflow!.experimentName,
          runName: s.mlflow!.runName,
          resumeRunId: s.mlflow!.runId,
          tags: { 'mlflow.parentRunId': parent.runId, 'ambiqa.merged_into': name },
        });
        await child.setTags({ 'mlflow.parentRunId': parent.runId });
        await child.finish(s.state?.status && s.state.status !== 'RUNNING' ? s.state.status : 'FINISHED');
      });
    }
    await guard(warn, 'finish the merged run', () => parent.finish(complete ? 'FINISHED' : 'KILLED'));
  }
  return { dir, config, results, metrics, mlflow, missingShards };
}

/**
 * Why `dir` is not a run to merge, and what probably is: `--shard i/N` appends `.shard-<i>of<N>`
 * to the run name, so `run --name toc-s0 --shard 0/4` writes `toc-s0.shard-0of4`; and a glob
 * that matched nothing (the shards are still on the machines that ran them) reaches us as is.
 */
function notAShardDir(given: string, dir: string): AmbiqaError {
  const parent = dirname(dir);
  const name = basename(dir);
  const siblings = existsSync(parent) ? readdirSync(parent) : [];
  const shardDirs = siblings.filter((n) => n.startsWith(`${name}.shard-`) && /\.shard-\d+of\d+$/.test(n));
  if (shardDirs.length > 0) {
    return new AmbiqaError(
      `merge: ${given} is not a run directory`,
      `a shard's run is named <name>.shard-<i>of<N>: did you mean ${shardDirs.map((n) => join(given, '..', n).replace(/^\.\//, '')).join(' ')}?`,
    );
  }
  const hint = /[*?[]/.test(given)
    ? 'nothing matched the pattern here: copy the shards\' run dirs to this machine first (e.g. rsync -a host:ambiqa/artifacts/runs/ artifacts/runs/), run the shards on a shared artifacts volume, or merge from MLflow (`ambiqa merge --from-mlflow <group>` for shards run with --shard-group; docs/experiments.md, "Shards: one experiment on several machines")'
    : 'pass the run dirs that `ambiqa run --shard i/N` wrote (artifacts/runs/<name>.shard-<i>of<N>)';
  return new AmbiqaError(`merge: ${given} is not a run directory (no ${runFiles.config})`, hint);
}
