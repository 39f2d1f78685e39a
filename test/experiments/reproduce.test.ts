import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/config/paths';
import { configToYaml, readResolvedConfig, type ExperimentConfig, type ExperimentInput } from '../../src/experiments/config';
import { collectProvenance, collectRunProvenance, mergedProvenance, rememberedSha256, sha256Path } from '../../src/experiments/provenance';
import { borrowedReplays, describeReproduction, differences, fetchRunFromMlflow, machineProbe, notes, parseAllowDifferent, retrieverDifferences, reproduced, reproduceRun, reproductionConfig, reproductionTargets, type MachineProbe } from '../../src/experiments/reproduce';
import { createSectionClient } from '../../src/llm/provider-registry';
import { runInProcess, sharedComposer } from '../../src/experiments/session';
import { readResults, readRunJson, readTraces, runFiles, type RunProvenance } from '../../src/run-files';
import { sha256 } from '../../src/experiments/shard-group';
import type { MlflowClient } from '../../src/tracking/index';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { useIsolatedSession } from '../helpers/session-env';

/**
 * `ambiqa reproduce` end to end in-process, with the scripted model and a loopback
 * OpenAI-compatible endpoint (never the embedded model): the run records provenance.json, a
 * reproduction recomputes (scripted) or replays (endpoint) and compares each row; what differs on
 * this machine — a dataset byte, a model byte, the commit — is refused in one line naming it.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-reproduce-'));
useIsolatedSession(dir);

let server: FaultServer;
beforeAll(async () => {
  server = await startFaultServer();
});
afterAll(async () => {
  await server.close();
});

/**
 * The checkout here as the run recorded it. The record is of the clone running the tests, which
 * may have uncommitted changes (then every reproduction is rightly refused): the run's record is
 * set to a clean commit (`cleanRecord`) and the probe reports that commit, clean, here.
 */
const CLEAN = 'c'.repeat(40);
function sameCode(recorded: RunProvenance): Pick<MachineProbe, 'code'> {
  return { code: () => ({ commit: recorded.code.commit, dirty: false, ambiqaVersion: recorded.code.ambiqaVersion }) };
}

function cleanRecord(runDir: string): void {
  const p = provenanceOf(runDir);
  writeFileSync(join(runDir, runFiles.provenance), JSON.stringify({ ...p, code: { ...p.code, commit: CLEAN, dirty: false } }));
}

function provenanceOf(runDir: string): RunProvenance {
  const p = readRunJson(join(runDir, runFiles.provenance), 'provenance');
  if (!p) throw new Error(`no provenance.json in ${runDir}`);
  return p;
}

let stamp = 0;
/** Distinct reproduction folders within one second. */
const nextTime = () => new Date(Date.UTC(2026, 11, 7, 12, 0, stamp++));

function scripted(dataset: string, callLog: string): ExperimentInput {
  return {
    dataset: { name: 'asqa', path: dataset },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', cycle: ['first reply', 'second reply', 'third reply'], model: 'scripted-reproduce', cache: join(dir, 'scripted-cache.sqlite'), callLog },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  };
}

describe('reproduce a scripted run', () => {
  const data = join(dir, 'asqa-copy.json');
  const callLog = join(dir, 'calls.jsonl');
  let runDir: string;

  beforeAll(async () => {
    copyFileSync(join(examplesDir, 'asqa-mini.json'), data);
    const run = await runInProcess(scripted(data, callLog), { name: 'scripted', preflight: false });
    runDir = run.dir;
    cleanRecord(runDir);
  });

  it('records what reproduction checks in provenance.json and as MLflow tags', () => {
    const p = provenanceOf(runDir);
    expect(p.data.dataset!.sha256).toBe(sha256Path(data));
    expect(p.data.dataset!.bytes).toBe(readFileSync(data).length);
    expect(p.models).toEqual([{ role: 'llm', provider: 'scripted', name: 'scripted-reproduce' }]);
    expect(p.engine).toBeUndefined(); // no in-process model generated
    const config = readResolvedConfig(join(runDir, runFiles.config));
    const tags = sharedComposer().tags(config);
    expect(tags['ambiqa.data.dataset.sha256']).toBe(sha256Path(data));
  });

  it('recomputes every output and reports each row identical', async () => {
    const callsBefore = readFileSync(callLog, 'utf8').trim().split('\n').length;
    const r = await reproduceRun(runDir, { composer: sharedComposer(), probe: sameCode(provenanceOf(runDir)), now: nextTime() });
    expect(r.rows).toHaveLength(6);
    expect(r.rows.every((row) => row.status === 'identical')).toBe(true);
    expect(reproduced(r)).toBe(true);
    expect(r.metrics).toBeUndefined(); // nothing changed and not live: no metric difference asked for
    expect(describeReproduction(r)).toContain('6/6 outputs identical');
    expect(r.mode).toBe('recomputed');
    expect(describeReproduction(r)[0]).toMatch(/^reproduce scripted: llm computed again \(LLM cache off\); reproduction in .*reproductions/);
    // Computed again, not replayed: the provider was called for every question (start and end lines).
    const callsAfter = readFileSync(callLog, 'utf8').trim().split('\n').length;
    expect(callsAfter - callsBefore).toBe(2 * 6);
    expect(r.reproductionDir).toContain(join('artifacts', 'reproductions', 'scripted-'));
    expect(existsSync(join(r.reproductionDir, runFiles.results))).toBe(true);
  });

  it('refuses a changed commit or uncommitted changes, naming them; --allow-different commit re-runs and says so', async () => {
    const recorded = provenanceOf(runDir);
    const composer = sharedComposer();
    const other = { code: () => ({ commit: 'f'.repeat(40), dirty: false, ambiqaVersion: recorded.code.ambiqaVersion }) };
    await expect(reproduceRun(runDir, { composer, probe: other, now: nextTime() })).rejects.toThrow(/^cannot reproduce scripted: commit differs: recorded cccccccccccc, here ffffffffffff$/);
    const dirty = { code: () => ({ commit: CLEAN, dirty: true, ambiqaVersion: recorded.code.ambiqaVersion }) };
    await expect(reproduceRun(runDir, { composer, probe: dirty, now: nextTime() })).rejects.toThrow(/^cannot reproduce scripted: the code here has uncommitted changes \(commit cccccccccccc\)$/);
    const r = await reproduceRun(runDir, { composer, probe: other, allowDifferent: parseAllowDifferent(['commit']), now: nextTime() });
    expect(reproduced(r)).toBe(true);
    expect(describeReproduction(r).some((l) => /allowed difference \(commit\): commit differs/.test(l))).toBe(true);
  });

  it('is the library\'s reproduce too (the commit recorded here is a stand-in: let through, and said)', async () => {
    const { reproduce } = await import('../../src/index');
    await expect(reproduce(runDir, { progress: false })).rejects.toThrow(/^cannot reproduce scripted: commit differs: recorded cccccccccccc/);
    const [r] = await reproduce(runDir, { allowDifferent: ['commit'], progress: false });
    expect(r!.identical).toBe(6);
    expect(r!.allowed.map((d) => d.check)).toContain('commit');
  });

  it('refuses a run recorded from a tree with uncommitted changes', async () => {
    const copy = join(dir, 'dirty-run');
    cpSync(runDir, copy, { recursive: true });
    const p = provenanceOf(copy);
    writeFileSync(join(copy, runFiles.provenance), JSON.stringify({ ...p, code: { ...p.code, commit: 'a'.repeat(40), dirty: true } }));
    const here = { code: () => ({ commit: 'a'.repeat(40), dirty: false, ambiqaVersion: p.code.ambiqaVersion }) };
    await expect(reproduceRun(copy, { composer: sharedComposer(), probe: here, now: nextTime() })).rejects.toThrow(/made from commit aaaaaaaaaaaa with uncommitted changes/);
  });

  it('refuses an edited dataset byte, naming the dataset file', async () => {
    const copy = join(dir, 'edited-data-run');
    cpSync(runDir, copy, { recursive: true });
    const original = readFileSync(data, 'utf8');
    // One byte of a question changed; the file stays valid JSON.
    writeFileSync(data, original.replace('Who won the World Cup?', 'Who won the World Cup!'));
    try {
      const error = await reproduceRun(copy, { composer: sharedComposer(), probe: sameCode(provenanceOf(copy)), now: nextTime() }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      const message = (error as Error).message;
      expect(message).toMatch(/^cannot reproduce scripted: dataset sha256 differs: recorded [0-9a-f]{12}…, here [0-9a-f]{12}… \(.*asqa-copy\.json\)$/);
      expect(message).not.toContain('\n');
      expect((error as { hint?: string }).hint).toMatch(/--allow-different dataset/);
    } finally {
      writeFileSync(data, original);
    }
  });

  it('refuses a run without provenance.json unless every check is let through', async () => {
    const copy = join(dir, 'old-run');
    cpSync(runDir, copy, { recursive: true });
    const { rmSync } = await import('node:fs');
    rmSync(join(copy, runFiles.provenance));
    await expect(reproduceRun(copy, { composer: sharedComposer(), now: nextTime() })).rejects.toThrow(/has no provenance\.json/);
    const r = await reproduceRun(copy, { composer: sharedComposer(), allowDifferent: parseAllowDifferent(['all']), now: nextTime() });
    expect(r.identical).toBe(6);
  });

  it('gives a merged run its shards\' record when they agree on what is checked', () => {
    const p = provenanceOf(runDir);
    const elsewhere = { ...p, recordedAt: 'later', data: { dataset: { ...p.data.dataset!, path: '/other/machine/asqa.json' } } };
    expect(mergedProvenance([p, elsewhere])).toBe(p);
    const otherData = { ...p, data: { dataset: { ...p.data.dataset!, sha256: '0'.repeat(64) } } };
    expect(mergedProvenance([p, otherData])).toBeUndefined();
    expect(mergedProvenance([p, { ...p, code: { ...p.code, commit: 'd'.repeat(40) } }])).toBeUndefined();
    expect(mergedProvenance([p, null])).toBeUndefined();
  });

  it('finds the runs of a bundle folder, and the one named', async () => {
    const bundle = join(dir, 'bundle');
    mkdirSync(join(bundle, 'runs'), { recursive: true });
    cpSync(runDir, join(bundle, 'runs', 'scripted'), { recursive: true });
    cpSync(runDir, join(bundle, 'runs', 'again'), { recursive: true });
    const all = await reproductionTargets(bundle);
    expect(all.map((d) => d.slice(bundle.length))).toEqual([join('/runs', 'again'), join('/runs', 'scripted')]);
    expect(await reproductionTargets(bundle, { only: 'again' })).toEqual([join(bundle, 'runs', 'again')]);
    await expect(reproductionTargets(bundle, { only: 'nope' })).rejects.toThrow(/no run named "nope" in .*bundle/);
    await expect(reproductionTargets(join(dir, 'no-such-folder'))).rejects.toThrow(/neither a folder nor an MLflow run id/);
    await expect(reproductionTargets('0123456789abcdef0123456789abcdef')).rejects.toThrow(/looks like an MLflow run id/);
  });
});

describe('answers replayed from another run\'s cache entries', () => {
  it('name that run in the trace (cachedFrom) and in the reproduction report; a resumed run\'s own replays are its own', async () => {
    const data = join(dir, 'asqa-borrow.json');
    copyFileSync(join(examplesDir, 'asqa-mini.json'), data);
    const cache = join(dir, 'borrow-cache.sqlite');
    const config = (callLog: string): ExperimentInput => {
      const base = scripted(data, callLog);
      return { ...base, llm: { ...(base.llm as Record<string, unknown>), cache } } as ExperimentInput;
    };
    const computes = await runInProcess(config(join(dir, 'calls-computes.jsonl')), { name: 'computes', preflight: false });
    const borrows = await runInProcess(config(join(dir, 'calls-borrows.jsonl')), { name: 'borrows', preflight: false });
    // The second run sent nothing: every call replayed the first run's entries.
    expect(existsSync(join(dir, 'calls-borrows.jsonl')) ? readFileSync(join(dir, 'calls-borrows.jsonl'), 'utf8').trim() : '').toBe('');
    const writer = `computes@${readRunJson(join(computes.dir, runFiles.state), 'state')!.startedAt}`;
    const completions = readTraces(join(borrows.dir, runFiles.traces)).flatMap((t) => t.llmCalls.flatMap((c) => c.completions));
    expect(completions.length).toBeGreaterThan(0);
    expect(completions.every((c) => c.cacheHit && c.cachedFrom === writer)).toBe(true);
    // The first run computed its answers: nothing borrowed.
    expect(borrowedReplays(computes.dir)).toEqual({ borrowed: [], unknownOrigin: 0 });
    const found = borrowedReplays(borrows.dir);
    expect(found.unknownOrigin).toBe(0);
    expect(found.borrowed.map((b) => b.key).sort()).toEqual(readResults(join(borrows.dir, runFiles.results)).map((r) => r.id).sort());
    expect(found.borrowed.every((b) => b.calls === b.of && b.calls > 0 && b.from.length === 1 && b.from[0] === writer)).toBe(true);

    // A run's replays of its own entries (a resumed session's, made under the same first start)
    // are its own; a replay whose entry names no writer is counted apart.
    const copy = join(dir, 'computes-copy');
    cpSync(computes.dir, copy, { recursive: true });
    const traces = readTraces(join(copy, runFiles.traces));
    const own = `${'computes-copy'}@${readRunJson(join(copy, runFiles.state), 'state')!.startedAt}`;
    traces[0]!.llmCalls[0]!.completions[0] = { ...traces[0]!.llmCalls[0]!.completions[0]!, cacheHit: true, cachedFrom: own };
    traces[1]!.llmCalls[0]!.completions[0] = { ...traces[1]!.llmCalls[0]!.completions[0]!, cacheHit: true };
    writeFileSync(join(copy, runFiles.traces), traces.map((t) => JSON.stringify(t)).join('\n') + '\n');
    expect(borrowedReplays(copy)).toEqual({ borrowed: [], unknownOrigin: 1 });

    cleanRecord(borrows.dir);
    const r = await reproduceRun(borrows.dir, { composer: sharedComposer(), probe: sameCode(provenanceOf(borrows.dir)), now: nextTime() });
    expect(r.borrowed).toEqual(found.borrowed);
    expect(describeReproduction(r)).toContain(
      `  note: ${found.borrowed.length} recorded answer(s) replayed calls another run computed (${writer}); the reproduction computed those calls itself, so a difference there may come from that other run's computation rather than this one's`,
    );
    // A row that changed says so beside its own line.
    const first = found.borrowed[0]!;
    const changed = { ...r, rows: r.rows.map((row) => (row.key === first.key ? { key: row.key, status: 'changed' as const, field: 'output', recorded: '"a"', here: '"b"' } : row)) };
    const lines = describeReproduction(changed);
    const at = lines.indexOf(`  ${first.key}: changed output: recorded "a", here "b"`);
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe(`    its recorded answer replayed ${first.calls} of ${first.of} calls from cache entries another run computed (${writer})`);
  });
});

describe('checksums recorded at run time', () => {
  it('keep a large file\'s checksum across processes by path, size and mtime; a reproduction hashes the bytes', () => {
    const before = process.env.AMBIQA_CACHE_DIR;
    process.env.AMBIQA_CACHE_DIR = join(dir, 'hash-cache');
    try {
      const a = join(dir, 'big-a.tsv');
      writeFileSync(a, 'passage\tone\n');
      const sha = rememberedSha256(a, 1);
      expect(sha).toBe(sha256Path(a));
      const store = JSON.parse(readFileSync(join(dir, 'hash-cache', 'file-sha256.json'), 'utf8'));
      expect(store[a]).toMatchObject({ sha256: sha, size: 12 });
      // Another process finds it in the store and does not read the file (a planted value proves it).
      const b = join(dir, 'big-b.tsv');
      writeFileSync(b, 'passage\ttwo\n');
      const st = statSync(b);
      writeFileSync(join(dir, 'hash-cache', 'file-sha256.json'), JSON.stringify({ ...store, [b]: { size: st.size, mtimeMs: st.mtimeMs, sha256: 'e'.repeat(64) } }));
      expect(rememberedSha256(b, 1)).toBe('e'.repeat(64));
      expect(sha256Path(b)).not.toBe('e'.repeat(64));
    } finally {
      if (before === undefined) delete process.env.AMBIQA_CACHE_DIR;
      else process.env.AMBIQA_CACHE_DIR = before;
    }
  });
});

describe('an MLflow run\'s files', () => {
  /** A server holding one run's files and tags (only what reproduce asks of a client). */
  function server(files: Record<string, string>, uploads: string | undefined): MlflowClient {
    return {
      getRun: async (runId: string) => ({ info: { runId, experimentId: '1', runName: 'served', status: 'FINISHED' }, tags: uploads === undefined ? {} : { 'ambiqa.uploads': uploads } }),
      downloadArtifact: async (_runId: string, path: string) => Buffer.from(files[path] ?? ''),
    } as unknown as MlflowClient;
  }
  const files = { 'config.yaml': 'format: 3\n', 'results.jsonl': '{}\n', 'provenance.json': '{}\n' };
  const manifest = Object.entries(files).map(([f, text]) => `${f}=${sha256(Buffer.from(text))}`).join(' ');
  const id = 'ab'.repeat(16);

  it('are fetched when every one matches the checksum its session stored', async () => {
    const dest = join(dir, 'fetched');
    expect(await fetchRunFromMlflow(server(files, manifest), id, dest)).toBe(dest);
    for (const [f, text] of Object.entries(files)) expect(readFileSync(join(dest, f), 'utf8')).toBe(text);
  });

  it('are refused when the uploads are pending, lack the results, or do not match', async () => {
    await expect(fetchRunFromMlflow(server(files, 'pending'), id, join(dir, 'f1'))).rejects.toThrow(`reproduce: MLflow run ${id} has incomplete uploads (ambiqa.uploads is "pending")`);
    await expect(fetchRunFromMlflow(server(files, manifest.replace(/results\.jsonl=\S+/, '')), id, join(dir, 'f2'))).rejects.toThrow(/has incomplete uploads \(no results\.jsonl\)/);
    await expect(fetchRunFromMlflow(server({ ...files, 'results.jsonl': '{"cut":' }, manifest), id, join(dir, 'f3'))).rejects.toThrow(`reproduce: results.jsonl of MLflow run ${id} does not match its upload checksum`);
  });
});

describe('reproduce checks the retriever as it describes itself', () => {
  it('names a rebuilt index and another server, and ignores where the index folder is and the cache mode', () => {
    const recorded = { 'retriever.engine': 'lucene', 'retriever.index': '/a/index', 'retriever.index.sha256': 'a'.repeat(64), 'retriever.index.passages': '1000', cache: 'use' };
    expect(retrieverDifferences(recorded, { ...recorded, 'retriever.index': '/b/index', cache: 'refresh' })).toEqual([]);
    const rebuilt = retrieverDifferences(recorded, { ...recorded, 'retriever.index.sha256': 'b'.repeat(64), 'retriever.index.passages': '1001' });
    expect(rebuilt.map((d) => d.line)).toEqual([`retriever differs: retriever.index.passages recorded 1000, here 1001`, `retriever differs: retriever.index.sha256 recorded ${'a'.repeat(64)}, here ${'b'.repeat(64)}`]);
    expect(rebuilt.every((d) => d.check === 'retriever')).toBe(true);
    const server = { 'retriever.engine': 'lucene', 'retriever.url': 'http://127.0.0.1:8001', 'retriever.indexName': 'wiki' };
    expect(retrieverDifferences(server, { ...server, 'retriever.indexName': 'wiki\u001b[2J' })[0]!.line).toBe('retriever differs: retriever.indexName recorded wiki, here wiki\\x1b[2J');
    expect(parseAllowDifferent(['retriever']).has('retriever')).toBe(true);
  });
});

describe('reproduce checks the model file byte for byte', () => {
  it('refuses a model whose bytes changed since the run, naming the file', async () => {
    // An embedded run's record, without running the embedded model: a small stand-in GGUF file
    // named by path (no catalog checksum, so the run hashes the file when it starts).
    const model = join(dir, 'tiny-model.gguf');
    writeFileSync(model, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(4096, 7)]));
    const scriptedRun = join(dir, 'artifacts', 'runs', 'scripted');
    const base = readResolvedConfig(join(scriptedRun, runFiles.config));
    const config = { ...base, name: 'embedded-standin', llm: { provider: 'embedded', model, cache: { mode: 'use', path: join(dir, 'c.sqlite') }, contextSize: 4096, judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY' } } as unknown as ExperimentConfig;
    const recorded = collectRunProvenance(config, { ...collectProvenance(), gitCommit: CLEAN, gitDirty: false }, { embedder: false });
    expect(recorded.models[0]).toMatchObject({ role: 'llm', provider: 'embedded', name: 'tiny-model.gguf', file: model, sha256: sha256Path(model) });
    expect(recorded.engine?.nodeLlamaCpp).toMatch(/^\d+\.\d+\.\d+/);

    const runDir = join(dir, 'embedded-standin');
    cpSync(scriptedRun, runDir, { recursive: true });
    writeFileSync(join(runDir, runFiles.config), configToYaml(config));
    writeFileSync(join(runDir, runFiles.provenance), JSON.stringify(recorded));
    const probe = { ...sameCode(recorded), engine: () => recorded.engine! };
    expect(differences(readResolvedConfig(join(runDir, runFiles.config)), recorded, { ...machineProbe(), ...probe })).toEqual([]);

    const bytes = readFileSync(model);
    bytes[100] = bytes[100]! ^ 1;
    writeFileSync(model, bytes);
    await expect(reproduceRun(runDir, { composer: sharedComposer(), probe, now: nextTime() })).rejects.toThrow(
      new RegExp(`^cannot reproduce embedded-standin: model sha256 differs: recorded ${recorded.models[0]!.sha256!.slice(0, 12)}…, here ${sha256Path(model).slice(0, 12)}… \\(${model.replace(/[.]/g, '\\.')}\\)$`),
    );
    // Re-run, its client would compute every output again: the cache is off (the file is not loaded until a call).
    // with the thread count it ran with (recorded, since the config left it to the machine's load).
    const rerun = reproductionConfig(config, recorded, 'standin-again', join(dir, 'standin-again'), false);
    const client = await createSectionClient(rerun.llm);
    expect(client.cacheMode).toBe('off');
    client.close();
    expect(recorded.models[0]!.threads).toBeGreaterThanOrEqual(1);
    expect(rerun.llm).toMatchObject({ provider: 'embedded', threads: recorded.models[0]!.threads });
    expect(notes(config, recorded, { ...machineProbe(), ...probe })).toEqual([`llm.threads ${recorded.models[0]!.threads} as recorded (thread count changes floating-point order)`]);
    // Another CPU is said, not refused (the edited model byte above is the one difference).
    const otherCpu = { ...machineProbe(), ...probe, engine: () => ({ ...recorded.engine!, cpu: 'another CPU' }) };
    expect(differences(config, recorded, otherCpu).map((d) => d.check)).toEqual(['model']);
    expect(notes(config, recorded, otherCpu)[0]).toMatch(/^the CPU differs \(recorded .+; here another CPU\)/);

    // A different engine build is named too, and both together in the one line.
    const otherEngine = { ...probe, engine: () => ({ nodeLlamaCpp: '0.0.1' }) };
    await expect(reproduceRun(runDir, { composer: sharedComposer(), probe: otherEngine, now: nextTime() })).rejects.toThrow(/model sha256 differs: .*; engine build differs: recorded node-llama-cpp \S+ .*here node-llama-cpp 0\.0\.1/);
  });
});

describe('reproduce an endpoint run', () => {
  const cache = join(dir, 'endpoint-cache.sqlite');
  let runDir: string;
  let recordedRows: ReturnType<typeof readResults>;

  function endpoint(): ExperimentInput {
    return {
      dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json') },
      pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
      llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'loopback', cache: { path: cache } },
      metrics: ['str_em'],
      tracking: { enabled: false },
      concurrency: 1,
    };
  }

  beforeAll(async () => {
    server.replyFor = () => 'I do not know';
    const run = await runInProcess(endpoint(), { name: 'endpoint', preflight: false });
    runDir = run.dir;
    cleanRecord(runDir);
    recordedRows = readResults(join(runDir, runFiles.results));
    expect(recordedRows.every((r) => r.output === 'I do not know')).toBe(true);
  });

  it('records the endpoint without credentials; re-runs it from the cache only, or live into a cache of its own', () => {
    const p = provenanceOf(runDir);
    expect(p.models).toEqual([{ role: 'llm', provider: 'openai-compatible', name: 'loopback', baseUrl: server.url }]);
    const config = readResolvedConfig(join(runDir, runFiles.config));
    expect(reproductionConfig(config, p, 'x', join(dir, 'x'), false).llm).toMatchObject({ cache: { mode: 'replay', path: cache } });
    expect(reproductionConfig(config, p, 'x', join(dir, 'x'), true).llm).toMatchObject({ cache: { mode: 'use', path: join(dir, 'x', 'llm-cache.sqlite') } });
    expect(reproductionConfig(config, p, 'x', join(dir, 'x'), true).tracking.enabled).toBe(false);
  });

  it('replays from the LLM cache by default: identical, and nothing is sent', async () => {
    server.replyFor = () => 'something else now';
    const sent = server.requests.length;
    const r = await reproduceRun(runDir, { composer: sharedComposer(), probe: sameCode(provenanceOf(runDir)), now: nextTime() });
    expect(r.mode).toBe('replayed');
    expect(r.identical).toBe(6);
    expect(server.requests.length).toBe(sent);
  });

  it('--live asks the endpoint: changed rows shown escaped, the paired metric difference, and not reproduced', async () => {
    // The endpoint now answers two questions with their gold answers (and an escape sequence,
    // which must not reach a terminal as is), the rest as before.
    const gold = new Map(recordedRows.slice(0, 2).map((r) => [r.question, r.target!.qaPairs.flatMap((q) => q.shortAnswers).join(', ')]));
    server.replyFor = (body) => {
      const messages = body.messages as Array<{ content: string }>;
      const text = messages.map((m) => m.content).join('\n');
      for (const [question, answers] of gold) if (text.includes(question)) return `\u001b[31m${answers}`;
      return 'I do not know';
    };
    const sent = server.requests.length;
    const r = await reproduceRun(runDir, { composer: sharedComposer(), probe: sameCode(provenanceOf(runDir)), live: true, now: nextTime() });
    expect(server.requests.length - sent).toBe(6);
    expect(r.mode).toBe('live');
    expect(describeReproduction(r)[0]).toMatch(/^reproduce endpoint: llm the endpoint asked again \(--live\); /);
    expect(r.identical).toBe(4);
    expect(reproduced(r)).toBe(false);
    const changed = r.rows.filter((x) => x.status === 'changed');
    expect(changed.map((x) => x.key)).toEqual(recordedRows.slice(0, 2).map((x) => x.id));
    expect(changed[0]!.field).toBe('output');
    expect(changed[0]!.recorded).toBe('"I do not know"');
    expect(changed[0]!.here).toMatch(/^"\\x1b\[31m/);
    const lines = describeReproduction(r);
    expect(lines.join('\n')).not.toContain('\u001b');
    expect(lines).toContain('4/6 outputs identical (2 changed)');
    const strEm = r.metrics!.find((m) => m.metric === 'str_em')!;
    expect(strEm.delta.n).toBe(6);
    expect(strEm.here).toBeGreaterThan(strEm.recorded);
    expect(strEm.delta.meanDelta).toBeCloseTo(strEm.here - strEm.recorded, 9);
    expect(lines.some((l) => /^ {2}str_em: recorded \d+\.\d, here \d+\.\d, paired Δ \+\d+\.\d \[95% CI/.test(l))).toBe(true);
    // The live answers went to the reproduction's own cache, not the recorded run's.
    expect(existsSync(join(r.reproductionDir, 'llm-cache.sqlite'))).toBe(true);
  });

  it('a call the cache does not hold is refused in replay, never sent', async () => {
    const copy = join(dir, 'endpoint-other-cache');
    cpSync(runDir, copy, { recursive: true });
    const config = readResolvedConfig(join(copy, runFiles.config));
    const moved = { ...config, llm: { ...config.llm, cache: { mode: 'use', path: join(dir, 'empty-cache.sqlite') } } } as ExperimentConfig;
    writeFileSync(join(copy, runFiles.config), configToYaml(moved));
    const sent = server.requests.length;
    const r = await reproduceRun(copy, { composer: sharedComposer(), probe: sameCode(provenanceOf(copy)), now: nextTime() });
    expect(server.requests.length).toBe(sent);
    expect(r.identical).toBe(0);
    expect(reproduced(r)).toBe(false);
    const first = r.rows[0]!;
    expect(first).toMatchObject({ status: 'changed', field: 'error', recorded: '(none)' });
    // Five failures in a row stop a run (FAILED): the sixth question was never asked.
    expect(describeReproduction(r)).toContain('0/6 outputs identical (5 changed, 1 missing, the reproduction FAILED, the recorded run FINISHED)');
    expect(first.here).toMatch(/^"not in the LLM cache \(.*empty-cache\.sqlite\): a closed-book\.\S+ call of openai-compatible model loopback/);
  });

  it('refuses another endpoint, naming both', async () => {
    const copy = join(dir, 'endpoint-moved');
    cpSync(runDir, copy, { recursive: true });
    const config = readResolvedConfig(join(copy, runFiles.config));
    writeFileSync(join(copy, runFiles.config), configToYaml({ ...config, llm: { ...config.llm, baseUrl: 'http://127.0.0.1:9/v1' } } as ExperimentConfig));
    await expect(reproduceRun(copy, { composer: sharedComposer(), probe: sameCode(provenanceOf(copy)), now: nextTime() })).rejects.toThrow(
      new RegExp(`llm endpoint differs: recorded loopback at ${server.url.replace(/[.]/g, '\\.')}, here loopback at http://127\\.0\\.0\\.1:9/v1`),
    );
  });
});
