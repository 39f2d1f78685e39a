import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as scoreCommand } from '../../src/cli/commands/score';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { readJsonl } from '../../src/common/jsonl';
import { AmbiqaError } from '../../src/errors';
import { rescoreInPlace } from '../../src/experiments/rescore';
import { aggregateResults } from '../../src/experiments/bindings';
import { rescore, unloadModels } from '../../src/index';
import { scoreExample } from '../../src/metrics/index';
import { exampleOfRecord } from '../../src/experiments/record';
import { uploadedSha256 } from '../../src/experiments/shard-group';
import { readResults, type ExampleResult, type RunMetrics } from '../../src/run-files';
import { FakeTracking } from './helpers/fixtures';
import { buildReport } from '../../src/report/build';
import { methodCatalog } from '../../src/pipelines/registry';
import { writeAsqa, writeYaml } from './helpers/files';
import { startFaultServer } from '../llm/fault-server';

// `ambiqa score --run` on real run folders written by `ambiqa run` (closed-book on the scripted
// provider, tracking off): scores are added and replaced in place from the stored outputs, the
// replaced ones kept in each row's scoreHistory, metrics.json recomputed with a `scoring` entry,
// and no pipeline built and no generator called while doing it.

// Every pipeline the registry builds is counted: a re-scoring must build none.
const built = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/pipelines/registry', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/pipelines/registry')>();
  return {
    ...mod,
    createPipeline: (name: string, options?: unknown) => {
      built.count++;
      return mod.createPipeline(name, options);
    },
  };
});

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-rescore-'));
const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };
const callLog = join(dir, 'calls.jsonl');
const quiet = { log: () => undefined, env: { note: () => undefined, warn: (m: string) => void warnings.push(m) } };
const warnings: string[] = [];
let data: string;

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  data = writeAsqa(dir, 4);
});
afterAll(() => {
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['AMBIQA_TRACKING', saved.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

/** A finished ASQA run scored with str_em only and no reader; its folder. */
async function finishedRun(name: string): Promise<string> {
  const config = writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 32 } },
    // Right for the first DQ of q00 (1990) only: STR-EM 50 there, 0 elsewhere.
    llm: { provider: 'scripted', reply: 'Event 0 first happened in 1990.', cache: join(dir, `${name}.sqlite`), callLog },
    metrics: ['str_em'],
    reader: 'none',
    tracking: { enabled: false },
  });
  expect(await runCommand([config, '--name', name, '--quiet'])).toBe(0);
  return join(dir, 'artifacts', 'runs', name);
}

const rows = (run: string): ExampleResult[] => readResults(join(run, 'results.jsonl'));
const metricsOf = (run: string): RunMetrics => JSON.parse(readFileSync(join(run, 'metrics.json'), 'utf8')) as RunMetrics;
const calls = (): number => (existsSync(callLog) ? readJsonl(callLog).length : 0);
const version = (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string }).version;

/** ROUGE-Lsum of a run's stored outputs as `ambiqa score --predictions` computes it (another code path). */
async function scoredByPredictions(run: string, metric: string): Promise<{ mean: number; perExample: Map<string, number> }> {
  const out = join(dir, `predictions-${metric}-${Date.now()}.json`);
  expect(await scoreCommand(['--dataset', 'asqa', '--data', data, '--predictions', join(run, 'results.jsonl'), '--metrics', metric, '--out', out])).toBe(0);
  const report = JSON.parse(readFileSync(out, 'utf8')) as { metrics: Record<string, number>; per_example: Array<Record<string, number | string>> };
  return { mean: report.metrics[metric]!, perExample: new Map(report.per_example.map((e) => [String(e.id), Number(e[metric])])) };
}

describe('ambiqa score --run', () => {
  it('adds a metric from the stored outputs: no pipeline built, no generator called; provenance recorded', async () => {
    const run = await finishedRun('add');
    const before = rows(run);
    const [builtBefore, callsBefore] = [built.count, calls()];
    expect(builtBefore).toBeGreaterThan(0); // the run itself built its pipeline through the counted registry
    const lines: string[] = [];
    const outcome = await rescoreInPlace({ target: run, metrics: ['rougeLsum'], ...quiet, log: (l) => void lines.push(l), now: () => new Date('2026-12-07T11:00:00Z') });
    expect(built.count).toBe(builtBefore);
    expect(calls()).toBe(callsBefore);

    const after = rows(run);
    expect(after.map((r) => [r.id, r.output])).toEqual(before.map((r) => [r.id, r.output]));
    const expected = await scoredByPredictions(run, 'rougeLsum');
    for (const [i, r] of after.entries()) {
      expect(r.scores.rougeLsum!.scoredBy).toBe('score-1');
      expect(r.scores.rougeLsum!.value).toBeCloseTo(expected.perExample.get(r.id)!, 3);
      // str_em was not scored again: as the run wrote it, and nothing was replaced.
      expect(r.scores.str_em).toEqual(before[i]!.scores.str_em);
      expect(r.scoreHistory).toBeUndefined();
    }
    const m = metricsOf(run);
    expect(m.metrics.rougeLsum!.mean).toBeCloseTo(expected.mean, 3);
    expect(m.metrics.str_em).toEqual(JSON.parse(JSON.stringify(outcome.runs[0]!.before.str_em)));
    expect(m.metrics.str_em!.mean).toBe(12.5);
    expect(m.settings?.['metric.sentence_splitter']).toMatch(/^punkt/);
    expect(m.scoring).toHaveLength(1);
    const entry = m.scoring![0]!;
    expect(entry).toMatchObject({ id: 'score-1', at: '2026-12-07T11:00:00.000Z', metrics: ['rougeLsum'], version });
    expect(entry.reader).toBeUndefined();
    expect(entry.commit).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
    // The rest of metrics.json is as the run wrote it.
    expect((m as unknown as { format: number }).format).toBe(3);
    expect(m.n).toBe(4);
    expect(m.status).toBe('FINISHED');
    expect(lines.join('\n')).toContain('score-1 scored 4 row(s), 0 earlier score(s) kept in scoreHistory; rougeLsum — → ');
    // The run's report says so, beside how the metrics were measured.
    const html = buildReport(run, { methods: methodCatalog() }).html;
    expect(html).toContain(`<li><code>score-1</code> 2026-12-07T11:00:00.000Z: rougeLsum; ambiqa ${version} at ${entry.commit!.slice(0, 12)}</li>`);
  });

  it('a second and third re-scoring grow each row\'s history; every earlier value is recoverable; DR follows its D-F1', async () => {
    const run = await finishedRun('history');
    const original = rows(run);
    await rescoreInPlace({ target: run, metrics: ['rougeLsum'], ...quiet, now: () => new Date('2026-12-07T11:00:00Z') });
    const first = rows(run);
    // Second: str_em and rougeLsum again, and DR with the reader that copies "1990" (D-F1 with it).
    await rescoreInPlace({ target: run, metrics: ['str_em', 'dr'], reader: 'scripted:1990', ...quiet, now: () => new Date('2026-12-07T11:05:00Z') });
    const second = rows(run);
    let m = metricsOf(run);
    expect(m.scoring!.map((e) => e.id)).toEqual(['score-1', 'score-2']);
    expect(m.scoring![1]).toMatchObject({ metrics: ['str_em', 'rougeLsum', 'd_f1', 'dr'], reader: 'llm-span-reader/span-v1 scripted:1990' });
    expect(m.settings?.['metric.reader']).toBe('llm-span-reader/span-v1 scripted:1990');
    // The reader reads 1990 for every DQ: right for q00's first only (D-F1 50 there, 0 elsewhere).
    expect(second.map((r) => r.scores.d_f1!.value)).toEqual([50, 0, 0, 0]);
    expect(m.metrics.d_f1!.mean).toBe(12.5);
    expect(m.metrics.dr!.mean).toBeGreaterThan(0);
    for (const [i, r] of second.entries()) {
      expect(r.scoreHistory!.map((h) => [h.metric, h.replacedAt])).toEqual([
        ['str_em', '2026-12-07T11:05:00.000Z'],
        ['rougeLsum', '2026-12-07T11:05:00.000Z'],
      ]);
      // The replaced values are the ones before, with who scored them.
      expect(r.scoreHistory![0]!.score).toEqual(original[i]!.scores.str_em);
      expect(r.scoreHistory![1]!.score).toEqual(first[i]!.scores.rougeLsum);
      expect(r.scores.str_em).toEqual({ ...original[i]!.scores.str_em, scoredBy: 'score-2' });
    }

    // Third: D-F1 again with a reader that finds nothing. DR, which reads it, is scored again too.
    await rescoreInPlace({ target: run, metrics: ['d_f1'], reader: 'scripted:none', ...quiet, now: () => new Date('2026-12-07T11:10:00Z') });
    const third = rows(run);
    m = metricsOf(run);
    expect(m.scoring!.map((e) => [e.id, e.metrics.join(',')])).toEqual([
      ['score-1', 'rougeLsum'],
      ['score-2', 'str_em,rougeLsum,d_f1,dr'],
      // DR reads ROUGE-Lsum too: it is scored with it (same value, since the outputs are the same).
      ['score-3', 'rougeLsum,d_f1,dr'],
    ]);
    expect(m.metrics.d_f1!.mean).toBe(0);
    expect(m.metrics.dr!.mean).toBe(0);
    for (const [i, r] of third.entries()) {
      expect(r.scoreHistory).toHaveLength(5);
      expect(r.scoreHistory!.slice(0, 2)).toEqual(second[i]!.scoreHistory);
      expect(r.scoreHistory!.slice(2)).toEqual([
        { metric: 'rougeLsum', score: second[i]!.scores.rougeLsum, replacedAt: '2026-12-07T11:10:00.000Z' },
        { metric: 'd_f1', score: second[i]!.scores.d_f1, replacedAt: '2026-12-07T11:10:00.000Z' },
        { metric: 'dr', score: second[i]!.scores.dr, replacedAt: '2026-12-07T11:10:00.000Z' },
      ]);
      expect(r.scores.d_f1!.scoredBy).toBe('score-3');
      expect(r.scores.rougeLsum).toEqual({ ...second[i]!.scores.rougeLsum, scoredBy: 'score-3' });
      expect(r.scores.str_em!.scoredBy).toBe('score-2');
    }
    // ROUGE-Lsum alone, and no reader (the run's is none): DR, which reads it, is left as it was, said.
    const notes: string[] = [];
    await rescoreInPlace({ target: run, metrics: ['rougeLsum'], log: () => undefined, env: { note: (n) => void notes.push(n), warn: quiet.env.warn } });
    expect(notes).toContain('history: dr not scored again (it reads a metric scored now, but needs a D-F1 reader; pass --reader)');
    expect(metricsOf(run).scoring!.at(-1)!.metrics).toEqual(['rougeLsum']);
    expect(rows(run)[0]!.scores.dr!.scoredBy).toBe('score-3');
    // With no --metrics, everything the run has is scored again (its str_em and the three added).
    await rescoreInPlace({ target: run, reader: 'scripted:1990', ...quiet });
    expect(metricsOf(run).scoring!.at(-1)!.metrics).toEqual(['str_em', 'rougeLsum', 'd_f1', 'dr']);
  });

  it('updates the run\'s MLflow run: changed metrics, scoring tags, files with their manifest, status put back', async () => {
    const run = await finishedRun('tracked');
    const tracking = new FakeTracking();
    const original = await tracking.startRun({ experimentName: 'rescore', runName: 'tracked' });
    await original.logMetrics({ str_em: metricsOf(run).metrics.str_em!.mean, n: 4 });
    await original.finish('FINISHED');
    writeFileSync(join(run, 'mlflow.json'), JSON.stringify({ format: 3, experimentName: 'rescore', experimentId: '7', runId: original.runId, runName: 'tracked' }));
    const outcome = await rescoreInPlace({ target: run, metrics: ['rougeLsum'], tracking: async () => tracking, ...quiet });
    expect(outcome.runs[0]!.mlflowRunId).toBe(original.runId);
    const fake = tracking.runs.get(original.runId)!;
    expect(tracking.runs.size).toBe(1); // the same run, no new one
    const logged = Object.assign({}, ...fake.metrics.slice(1).map((x) => x.metrics)) as Record<string, number>;
    const m = metricsOf(run);
    expect(logged.rougeLsum).toBe(m.metrics.rougeLsum!.mean);
    expect(logged.rougeLsum_ci_low).toBe(m.metrics.rougeLsum!.ciLow);
    // Values that did not change are not logged again.
    expect(logged.n).toBeUndefined();
    expect(logged.str_em).toBeUndefined();
    expect(fake.tags['ambiqa.scoring.last']).toBe('score-1');
    expect(JSON.parse(fake.tags['ambiqa.scoring.score-1']!)).toEqual(m.scoring![0]);
    expect(fake.statuses).toEqual(['RUNNING', 'FINISHED', 'RUNNING', 'FINISHED']);
    expect(fake.artifacts.map((a) => a.split('/').at(-1))).toEqual(expect.arrayContaining(['results.jsonl', 'metrics.json']));
    // The uploads manifest names the rewritten files' checksums (merge --from-mlflow checks them).
    expect(fake.tags['ambiqa.uploads']).toContain(`metrics.json=${uploadedSha256(join(run, 'metrics.json'))}`);
    expect(fake.tags['ambiqa.uploads']).toContain(`results.jsonl=${uploadedSha256(join(run, 'results.jsonl'))}`);
    expect(warnings).toEqual([]);
  });

  it('rows of format 2 (no target) are scored against the dataset file and written back as format 3', async () => {
    const run = await finishedRun('legacy');
    const current = rows(run);
    // What a format-2 run wrote: numbers under "metrics", no target, no format stamp.
    const legacy = current.map(({ format: _f, target: _t, scores, ...rest }) => ({ ...rest, metrics: Object.fromEntries(Object.entries(scores).map(([k, s]) => [k, s.value])) }));
    writeFileSync(join(run, 'results.jsonl'), legacy.map((r) => JSON.stringify(r) + '\n').join(''));
    await rescoreInPlace({ target: run, metrics: ['str_em'], ...quiet });
    const after = rows(run);
    for (const [i, r] of after.entries()) {
      expect(r.scores.str_em).toEqual({ ...current[i]!.scores.str_em, scoredBy: 'score-1' });
      expect(r.scoreHistory![0]).toMatchObject({ metric: 'str_em', score: { value: current[i]!.scores.str_em!.value } });
    }
    expect(readFileSync(join(run, 'results.jsonl'), 'utf8').split('\n')[0]).toMatch(/^\{"format":3,/);
  });

  it('scores each trial of a question from its own output, and recomputes metrics.json `groups` per group', async () => {
    const run = await finishedRun('trials-groups');
    const current = rows(run);
    // Trial 1 of each question with another output; groups a (q00, q01) and b (q02, q03).
    const withTrials = current.flatMap((r, i) => [
      { ...r, groups: { half: i < 2 ? 'a' : 'b' } },
      { ...r, trial: 1, output: `Event ${i} first happened in ${1990 + i}.`, groups: { half: i < 2 ? 'a' : 'b' } },
    ]);
    writeFileSync(join(run, 'results.jsonl'), withTrials.map((r) => JSON.stringify(r) + '\n').join(''));
    const m0 = metricsOf(run);
    writeFileSync(join(run, 'metrics.json'), JSON.stringify({ ...m0, groups: { half: { a: m0.metrics, b: m0.metrics } } }));
    await rescoreInPlace({ target: run, metrics: ['str_em'], ...quiet });
    const after = rows(run);
    // Trial 0 says 1990 (right for q00 only); trial 1 of question i names its own first year.
    expect(after.map((r) => [r.id, r.trial ?? 0, r.scores.str_em!.value])).toEqual([
      ['q00', 0, 50], ['q00', 1, 50], ['q01', 0, 0], ['q01', 1, 50], ['q02', 0, 0], ['q02', 1, 50], ['q03', 0, 0], ['q03', 1, 50],
    ]);
    const groups = metricsOf(run).groups!;
    expect(Object.keys(groups.half!)).toEqual(['a', 'b']);
    expect(groups.half!.a!.str_em!.mean).not.toBe(groups.half!.b!.str_em!.mean);
    expect(groups.half!.a!.str_em).toEqual(JSON.parse(JSON.stringify(aggregateResults(after.filter((r) => r.groups?.half === 'a')).str_em)));
  });

  it('from the library entry: `rescore(name)` re-scores a run by name, as the command does', async () => {
    await finishedRun('library');
    const lines: string[] = [];
    try {
      const outcome = await rescore('library', { metrics: ['rougeL'], log: (l) => void lines.push(l) });
      expect(outcome.runs.map((r) => r.entry.metrics)).toEqual([['rougeL']]);
    } finally {
      await unloadModels();
    }
    expect(metricsOf(join(dir, 'artifacts', 'runs', 'library')).metrics.rougeL).toBeDefined();
    expect(lines[0]).toMatch(/^library: score-1 scored 4 row\(s\)/);
  });

  it('a run with `trials: 2`: every (question, trial) row is scored from its own output', async () => {
    const config = writeYaml(join(dir, 'trials.yaml'), {
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'closed-book', options: { nShots: 0, temperature: 0.7 } },
      llm: { provider: 'scripted', cycle: ['Event 0 first happened in 1990.', 'Nobody knows.', 'Event 2 first happened in 1992.'], cache: join(dir, 'trials.sqlite'), callLog },
      metrics: ['str_em'],
      reader: 'none',
      trials: 2,
      tracking: { enabled: false },
    });
    expect(await runCommand([config, '--name', 'trials', '--quiet'])).toBe(0);
    const run = join(dir, 'artifacts', 'runs', 'trials');
    const before = rows(run);
    expect(before.map((r) => r.trial ?? 0)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    const callsBefore = calls();
    await rescoreInPlace({ target: run, metrics: ['rougeLsum'], ...quiet });
    expect(calls()).toBe(callsBefore);
    const after = rows(run);
    const expected = await scoredByPredictions(run, 'rougeLsum'); // per question id: the first row of each id
    for (const r of after.filter((x) => !x.trial)) expect(r.scores.rougeLsum!.value).toBeCloseTo(expected.perExample.get(r.id)!, 3);
    // Every trial's row has the score of its own output (the trials answered differently).
    expect(new Set(after.map((r) => r.output)).size).toBeGreaterThan(1);
    for (const [i, r] of after.entries()) {
      expect(r.output).toBe(before[i]!.output);
      const own = await scoreExample('asqa', exampleOfRecord(r, 'asqa')!, { output: r.output }, ['rougeLsum']);
      expect(r.scores.rougeLsum!.value).toBe(own.metrics.rougeLsum);
    }
    expect(metricsOf(run).metrics.rougeLsum).toEqual(JSON.parse(JSON.stringify(aggregateResults(after).rougeLsum)));
  });

  it('refuses bad input in one line, before anything is written', async () => {
    const run = await finishedRun('refusals');
    const results = readFileSync(join(run, 'results.jsonl'), 'utf8');
    const metrics = readFileSync(join(run, 'metrics.json'), 'utf8');
    const refusal = async (p: Promise<unknown>): Promise<string> => {
      try {
        await p;
      } catch (error) {
        expect(error).toBeInstanceOf(AmbiqaError);
        expect((error as Error).message).not.toContain('\n');
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    const empty = join(dir, 'empty');
    mkdirSync(empty, { recursive: true });
    expect(await refusal(scoreCommand(['--run', empty]))).toBe(`--run ${empty} is not a run or sweep directory (no config.yaml, no sweep.yaml)`);
    expect(await refusal(scoreCommand(['--run', join(dir, 'nowhere')]))).toBe(`--run ${join(dir, 'nowhere')}: no such directory`);
    expect(await refusal(scoreCommand(['--run', run, '--metrics', 'em']))).toBe('--metrics: metric "em" is not available for asqa');
    expect(await refusal(scoreCommand(['--run', run, '--metrics', 'str_em,d_f1']))).toBe('--metrics d_f1 needs a D-F1 reader, and run refusals was run without one (reader: none)');
    expect(await refusal(scoreCommand(['--run', run, '--metrics', 'dr', '--reader', 'none']))).toBe('--metrics dr needs a D-F1 reader, and --reader is none');
    expect(await refusal(scoreCommand(['--run', run, '--metrics', 'd_f1', '--reader', 'llm']))).toMatch(/^--reader: "llm" is no longer a reader/);
    expect(await refusal(scoreCommand(['--run', run, '--predictions', join(run, 'results.jsonl')]))).toBe('--predictions is for scoring a predictions file, not with --run (which re-scores a run folder in place)');
    const state = JSON.parse(readFileSync(join(run, 'run.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(run, 'run.json'), JSON.stringify({ ...state, status: 'RUNNING' }));
    expect(await refusal(scoreCommand(['--run', run, '--metrics', 'rougeLsum']))).toBe(`--run ${run}: run refusals is RUNNING (run.json); its rows are still being written`);
    expect(readFileSync(join(run, 'results.jsonl'), 'utf8')).toBe(results);
    expect(readFileSync(join(run, 'metrics.json'), 'utf8')).toBe(metrics);
    expect(existsSync(join(run, 'run.lock'))).toBe(false); // the lock was given back
  });
});

describe('a D-F1 reader on an OpenAI-compatible endpoint (loopback)', () => {
  it('reads through the LLM cache: scoring again with the same reader replays every read', async () => {
    const server = await startFaultServer();
    server.replyFor = () => '1990';
    const env = { base: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY, cache: process.env.AMBIQA_CACHE_DIR };
    process.env.OPENAI_BASE_URL = server.url;
    process.env.OPENAI_API_KEY = 'k-test-reader';
    process.env.AMBIQA_CACHE_DIR = join(dir, 'reader-cache');
    try {
      const run = await finishedRun('endpoint-reader');
      await rescoreInPlace({ target: run, metrics: ['d_f1'], reader: 'openai:reader-model', ...quiet });
      // One read per disambiguated question: 4 questions × 2 DQs.
      expect(server.requests).toHaveLength(8);
      expect(rows(run).map((r) => r.scores.d_f1!.value)).toEqual([50, 0, 0, 0]);
      expect(metricsOf(run).scoring![0]!.reader).toBe('llm-span-reader/span-v1 openai:reader-model greedy');
      await rescoreInPlace({ target: run, metrics: ['d_f1'], reader: 'openai:reader-model', ...quiet });
      expect(server.requests).toHaveLength(8);
      expect(existsSync(join(dir, 'reader-cache', 'llm-cache.sqlite'))).toBe(true);
      const after = rows(run);
      expect(after.map((r) => r.scores.d_f1!.value)).toEqual([50, 0, 0, 0]);
      expect(after[0]!.scoreHistory).toEqual([{ metric: 'd_f1', score: expect.objectContaining({ value: 50, scoredBy: 'score-1' }), replacedAt: expect.any(String) }]);
    } finally {
      for (const [k, v] of [['OPENAI_BASE_URL', env.base], ['OPENAI_API_KEY', env.key], ['AMBIQA_CACHE_DIR', env.cache]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await server.close();
    }
  });
});

describe('a sweep folder, MLflow off', () => {
  it('refuses the whole sweep when one point is RUNNING; otherwise re-scores every point and writes the summary again', async () => {
    const config = writeYaml(join(dir, 'sweep.yaml'), {
      dataset: { name: 'asqa', path: data },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted', reply: 'Event 0 first happened in 1990.', cache: join(dir, 'sweep.sqlite'), callLog },
      metrics: ['str_em'],
      reader: 'none',
      tracking: { enabled: false },
      sweep: { 'pipeline.options.maxTokens': [16, 32] },
    });
    expect(await sweepCommand([config, '--quiet'])).toBe(0);
    const sweepDir = join(dir, 'artifacts', 'sweeps', 'sweep');
    const points = ['maxTokens=16', 'maxTokens=32'].map((p) => join(sweepDir, 'runs', p));
    const [builtBefore, callsBefore] = [built.count, calls()];
    const summaryBefore = readFileSync(join(sweepDir, 'summary.json'), 'utf8');
    expect(summaryBefore).not.toContain('rougeLsum');

    const statePath = join(points[1]!, 'run.json');
    const state = readFileSync(statePath, 'utf8');
    writeFileSync(statePath, JSON.stringify({ ...JSON.parse(state), status: 'RUNNING' }));
    await expect(rescoreInPlace({ target: sweepDir, metrics: ['rougeLsum'], ...quiet })).rejects.toThrow(`--run ${points[1]}: run sweep.maxTokens=32 is RUNNING`);
    for (const p of points) expect(metricsOf(p).scoring).toBeUndefined(); // neither point was written
    expect(readFileSync(join(sweepDir, 'summary.json'), 'utf8')).toBe(summaryBefore);

    writeFileSync(statePath, state);
    const outcome = await rescoreInPlace({ target: sweepDir, metrics: ['rougeLsum'], ...quiet });
    expect(outcome.kind).toBe('sweep');
    expect(outcome.runs.map((r) => r.name)).toEqual(['sweep.maxTokens=16', 'sweep.maxTokens=32']);
    expect([built.count, calls()]).toEqual([builtBefore, callsBefore]);
    const summary = JSON.parse(readFileSync(join(sweepDir, 'summary.json'), 'utf8')) as Array<{ label: string; metrics: RunMetrics; paired?: Array<{ metric: string; meanDelta: number }> }>;
    for (const [i, row] of summary.entries()) {
      expect(row.metrics.metrics.rougeLsum!.mean).toBe(metricsOf(points[i]!).metrics.rougeLsum!.mean);
      expect(row.metrics.scoring![0]!.id).toBe('score-1');
    }
    // Same outputs at both points: a paired ROUGE-Lsum delta of 0.
    expect(summary[1]!.paired!.find((p) => p.metric === 'rougeLsum')!.meanDelta).toBe(0);
    expect(outcome.summary).toContain('rougeLsum');
  });
});
