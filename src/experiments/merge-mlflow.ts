import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { AmbiqaError } from '../errors';
import { escapeControl, safeName } from '../common/safe-name';
import type { Experiment, MlflowClient, Run } from '../tracking/index';
import { runFiles, writeRunJson, type MlflowRecord } from '../run-files';
import { mergeRuns, type MergeOutcome, type MergeRequest } from './merge';
import { warnOf } from './observers';
import { runStarted } from './run-dir';
import { formatShard, parseShard, type Shard } from './shard';
import { checkShardGroup, parseUploadManifest, sha256, SHARD_GROUP_TAG, SHARD_TAG, UPLOADS_TAG } from './shard-group';

/**
 * `ambiqa merge --from-mlflow <group>`: the shards of one launch, found on the MLflow server by
 * their group tag, checked, downloaded and merged as `mergeRuns` merges run dirs. Nothing needs
 * to be shared between the machines but the server: no volume, no rsync.
 *
 * Refused, in one line naming the runs, before anything is written: an index with no finished
 * run (missing), an index with two finished runs (a launch resubmitted under the same group
 * after its run dir was lost, say: which one is meant cannot be guessed), and a finished run
 * whose uploads are incomplete (its `ambiqa.uploads` tag is still `pending`, lacks a run file,
 * or a file on the server does not match its checksum).
 */
export interface MlflowMergeRequest extends Omit<MergeRequest, 'dirs'> {
  group: string;
  client: MlflowClient;
  /** Look only in this experiment (default: every active experiment on the server). */
  experiment?: string;
}

export interface MlflowMergeOutcome extends MergeOutcome {
  /** The shard runs merged, by index. */
  shardRuns: Array<{ shard: string; runId: string; dir: string }>;
}

/** The run files a merge reads; each must be in a shard's upload manifest. */
const required = [runFiles.config, runFiles.results, runFiles.traces, runFiles.metrics] as const;
/** What is downloaded when the manifest lists it. */
const wanted = new Set<string>([...required, runFiles.state, runFiles.judgePriors]);

export async function mergeFromMlflow(request: MlflowMergeRequest): Promise<MlflowMergeOutcome> {
  const { group, client } = request;
  checkShardGroup(group, '--from-mlflow');
  const where = request.experiment ? `experiment ${JSON.stringify(request.experiment)}` : 'any experiment';
  const refuse = (problems: string[], hints: string[]): never => {
    // At most five problems: a server may hold any number of bad runs, and the line stays short.
    const shown = problems.length > 5 ? [...problems.slice(0, 5), `and ${problems.length - 5} more`] : problems;
    // Run ids, statuses and tags are the server's: escaped, and the line cut at 2 000 characters.
    throw new AmbiqaError(`--from-mlflow ${group}: ${escapeControl(shown.join('; '), 2000)}`, [...new Set(hints)].join('; '));
  };

  // ------------------------------------------------------------ the group's runs
  const experiments = request.experiment
    ? [await client.getExperimentByName(request.experiment)].filter((e): e is Experiment => e !== undefined && e.lifecycleStage === 'active')
    : await client.searchExperiments();
  if (request.experiment && experiments.length === 0) refuse([`the server at ${client.uri} has no experiment ${JSON.stringify(request.experiment)}`], ['check --experiment (the config\'s tracking.experiment)']);
  const experimentNames = new Map(experiments.map((e) => [e.experimentId, e.name]));
  const runs: Run[] = [];
  const ids = [...experimentNames.keys()];
  for (let i = 0; i < ids.length; i += 100) {
    runs.push(...(await client.searchAllRuns({ experimentIds: ids.slice(i, i + 100), filter: `tags.\`${SHARD_GROUP_TAG}\` = '${group}'` })));
  }
  if (runs.length === 0) {
    refuse(
      [`no MLflow run in ${where} at ${client.uri} is tagged ${SHARD_GROUP_TAG}=${group}`],
      ['the shards must log to this server with --shard-group ' + group + ' (`ambiqa slurm` passes it); check MLFLOW_TRACKING_URI and the group name'],
    );
  }

  const problems: string[] = [];
  const hints: string[] = [];
  const parsed: Array<{ run: Run; shard: Shard }> = [];
  for (const run of runs) {
    const spec = run.tags[SHARD_TAG];
    try {
      if (!spec) throw new Error('no tag');
      parsed.push({ run, shard: parseShard(spec) });
    } catch (error) {
      // The tag is the server's: shown as parseShard shows it, cut and escaped.
      problems.push(`run ${run.info.runId} is in the group but has no valid ${SHARD_TAG} tag (${spec === undefined ? 'absent' : (error as Error).message})`);
      hints.push('a group holds only the shards of one launch');
    }
  }
  const counts = [...new Set(parsed.map((p) => p.shard.count))];
  if (counts.length > 1) {
    refuse(
      [...problems, `the group's runs disagree on the number of shards: ${counts.map((n) => `${parsed.filter((p) => p.shard.count === n).map((p) => `${p.run.info.runId} (${formatShard(p.shard)})`).join(', ')}`).join(' vs ')}`],
      [...hints, 'a group holds only the shards of one launch; merge each launch under its own group'],
    );
  }
  const count = counts[0] ?? 0;

  // ------------------------------------------------------------ one finished, complete run per index
  const chosen: Array<{ run: Run; shard: Shard; manifest: Map<string, string> }> = [];
  for (let index = 0; index < count; index++) {
    const candidates = parsed.filter((p) => p.shard.index === index);
    const finished = candidates.filter((p) => p.run.info.status === 'FINISHED');
    const label = `${index}/${count}`;
    if (finished.length > 1) {
      problems.push(`shard ${label} has ${finished.length} finished runs (${finished.map((p) => p.run.info.runId).join(', ')})`);
      hints.push('delete the run that should not count in MLflow (or tag it with another group), then merge again');
      continue;
    }
    if (finished.length === 0) {
      const others = candidates.map((p) => `run ${p.run.info.runId} is ${p.run.info.status}`);
      const what = `missing shard ${label} (${others.length > 0 ? others.join(', ') : 'no run'})`;
      if (request.partial) warnOf(request.env)(`${what}: merged without it (--partial)`);
      else {
        problems.push(what);
        hints.push(`finish it (resubmit: \`ambiqa slurm <config> --shards ${count} --group ${group} --only ${index}\`, or \`ambiqa run <config> --shard ${label} --shard-group ${group} --resume\`), or pass --partial`);
      }
      continue;
    }
    const { run, shard } = finished[0]!;
    const manifest = parseUploadManifest(run.tags[UPLOADS_TAG]);
    const absent = manifest ? required.filter((f) => !manifest.has(f)) : [];
    if (!manifest || absent.length > 0) {
      const why = !manifest ? `${UPLOADS_TAG} is ${run.tags[UPLOADS_TAG] === undefined ? 'absent' : JSON.stringify(run.tags[UPLOADS_TAG])}` : `no ${absent.join(', ')}`;
      problems.push(`run ${run.info.runId} (shard ${label}) has incomplete uploads (${why})`);
      hints.push('its last session stopped before every file was stored: resume the shard (its session ends by uploading again), or `ambiqa sync` its run dir if it ran offline');
      continue;
    }
    chosen.push({ run, shard, manifest });
  }
  if (problems.length > 0) refuse(problems, hints);
  if (chosen.length === 0) refuse([`no shard of ${count} has a finished run`], ['finish the shards first']);

  // ------------------------------------------------------------ download, checked against the manifest
  // Nothing a server says becomes a path: the merged run is named by --name or by the first
  // shard's run name only once it passes the safe-name rule, and each shard's folder is named
  // here, `shard-<i>of<N>`, whatever its run is called on the server. (A run named
  // `../../victim` made this write outside the runs folder.)
  const first = chosen[0]!.run;
  const name = request.name ?? safeName(first.info.runName.replace(/\.shard-\d+of\d+$/, ''), `MLflow run ${first.info.runId}'s name`, 'pass --name <name> for the merged run');
  const outDir = request.outDir(name);
  if (runStarted(outDir)) refuse([`${outDir} already exists`], ['pass --name <new-name>']);
  if (existsSync(outDir) && readdirSync(outDir).length > 0) refuse([`${outDir} already exists and is not empty`], ['pass --name <new-name>, or remove it']);
  // Downloads go to a staging folder beside the merged one, renamed into place only once every
  // file matched its checksum: a refused or tampered shard leaves nothing behind.
  mkdirSync(dirname(outDir), { recursive: true });
  const staging = mkdtempSync(join(dirname(outDir), `.${basename(outDir)}.partial-`));
  const shardRuns: MlflowMergeOutcome['shardRuns'] = [];
  let moved = false;
  try {
    for (const { run, shard, manifest } of chosen) {
      const folder = `shard-${shard.index}of${shard.count}`;
      const dir = join(staging, 'shards', folder);
      mkdirSync(dir, { recursive: true });
      for (const [file, checksum] of manifest) {
        // Only the fixed run-file names are fetched: a manifest entry is never a path.
        if (!wanted.has(file)) continue;
        const data = await client.downloadArtifact(run.info.runId, file);
        if (sha256(data) !== checksum) {
          problems.push(`run ${run.info.runId} (shard ${formatShard(shard)}) has incomplete uploads (${file} on the server does not match its checksum)`);
          hints.push('resume the shard so that its session uploads its files again');
          continue;
        }
        writeFileSync(join(dir, file), data);
      }
      const record: MlflowRecord = {
        experimentName: experimentNames.get(run.info.experimentId) ?? (await client.getExperiment(run.info.experimentId)).name,
        experimentId: run.info.experimentId,
        runId: run.info.runId,
        runName: run.info.runName,
      };
      writeRunJson(join(dir, runFiles.mlflow), 'mlflow', record);
      shardRuns.push({ shard: formatShard(shard), runId: run.info.runId, dir: join(outDir, 'shards', folder) });
    }
    if (problems.length > 0) refuse(problems, hints);
    if (existsSync(outDir)) rmSync(outDir, { recursive: true }); // empty: checked above
    renameSync(staging, outDir);
    moved = true;
  } finally {
    if (!moved) rmSync(staging, { recursive: true, force: true });
  }

  const outcome = await mergeRuns({
    ...request,
    dirs: shardRuns.map((s) => s.dir),
    name,
    env: { ...request.env, tags: { ...request.env?.tags, 'ambiqa.merged_group': group } },
    // The indexes missing here were refused above unless --partial; mergeRuns counts them again.
    partial: request.partial ?? false,
  }).catch((error: unknown) => {
    // A shard whose files passed their checksums but not the merge (a config that does not
    // parse, results that disagree) leaves no half-merged folder either; the folder was empty or
    // absent before this merge (checked above), so all of it is this merge's.
    rmSync(outDir, { recursive: true, force: true });
    throw error;
  });
  return { ...outcome, shardRuns };
}
