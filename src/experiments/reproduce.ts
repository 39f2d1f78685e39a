/**
 * `ambiqa reproduce`: re-run a recorded run and say, question by question, whether it came out
 * the same. In order:
 *   1. find the run (a run folder, the run folders of a bundle, or an MLflow run whose files are
 *      downloaded and checked against their upload checksums);
 *   2. check this machine against what the run recorded in `provenance.json` — code version
 *      (commit, uncommitted changes), model files (sha256 of the bytes here), data files (dataset,
 *      demos, ids, alternatives, corpus), engine build or endpoint — and refuse in one line naming
 *      every difference unless `--allow-different` lets that kind through;
 *   3. re-run the recorded config into artifacts/reproductions/<name>-<time>: an in-process model
 *      (embedded) with its LLM cache off so that every output is computed again; an endpoint from
 *      the LLM cache only (`replay`: a call not stored is refused, nothing is sent), or with
 *      `--live` from the endpoint itself (its answers kept in the reproduction's own cache file);
 *   4. compare the rows by `rowKey` (id, and trial under trials): identical, changed (the first
 *      field that differs, both values escaped: model output is untrusted text) or missing, and
 *      the paired difference of every metric when asked (`--live`) or when something changed.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { escapeControl, quoteForDisplay } from '../common/safe-name';
import { artifactsDir } from '../config/paths';
import { AmbiqaError } from '../errors';
import type { LlmSectionConfig } from '../llm/provider-registry';
import { embeddedCpu, embeddedEngineBuild } from '../llm/providers/llama-cpp';
import { pairedDelta, type PairedDelta } from '../metrics/paired';
import type { MlflowClient } from '../tracking/index';
import { readResults, readRunJson, readTraces, rowKey, runFiles, scoreValues, traceKey, writeRunJson, type ExampleResult, type MlflowRecord, type RecordedModel, type RunProvenance } from '../run-files';
import type { Composer } from './compose';
import { readResolvedConfig, type ExperimentConfig } from './config';
import type { RunEnvironment } from './observers';
import { collectProvenance, dataFilesOf, embedderModel, locateRecordedFile, modelOfSection, sha256Path } from './provenance';
import { runConfig } from './run-config';
import { cacheWriterOf } from './run-state';
import type { RunOutcome } from './runner';
import { parseUploadManifest, sha256, UPLOADS_TAG } from './shard-group';

/** What `--allow-different` may let through, one word per kind of check. */
export const REPRODUCE_CHECKS = ['commit', 'model', 'dataset', 'engine', 'retriever'] as const;
export type ReproduceCheck = (typeof REPRODUCE_CHECKS)[number];

/** One thing that is not here as the run recorded it. */
export interface Difference {
  check: ReproduceCheck;
  /** Said in the refusal, e.g. `model sha256 differs: recorded 1d96…, here 8f0a… (models/llm/x.gguf)`. */
  line: string;
}

/**
 * How this machine is looked at; each part can be replaced (tests inject a code state or a
 * checksum function rather than edit the checkout or hash a real model).
 */
export interface MachineProbe {
  /** The checkout's commit and whether tracked files have uncommitted changes. */
  code(): { commit: string | null; dirty: boolean | null; ambiqaVersion: string };
  /** sha256 of the bytes of a file (or folder) now. */
  hashFile(path: string): string;
  /** node-llama-cpp's version and llama.cpp build here, and the CPU. */
  engine(): { nodeLlamaCpp: string; llamaCpp?: string; cpu?: string };
  /** The model a config section runs here (the file it would load, or the endpoint it would call). */
  model(section: LlmSectionConfig, role: 'llm' | 'judge'): RecordedModel;
  /** The MiniLM embedder here. */
  embedder(): RecordedModel | undefined;
}

export function machineProbe(): MachineProbe {
  return {
    code() {
      const p = collectProvenance();
      return { commit: p.gitCommit, dirty: p.gitDirty, ambiqaVersion: p.ambiqaVersion };
    },
    hashFile: sha256Path,
    engine: () => ({ ...embeddedEngineBuild(), cpu: embeddedCpu() }),
    // The file here is hashed by `differences`, not trusted from a catalog or manifest entry.
    model: (section, role) => modelOfSection(section, role, () => ''),
    embedder: embedderModel,
  };
}

const short = (sha: string | undefined) => (sha ? `${sha.slice(0, 12)}…` : '(none)');

/**
 * Everything that differs between what the run recorded and this machine, in the order a reader
 * would fix it: code, models, data, engine. Empty: the recorded config can be run as it was.
 */
export function differences(config: ExperimentConfig, recorded: RunProvenance, probe: MachineProbe): Difference[] {
  const out: Difference[] = [];
  // ---- code
  const here = probe.code();
  const rec = recorded.code;
  if (rec.commit === null) {
    if (rec.ambiqaVersion !== here.ambiqaVersion) out.push({ check: 'commit', line: `ambiqa version differs: recorded ${rec.ambiqaVersion}, here ${here.ambiqaVersion} (the run was not made from a git checkout)` });
  } else {
    if (rec.dirty === true) out.push({ check: 'commit', line: `the run was made from commit ${rec.commit.slice(0, 12)} with uncommitted changes, which cannot be checked out again` });
    if (here.commit !== rec.commit) out.push({ check: 'commit', line: `commit differs: recorded ${rec.commit.slice(0, 12)}, here ${here.commit ? here.commit.slice(0, 12) : '(not a git checkout)'}` });
    else if (here.dirty === true) out.push({ check: 'commit', line: `the code here has uncommitted changes (commit ${rec.commit.slice(0, 12)})` });
  }
  // ---- models
  for (const m of recorded.models) {
    if (m.provider !== 'embedded') continue;
    const label = m.role === 'llm' ? 'model' : `${m.role} model`;
    const now = m.role === 'embedder' ? probe.embedder() : sectionOf(config, m.role) ? probe.model(sectionOf(config, m.role)!, m.role) : undefined;
    if (!now || now.provider !== 'embedded') {
      out.push({ check: 'model', line: `${label} differs: recorded ${m.name}, here ${now ? `${now.provider} ${now.name}` : 'none'}` });
      continue;
    }
    if (now.name !== m.name) {
      out.push({ check: 'model', line: `${label} differs: recorded ${m.name}, here ${now.name}` });
      continue;
    }
    if (!now.file || !existsSync(now.file)) {
      out.push({ check: 'model', line: `${label} file missing here: ${now.file ?? m.file ?? m.name}` });
      continue;
    }
    const sha = probe.hashFile(now.file);
    if (m.sha256 && sha !== m.sha256) out.push({ check: 'model', line: `${label} sha256 differs: recorded ${short(m.sha256)}, here ${short(sha)} (${now.file})` });
  }
  // ---- data
  const reads = dataFilesOf(config);
  for (const [field, file] of Object.entries(recorded.data)) {
    if (!(field in reads)) continue; // a field the config no longer names cannot be read by it
    const path = locateRecordedFile(file);
    if (!existsSync(path)) {
      out.push({ check: 'dataset', line: `${field} file missing here: ${file.path}` });
      continue;
    }
    const sha = probe.hashFile(path);
    if (sha !== file.sha256) out.push({ check: 'dataset', line: `${field} sha256 differs: recorded ${short(file.sha256)}, here ${short(sha)} (${path})` });
  }
  // ---- engine and endpoints
  if (recorded.engine) {
    const now = probe.engine();
    const describe = (e: { nodeLlamaCpp: string; llamaCpp?: string }) => `node-llama-cpp ${e.nodeLlamaCpp}${e.llamaCpp ? ` (llama.cpp ${e.llamaCpp})` : ''}`;
    if (now.nodeLlamaCpp !== recorded.engine.nodeLlamaCpp || (recorded.engine.llamaCpp && now.llamaCpp !== recorded.engine.llamaCpp)) {
      out.push({ check: 'engine', line: `engine build differs: recorded ${describe(recorded.engine)}, here ${describe(now)}` });
    }
  }
  for (const m of recorded.models) {
    if (m.provider !== 'openai-compatible' || m.role === 'embedder') continue;
    const section = sectionOf(config, m.role);
    const now = section ? probe.model(section, m.role) : undefined;
    if (!now || now.name !== m.name || now.baseUrl !== m.baseUrl) {
      const what = (x: RecordedModel | undefined) => (x ? `${x.name} at ${x.baseUrl ?? '(no URL)'}` : 'none');
      out.push({ check: 'engine', line: `${m.role} endpoint differs: recorded ${what(m)}, here ${what(now)}` });
    }
  }
  return out;
}

/**
 * The retriever's description (`describe()`: engine, index checksum and commit, passage count,
 * server URL and index name) as recorded and as built here. Only the index folder's path (it may
 * move with the project) and the retrieval cache's mode (it never changes a hit) are left out.
 */
export function retrieverDifferences(recorded: Readonly<Record<string, string>>, here: Readonly<Record<string, string>>): Difference[] {
  const ignored = (key: string) => /(^|\.)index$/.test(key) || /(^|\.)cache$/.test(key);
  const keys = [...new Set([...Object.keys(recorded), ...Object.keys(here)])].filter((k) => !ignored(k)).sort();
  const out: Difference[] = [];
  for (const key of keys) {
    if (recorded[key] === here[key]) continue;
    const show = (v: string | undefined) => (v === undefined ? '(none)' : escapeControl(v, 120));
    out.push({ check: 'retriever', line: `retriever differs: ${key} recorded ${show(recorded[key])}, here ${show(here[key])}` });
  }
  return out;
}

/**
 * What differs without being refused: another CPU may take other llama.cpp kernels (an embedded
 * model's last bits may then change, which the rows will show), and the thread count is pinned.
 */
export function notes(config: ExperimentConfig, recorded: RunProvenance, probe: MachineProbe): string[] {
  const out: string[] = [];
  if (recorded.engine?.cpu) {
    const here = probe.engine().cpu;
    if (here !== undefined && here !== recorded.engine.cpu) out.push(`the CPU differs (recorded ${recorded.engine.cpu}; here ${here}): an embedded model's outputs may differ in their last bits`);
  }
  for (const m of recorded.models) {
    const section = m.role === 'embedder' ? undefined : sectionOf(config, m.role);
    if (section?.provider === 'embedded' && section.threads === undefined && m.threads !== undefined) out.push(`${m.role}.threads ${m.threads} as recorded (thread count changes floating-point order)`);
  }
  return out;
}

function sectionOf(config: ExperimentConfig, role: 'llm' | 'judge'): LlmSectionConfig | undefined {
  return role === 'llm' ? config.llm : config.judge;
}

/** `--allow-different a,b`: the kinds named, checked against the list (`all` for every one). */
export function parseAllowDifferent(values: readonly string[]): Set<ReproduceCheck> {
  const out = new Set<ReproduceCheck>();
  for (const word of values.flatMap((v) => v.split(',')).map((w) => w.trim()).filter(Boolean)) {
    if (word === 'all') for (const c of REPRODUCE_CHECKS) out.add(c);
    else if ((REPRODUCE_CHECKS as readonly string[]).includes(word)) out.add(word as ReproduceCheck);
    else throw new AmbiqaError(`--allow-different: unknown check ${JSON.stringify(escapeControl(word, 40))}`, `one or more of ${REPRODUCE_CHECKS.join(', ')}, or all`);
  }
  return out;
}

// ---------------------------------------------------------------- finding the runs

/** Run folders: a config.yaml and a results.jsonl. */
function isRunDir(dir: string): boolean {
  return existsSync(join(dir, runFiles.config)) && existsSync(join(dir, runFiles.results));
}

/** Run folders under `dir` (a bundle), at most `depth` levels down, in name order. */
function runDirsUnder(dir: string, depth = 4): string[] {
  if (isRunDir(dir)) return [dir];
  if (depth === 0) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    // A reproduction's own folder or a partial download is never a run of the bundle.
    if (entry.isDirectory() && !entry.name.startsWith('.')) out.push(...runDirsUnder(join(dir, entry.name), depth - 1));
  }
  return out;
}

const MLFLOW_RUN_ID = /^[0-9a-f]{32}$/i;

/**
 * The run folders `target` names: itself (a run folder), the run folders in it (a bundle or any
 * folder of runs; `only` picks one by folder or run name), or an MLflow run id whose files are
 * fetched by `fromMlflow`.
 */
export async function reproductionTargets(
  target: string,
  options: { only?: string; fromMlflow?: (runId: string) => Promise<string> } = {},
): Promise<string[]> {
  if (existsSync(target) && statSync(target).isDirectory()) {
    const dirs = runDirsUnder(resolve(target));
    if (dirs.length === 0) throw new AmbiqaError(`reproduce: no run folder (${runFiles.config} and ${runFiles.results}) in ${target}`, 'give a run folder (artifacts/runs/<name>), a bundle folder, or an MLflow run id');
    if (options.only === undefined) return dirs;
    const picked = dirs.filter((d) => basename(d) === options.only || readResolvedConfig(join(d, runFiles.config)).name === options.only);
    if (picked.length === 0) {
      throw new AmbiqaError(`reproduce: no run named ${JSON.stringify(escapeControl(options.only, 80))} in ${target}`, `its runs: ${dirs.map((d) => basename(d)).join(', ')}`);
    }
    return picked;
  }
  if (MLFLOW_RUN_ID.test(target)) {
    if (!options.fromMlflow) throw new AmbiqaError(`reproduce: ${target} looks like an MLflow run id, but no tracking server is configured`);
    return [await options.fromMlflow(target.toLowerCase())];
  }
  throw new AmbiqaError(`reproduce: ${escapeControl(target, 200)} is neither a folder nor an MLflow run id`, 'give a run folder (artifacts/runs/<name>), a bundle folder, or a 32-hex-digit MLflow run id');
}

/** The files a reproduction reads from an MLflow run; config and results must be there. */
const FROM_MLFLOW = [runFiles.config, runFiles.results, runFiles.provenance, runFiles.metrics, runFiles.state] as const;

/**
 * An MLflow run's files, downloaded into `dest` and checked against the checksums of its
 * `ambiqa.uploads` tag (what its session stored); a run whose uploads are pending or incomplete,
 * or a file that does not match, is refused in one line. Returns `dest`.
 */
export async function fetchRunFromMlflow(client: MlflowClient, runId: string, dest: string): Promise<string> {
  const run = await client.getRun(runId);
  const manifest = parseUploadManifest(run.tags[UPLOADS_TAG]);
  const missing = manifest ? [runFiles.config, runFiles.results].filter((f) => !manifest.has(f)) : [];
  if (!manifest || missing.length > 0) {
    const why = !manifest ? `${UPLOADS_TAG} is ${run.tags[UPLOADS_TAG] === undefined ? 'absent' : escapeControl(JSON.stringify(run.tags[UPLOADS_TAG]), 80)}` : `no ${missing.join(', ')}`;
    throw new AmbiqaError(`reproduce: MLflow run ${runId} has incomplete uploads (${why})`, 'resume the run so that its session uploads its files, or `ambiqa sync` its run dir if it ran offline');
  }
  mkdirSync(dest, { recursive: true });
  for (const file of FROM_MLFLOW) {
    const checksum = manifest.get(file);
    if (!checksum) continue;
    const data = await client.downloadArtifact(runId, file);
    if (sha256(data) !== checksum) throw new AmbiqaError(`reproduce: ${file} of MLflow run ${runId} does not match its upload checksum`, 'resume the run so that its session uploads its files again');
    writeFileSync(join(dest, file), data);
  }
  const record: MlflowRecord = { experimentName: '', experimentId: run.info.experimentId, runId, runName: run.info.runName };
  writeRunJson(join(dest, runFiles.mlflow), 'mlflow', record);
  return dest;
}

// ---------------------------------------------------------------- re-running

export interface ReproduceOptions {
  composer: Composer;
  /** Differences let through (each is still reported). */
  allowDifferent?: ReadonlySet<ReproduceCheck>;
  /** Endpoint runs: ask the endpoint rather than replay the LLM cache. */
  live?: boolean;
  /** Where the reproduction is written (default artifacts/reproductions/<name>-<time>). */
  outDir?: string;
  env?: RunEnvironment;
  probe?: Partial<MachineProbe>;
  /** The time in the folder name (tests). */
  now?: Date;
}

export type RowStatus = 'identical' | 'changed' | 'missing';

export interface RowComparison {
  key: string;
  status: RowStatus;
  /** changed: the first field that differs (`error`, `output`, `answer`), both values escaped and cut. */
  field?: string;
  recorded?: string;
  here?: string;
}

export interface MetricDifference {
  metric: string;
  recorded: number;
  here: number;
  delta: PairedDelta;
}

export interface Reproduction {
  runDir: string;
  name: string;
  reproductionDir: string;
  /** Differences found and let through by `--allow-different`. */
  allowed: Difference[];
  /** What differs without being refused, and what was pinned to the record (`notes`). */
  notes: string[];
  /**
   * How the run's models were asked: `recomputed` (in-process, cache off), `replayed` (an endpoint,
   * from the cache only) or `live` (an endpoint asked again); an endpoint's way when the run has one.
   */
  mode: 'recomputed' | 'replayed' | 'live';
  /** The same per config section (`llm`, and `judge` when the run has one). */
  modes: Partial<Record<'llm' | 'judge', Reproduction['mode']>>;
  rows: RowComparison[];
  identical: number;
  /** Rows of the reproduction the recorded run does not have (it was stopped early). */
  extra: number;
  /** Paired metric differences (reproduction − recorded), when live or when something changed. */
  metrics?: MetricDifference[];
  status: RunOutcome['status'];
  /** How the recorded run ended (run.json), when it says. */
  recordedStatus?: string;
  /**
   * Recorded answers that replayed LLM calls another run had computed (its cache entries): the
   * reproduction computes those calls itself, so such a row can change for that reason alone.
   */
  borrowed: BorrowedReplays[];
  /** Replayed calls of the recorded run whose cache entries named no writer (stored before writers were recorded). */
  unknownOrigin: number;
}

/** One recorded answer's replays of other runs' cache entries. */
export interface BorrowedReplays {
  key: string;
  /** Calls (samples and judgments) replayed from entries another run wrote, of `of` in the answer. */
  calls: number;
  of: number;
  /** The writers, `<run folder>@<its first start>`. */
  from: string[];
}

/**
 * Which recorded answers replayed calls that another run computed, read from the run's traces:
 * a replay whose `cachedFrom` is not this run (`cacheWriterOf` its folder and first start).
 * Replays of the run's own earlier sessions (a resumed run) are its own.
 */
export function borrowedReplays(runDir: string): { borrowed: BorrowedReplays[]; unknownOrigin: number } {
  const state = readRunJson(join(runDir, runFiles.state), 'state');
  const tracesPath = join(runDir, runFiles.traces);
  if (!state || !existsSync(tracesPath)) return { borrowed: [], unknownOrigin: 0 };
  const self = cacheWriterOf(runDir, state.startedAt);
  const borrowed: BorrowedReplays[] = [];
  let unknownOrigin = 0;
  for (const trace of readTraces(tracesPath)) {
    const completions = trace.llmCalls.flatMap((call) => call.completions);
    const from = new Set<string>();
    let calls = 0;
    for (const c of completions) {
      if (!c.cacheHit) continue;
      if (c.cachedFrom === undefined) unknownOrigin++;
      else if (c.cachedFrom !== self) {
        calls++;
        from.add(c.cachedFrom);
      }
    }
    if (calls > 0) borrowed.push({ key: traceKey(trace), calls, of: completions.length, from: [...from].sort() });
  }
  return { borrowed, unknownOrigin };
}

function timeStamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/** How a reproduction asks each model: what the brief of this module's header says, per provider. */
function reproductionSection(section: LlmSectionConfig, live: boolean, dir: string, recorded: RecordedModel | undefined): LlmSectionConfig {
  switch (section.provider) {
    case 'embedded':
      // Threads left to the machine's load are pinned to the recorded count.
      return { ...section, cache: { ...section.cache, mode: 'off' }, ...(section.threads === undefined && recorded?.threads !== undefined ? { threads: recorded.threads } : {}) };
    case 'scripted':
      // The test double stands for an in-process model: computed again, into a cache of its own.
      return { ...section, cache: join(dir, 'llm-cache.sqlite') };
    case 'openai-compatible':
      return { ...section, cache: live ? { mode: 'use', path: join(dir, 'llm-cache.sqlite') } : { ...section.cache, mode: 'replay' } };
  }
}

/** The recorded config as a reproduction runs it: its own name, no tracking, data found here, models asked as above. */
export function reproductionConfig(config: ExperimentConfig, recorded: RunProvenance | null, name: string, dir: string, live: boolean): ExperimentConfig {
  const at = (field: string, path: string | undefined) => {
    const file = recorded?.data[field];
    return file && path !== undefined ? locateRecordedFile(file) : path;
  };
  const dataset = { ...config.dataset };
  for (const field of ['path', 'demos', 'ids', 'alternatives'] as const) {
    const moved = at(field === 'path' ? 'dataset' : field, dataset[field]);
    if (moved !== undefined) dataset[field] = moved;
  }
  const retriever = config.retriever?.corpus ? { ...config.retriever, corpus: at('corpus', config.retriever.corpus)! } : config.retriever;
  return {
    ...config,
    name,
    dataset,
    ...(retriever ? { retriever } : {}),
    tracking: { ...config.tracking, enabled: false },
    llm: reproductionSection(config.llm, live, dir, recorded?.models.find((m) => m.role === 'llm')),
    ...(config.judge ? { judge: reproductionSection(config.judge, live, dir, recorded?.models.find((m) => m.role === 'judge')) } : {}),
  };
}

/** Re-run one recorded run and compare it row by row. */
export async function reproduceRun(runDir: string, options: ReproduceOptions): Promise<Reproduction> {
  const config = readResolvedConfig(join(runDir, runFiles.config));
  const recorded = readRunJson(join(runDir, runFiles.provenance), 'provenance');
  const allow = options.allowDifferent ?? new Set<ReproduceCheck>();
  let found: Difference[] = [];
  let noted: string[] = [];
  const probe = { ...machineProbe(), ...options.probe };
  if (!recorded) {
    // Nothing to check against: a run from before provenance.json, or a merge whose shards disagreed.
    if (allow.size < REPRODUCE_CHECKS.length) {
      throw new AmbiqaError(`cannot reproduce ${runDir}: it has no ${runFiles.provenance} (written before ambiqa recorded one), so nothing can be checked`, 'pass --allow-different all to re-run its config unchecked');
    }
  } else {
    found = differences(config, recorded, probe);
    const refused = found.filter((d) => !allow.has(d.check));
    if (refused.length > 0) {
      const kinds = [...new Set(refused.map((d) => d.check))];
      throw new AmbiqaError(`cannot reproduce ${config.name}: ${refused.map((d) => d.line).join('; ')}`, `pass --allow-different ${kinds.join(',')} to re-run it anyway`);
    }
    noted = notes(config, recorded, probe);
  }

  const live = options.live === true;
  // <name>-<time>, with -2, -3 … when a reproduction of the same second is there already.
  const stem = `${config.name}-${timeStamp(options.now ?? new Date())}`;
  let name = stem;
  for (let i = 2; options.outDir === undefined && existsSync(join(artifactsDir(), 'reproductions', name)); i++) name = `${stem}-${i}`;
  const reproductionDir = options.outDir ?? join(artifactsDir(), 'reproductions', name);
  mkdirSync(reproductionDir, { recursive: true });
  const rerun = reproductionConfig(config, recorded, name, reproductionDir, live);
  const modeOf = (section: LlmSectionConfig): Reproduction['mode'] => (section.provider === 'openai-compatible' ? (live ? 'live' : 'replayed') : 'recomputed');
  const modes: Reproduction['modes'] = { llm: modeOf(config.llm), ...(config.judge ? { judge: modeOf(config.judge) } : {}) };
  const mode: Reproduction['mode'] = Object.values(modes).find((m) => m !== 'recomputed') ?? 'recomputed';

  // The retriever describes itself only once built (an index's checksum, a server's index): built
  // here, before the first question, and kept by the composer for the run.
  if (recorded?.retriever && rerun.retriever) {
    const built = await options.composer.components(rerun);
    const other = retrieverDifferences(recorded.retriever, built.provenance?.retriever ?? {});
    const refused = other.filter((d) => !allow.has(d.check));
    if (refused.length > 0) {
      rmSync(reproductionDir, { recursive: true, force: true }); // nothing ran: no folder left behind
      throw new AmbiqaError(`cannot reproduce ${config.name}: ${refused.map((d) => d.line).join('; ')}`, 'pass --allow-different retriever to re-run it anyway');
    }
    found = [...found, ...other];
  }

  const outcome = await runConfig(rerun, {
    composer: options.composer,
    resume: false,
    // A replay sends nothing, so there is nothing to check before it; a live run checks its endpoint.
    preflight: live,
    runDir: reproductionDir,
    ...(options.env ? { env: options.env } : {}),
  });
  if (!outcome) throw new AmbiqaError(`reproduce ${config.name}: stopped before the first question`);

  const before = readResults(join(runDir, runFiles.results));
  const after = new Map(outcome.results.map((r) => [rowKey(r), r]));
  const rows = before.map((r) => compareRow(r, after.get(rowKey(r))));
  const keys = new Set(before.map(rowKey));
  const identical = rows.filter((r) => r.status === 'identical').length;
  const reproduction: Reproduction = {
    runDir,
    name: config.name,
    reproductionDir,
    allowed: found,
    notes: noted,
    mode,
    modes,
    rows,
    identical,
    extra: outcome.results.filter((r) => !keys.has(rowKey(r))).length,
    status: outcome.status,
    ...borrowedReplays(runDir),
  };
  const recordedStatus = readRunJson(join(runDir, runFiles.state), 'state')?.status;
  if (recordedStatus) reproduction.recordedStatus = recordedStatus;
  if (live || identical < rows.length) reproduction.metrics = metricDifferences(before, after);
  return reproduction;
}

const SHOWN = 160;

/** Identical when the same fields say the same; else the first that differs, escaped. */
export function compareRow(recorded: ExampleResult, here: ExampleResult | undefined): RowComparison {
  const key = rowKey(recorded);
  if (!here) return { key, status: 'missing' };
  for (const field of ['error', 'output', 'answer'] as const) {
    const a = recorded[field];
    const b = here[field];
    if (a !== b) return { key, status: 'changed', field, recorded: shown(a), here: shown(b) };
  }
  return { key, status: 'identical' };
}

function shown(text: string | undefined): string {
  return text === undefined ? '(none)' : quoteForDisplay(text, SHOWN);
}

/** Each metric's paired difference over the rows answered in both runs (reproduction − recorded). */
export function metricDifferences(before: readonly ExampleResult[], after: ReadonlyMap<string, ExampleResult>): MetricDifference[] {
  const pairs = new Map<string, Array<[number, number]>>();
  for (const r of before) {
    const other = after.get(rowKey(r));
    if (!other || r.error !== undefined || other.error !== undefined) continue;
    const a = scoreValues(r);
    const b = scoreValues(other);
    for (const [metric, value] of Object.entries(a)) {
      if (b[metric] === undefined) continue;
      let list = pairs.get(metric);
      if (!list) pairs.set(metric, (list = []));
      list.push([value, b[metric]!]);
    }
  }
  return [...pairs.entries()].map(([metric, list]) => ({
    metric,
    recorded: list.reduce((s, [a]) => s + a, 0) / list.length,
    here: list.reduce((s, [, b]) => s + b, 0) / list.length,
    delta: pairedDelta(list.map(([a, b]) => b - a)),
  }));
}

/** The report's lines: one per row that is not identical, a summary line, the metric differences. */
export function describeReproduction(r: Reproduction): string[] {
  const lines: string[] = [];
  const words = { recomputed: 'computed again (LLM cache off)', replayed: 'replayed from the LLM cache (nothing sent)', live: 'the endpoint asked again (--live)' };
  const how = Object.entries(r.modes)
    .map(([section, m]) => `${section} ${words[m]}`)
    .join('; ');
  lines.push(`reproduce ${r.name}: ${how}; reproduction in ${r.reproductionDir}`);
  for (const d of r.allowed) lines.push(`  allowed difference (${d.check}): ${d.line}`);
  for (const n of r.notes) lines.push(`  note: ${n}`);
  const borrowedBy = new Map(r.borrowed.map((b) => [b.key, b]));
  const writers = (b: BorrowedReplays) => b.from.map((w) => escapeControl(w, 80)).join(', ');
  for (const row of r.rows) {
    if (row.status === 'changed') lines.push(`  ${escapeControl(row.key, 80)}: changed ${row.field}: recorded ${row.recorded}, here ${row.here}`);
    else if (row.status === 'missing') lines.push(`  ${escapeControl(row.key, 80)}: missing (the reproduction has no answer for it)`);
    const b = borrowedBy.get(row.key);
    if (b && row.status !== 'identical') lines.push(`    its recorded answer replayed ${b.calls} of ${b.of} calls from cache entries another run computed (${writers(b)})`);
  }
  const changed = r.rows.filter((x) => x.status === 'changed').length;
  const missing = r.rows.length - r.identical - changed;
  const rest = [
    changed > 0 ? `${changed} changed` : '',
    missing > 0 ? `${missing} missing` : '',
    r.extra > 0 ? `${r.extra} not in the recorded run` : '',
    r.status !== 'FINISHED' ? `the reproduction ${r.status}${r.recordedStatus ? `, the recorded run ${r.recordedStatus}` : ''}` : '',
  ].filter(Boolean);
  lines.push(`${r.identical}/${r.rows.length} outputs identical${rest.length > 0 ? ` (${rest.join(', ')})` : ''}`);
  if (r.borrowed.length > 0 && r.mode === 'recomputed') {
    const all = [...new Set(r.borrowed.flatMap((b) => b.from))];
    lines.push(
      `  note: ${r.borrowed.length} recorded answer(s) replayed calls another run computed (${all.slice(0, 3).map((w) => escapeControl(w, 80)).join(', ')}${all.length > 3 ? ', …' : ''}); the reproduction computed those calls itself, so a difference there may come from that other run's computation rather than this one's`,
    );
  }
  if (r.unknownOrigin > 0) lines.push(`  note: ${r.unknownOrigin} replayed call(s) of the recorded run come from cache entries that name no writer (stored before ambiqa recorded one)`);
  for (const m of r.metrics ?? []) {
    const d = m.delta;
    const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
    lines.push(`  ${m.metric}: recorded ${f(m.recorded)}, here ${f(m.here)}, paired Δ ${d.meanDelta >= 0 ? '+' : ''}${f(d.meanDelta)} [95% CI ${f(d.ciLow)}, ${f(d.ciHigh)}], p ${Number.isFinite(d.p) ? d.p.toPrecision(2) : 'n/a'} (n ${d.n})`);
  }
  return lines;
}

/**
 * Whether every recorded output came out the same, and the reproduction finished — or stopped as
 * the recorded run did (five failures in a row, recorded and reproduced alike).
 */
export function reproduced(r: Reproduction): boolean {
  return r.identical === r.rows.length && (r.status === 'FINISHED' || r.status === r.recordedStatus);
}
