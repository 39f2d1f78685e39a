import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { run as compareCommand } from '../../src/cli/commands/compare';
import { run as reportCommand } from '../../src/cli/commands/report';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import YAML from 'yaml';
import { groupByOverride, parseGroupBy } from '../../src/experiments/cli-support';
import { registry } from '../../src/experiments/compose';
import { resolveExperimentConfig } from '../../src/experiments/config';
import { applyOverrides } from '../../src/experiments/overrides';
import { examplesDir } from '../../src/config/paths';
import { describeOutcome } from '../../src/experiments/cli-support';
import { aggregateResults } from '../../src/experiments/bindings';
import type { ExperimentInput } from '../../src/experiments/config';
import { metricsForMlflow } from '../../src/experiments/runner';
import { runInProcess, sweepInProcess } from '../../src/experiments/session';
import { mergeRuns } from '../../src/experiments/merge';
import { methodCatalog } from '../../src/pipelines/registry';
import { compareDirs } from '../../src/report/compare';
import { renderComparisonReport } from '../../src/report/compare';
import { buildReport } from '../../src/report/build';
import { bootstrapMean } from '../../src/metrics/bootstrap';
import { readResults, scoreValues, type RunMetrics } from '../../src/run-files';
import { useIsolatedSession } from '../helpers/session-env';

/**
 * A scripted run of ASQA `questions: mixed` (each of the 6 ambiguous questions followed by its
 * first DQ) grouped by `kind`. The first reply names only each question's first interpretation's
 * answer: an AQ then hits 1 of its DQs (STR-EM 50 for the four with two, 33.3 for the two with
 * three: 400/9 on average) and its first DQ hits (100). The second names every interpretation's
 * answer (100 both).
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-groups-'));
const FIRST = 'Argentina 1997 Amsterdam 1887 Dolly Parton Nile';
const ALL = 'Argentina Spain South Africa 1997 1953 Amsterdam The Hague 1887 1889 Dolly Parton Whitney Houston Nile Missouri Amazon';

function config(reply: string, extra: Partial<ExperimentInput> = {}, callLog?: string): ExperimentInput {
  return {
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), questions: 'mixed' },
    pipeline: { name: 'closed-book', options: { nShots: 0, maxTokens: 16 } },
    llm: { provider: 'scripted', reply, model: `scripted-${reply.length}`, cache: join(dir, 'llm-cache.sqlite'), ...(callLog ? { callLog } : {}) },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 2,
    ...extra,
  } as ExperimentInput;
}

const runsDir = join(dir, 'artifacts', 'runs');
const metricsOf = (name: string): RunMetrics => JSON.parse(readFileSync(join(runsDir, name, 'metrics.json'), 'utf8')) as RunMetrics;

useIsolatedSession(dir);

describe('groupBy: kind under questions: mixed', () => {
  it('records each row’s kind and gives per-group metrics with CIs in metrics.json, MLflow metrics, the closing lines and the report', async () => {
    const outcome = await runInProcess(config(FIRST, { groupBy: ['kind'] }), { name: 'first' });
    expect(outcome.status).toBe('FINISHED');
    const rows = readResults(join(runsDir, 'first', 'results.jsonl'));
    expect(rows).toHaveLength(12);
    expect(rows.map((r) => r.groups?.kind)).toEqual(Array.from({ length: 6 }, () => ['ambiguous', 'disambiguated']).flat());

    const m = metricsOf('first');
    expect(m.metrics.str_em.mean).toBeCloseTo((400 / 9 + 100) / 2, 10);
    const ambiguous = m.groups!.kind.ambiguous.str_em;
    expect(ambiguous.mean).toBeCloseTo(400 / 9, 10);
    expect(ambiguous.n).toBe(6);
    // The CI is the bootstrap over the group's six questions alone: between 33.3 and 50.
    expect(ambiguous).toEqual(bootstrapMean(rows.filter((r) => !r.id.includes('.dq')).map((r) => scoreValues(r).str_em)));
    expect(ambiguous.ciLow).toBeGreaterThanOrEqual(100 / 3);
    expect(ambiguous.ciHigh).toBeLessThanOrEqual(50);
    expect(ambiguous.ciLow).toBeLessThan(ambiguous.ciHigh);
    expect(m.groups?.kind.disambiguated.str_em).toEqual({ mean: 100, ciLow: 100, ciHigh: 100, n: 6 });

    const mlflow = metricsForMlflow(m);
    expect(mlflow['group.kind.ambiguous.str_em']).toBeCloseTo(400 / 9, 10);
    expect(mlflow['group.kind.disambiguated.str_em_ci_low']).toBe(100);
    expect(mlflow['group.kind.disambiguated.n']).toBe(6);

    // What `ambiqa run` prints when it ends.
    const closing = describeOutcome({ status: outcome.status, runDir: outcome.dir, metrics: m, results: outcome.results, mlflow: null, answeredNow: outcome.answeredNow });
    expect(closing).toContain(
      `  by kind:\n    ambiguous      n    6  str_em 44.4 [${ambiguous.ciLow.toFixed(1)}, ${ambiguous.ciHigh.toFixed(1)}]\n    disambiguated  n    6  str_em 100.0 [100.0, 100.0]\n`,
    );

    const report = buildReport(join(runsDir, 'first'), { methods: methodCatalog(), traces: 'none' });
    const table = /<h2>Metrics by group<\/h2><table class="metrics groups" data-field="kind">(.*?)<\/table>/s.exec(report.html);
    expect(table).not.toBeNull();
    expect(table![1]).toContain(`<tr><td>ambiguous</td><td class="num">6</td><td class="num">44.4 <span class="note">[${ambiguous.ciLow.toFixed(1)}, ${ambiguous.ciHigh.toFixed(1)}]</span></td></tr>`);
    expect(table![1]).toContain('<tr><td>disambiguated</td><td class="num">6</td><td class="num">100.0</td></tr>');
  });

  it('refuses a field the questions lack before any model call, naming groupBy and the fields there are', async () => {
    const callLog = join(dir, 'calls.jsonl');
    await expect(runInProcess(config(FIRST, { groupBy: ['kind', 'level'] }, callLog), { name: 'refused' })).rejects.toThrowError(
      /^groupBy: 'level' is not a field of the asqa questions of this run; available: kind, ambiguousQuestion$/,
    );
    expect(existsSync(callLog)).toBe(false);
    expect(existsSync(join(runsDir, 'refused', 'results.jsonl'))).toBe(false);
  });

  it('compares per group (Holm across the groups), also for a run recorded without groupBy, and reports its groups on demand', async () => {
    // The second run is recorded without groupBy: compare and report derive kind from its rows.
    await runInProcess(config(ALL), { name: 'all' });
    expect(metricsOf('all').groups).toBeUndefined();
    expect(readResults(join(runsDir, 'all', 'results.jsonl'))[0].groups).toBeUndefined();

    const { comparison } = compareDirs([join(runsDir, 'first'), join(runsDir, 'all')], { groupBy: ['kind'], createdAt: 'fixed' });
    const [ambiguous, disambiguated] = comparison.groups!;
    expect(ambiguous).toMatchObject({ field: 'kind', value: 'ambiguous', run: 'all', metric: 'str_em', n: 6, runMean: 100 });
    expect(ambiguous.meanDelta).toBeCloseTo(500 / 9, 10);
    // Deltas of 50 (four questions) and 66.7 (two): the CI lies between them.
    expect(ambiguous.ciLow).toBeGreaterThanOrEqual(50);
    expect(ambiguous.ciHigh).toBeLessThanOrEqual(200 / 3 + 1e-9);
    // Six positive deltas: exact sign-flip p = 2/64; the DQs' six zero deltas: p = 1. Holm across the two groups.
    expect(ambiguous.p).toBe(2 / 64);
    expect(ambiguous.pHolm).toBe(2 * (2 / 64));
    expect(disambiguated).toMatchObject({ value: 'disambiguated', n: 6, meanDelta: 0, p: 1, pHolm: 1 });
    // Without --group-by, only fields every run recorded are grouped: none here.
    expect(compareDirs([join(runsDir, 'first'), join(runsDir, 'all')]).comparison.groups).toBeUndefined();

    const html = renderComparisonReport(comparison, { generatedAt: 'fixed' });
    expect(html).toContain('<h2>Paired deltas by group</h2><h3>By kind</h3>');
    expect(html).toContain(
      `<td>all</td><td>str_em</td><td>ambiguous</td><td class="num">6</td><td class="num">44.4</td><td class="num">100.0</td><td class="num pos">+55.6</td><td class="num">[${ambiguous.ciLow.toFixed(1)}, ${ambiguous.ciHigh.toFixed(1)}]</td><td class="num">0.031</td><td class="num">0.063</td>`,
    );

    const plain = buildReport(join(runsDir, 'all'), { methods: methodCatalog(), traces: 'none' });
    expect(plain.html).not.toContain('Metrics by group');
    const grouped = buildReport(join(runsDir, 'all'), { methods: methodCatalog(), traces: 'none', groupBy: ['kind'], aggregate: aggregateResults });
    expect(grouped.html).toContain('<tr><td>ambiguous</td><td class="num">6</td><td class="num">100.0</td></tr>');
    expect(() => buildReport(join(runsDir, 'all'), { methods: methodCatalog(), traces: 'none', groupBy: ['ambiguousQuestion'] })).toThrowError(
      /--group-by \(run all\): the rows carry no 'ambiguousQuestion' group/,
    );
  });

  it('takes --group-by on the command line: run and sweep refuse an unknown field before any call, compare and report print and render the groups', async () => {
    const raw = applyOverrides(config(FIRST) as unknown as Record<string, unknown>, [groupByOverride('kind, ambiguousQuestion,kind')], 'test');
    expect(resolveExperimentConfig(raw, registry, { source: 'test', defaultName: 'x' }).groupBy).toEqual(['kind', 'ambiguousQuestion']);
    expect(() => parseGroupBy(' , ')).toThrowError(/^--group-by: ' , ' names no field$/);

    // `ambiqa run` and `ambiqa sweep` in-process: --group-by reaches the config, and a field the
    // questions lack is refused before the scripted model is called once.
    const callLog = join(dir, 'cli-calls.jsonl');
    const file = join(dir, 'grouped.yaml');
    writeFileSync(file, YAML.stringify({ ...config(FIRST, {}, callLog), name: 'cli-grouped', sweep: { 'pipeline.options.maxTokens': [8, 16] } }));
    await expect(runCommand([file, '--group-by', 'kind,level', '--quiet'])).rejects.toThrowError(/^groupBy: 'level' is not a field of the asqa questions of this run; available: kind, ambiguousQuestion$/);
    await expect(sweepCommand([file, '--group-by', 'level', '--quiet'])).rejects.toThrowError(/^groupBy: 'level' is not a field/);
    expect(existsSync(callLog)).toBe(false);

    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const err = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const out = join(dir, 'cmp', 'comparison.json');
      expect(await compareCommand([join(runsDir, 'first'), join(runsDir, 'all'), '--group-by', 'kind', '--no-tracking', '--out', out])).toBe(0);
      const printed = log.mock.calls.map((c) => String(c[0])).join('\n');
      expect(printed).toContain('by group:\n\n| run | metric | group | n | baseline | run mean | Δ [95% CI] | p | p (Holm, across groups) |');
      expect(printed).toContain('| all | str_em | kind=disambiguated | 6 | 100.0 | 100.0 | 0.0 [0.0, 0.0] | 1.000 | 1.000 |');
      const saved = JSON.parse(readFileSync(out, 'utf8')) as { groupBy: string[]; groups: unknown[] };
      expect(saved.groupBy).toEqual(['kind']);
      expect(saved.groups).toHaveLength(2);
      expect(readFileSync(join(dir, 'cmp', 'report.html'), 'utf8')).toContain('<h2>Paired deltas by group</h2>');

      const report = join(dir, 'all-report.html');
      expect(await reportCommand([join(runsDir, 'all'), '--group-by', 'kind', '--traces', 'none', '--out', report])).toBe(0);
      expect(readFileSync(report, 'utf8')).toContain('<tr><td>disambiguated</td><td class="num">6</td><td class="num">100.0</td></tr>');
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });

  it('gives every sweep point its groups and the sweep’s comparison its per-group deltas', async () => {
    const scripted = (reply: string) => ({ provider: 'scripted', reply, model: `scripted-${reply.length}`, cache: join(dir, 'llm-cache.sqlite') });
    const base = config(FIRST, { groupBy: ['kind'] }) as unknown as Record<string, unknown>;
    const swept = await sweepInProcess({ ...base, sweep: { llm: [scripted(FIRST), scripted(ALL)] } } as unknown as ExperimentInput, { name: 'grouped-sweep', log: () => undefined });
    expect(swept.status).toBe('FINISHED');
    expect(swept.runs.map((r) => r.metrics?.groups?.kind.disambiguated.str_em.mean)).toEqual([100, 100]);
    expect(swept.runs.map((r) => r.metrics?.groups?.kind.ambiguous.str_em.mean.toFixed(1))).toEqual(['44.4', '100.0']);
    const comparison = JSON.parse(readFileSync(join(dir, 'artifacts', 'sweeps', 'grouped-sweep', 'comparison.json'), 'utf8')) as { groupBy: string[]; groups: Array<{ value: string; meanDelta: number; pHolm: number }> };
    expect(comparison.groupBy).toEqual(['kind']);
    expect(comparison.groups.map((g) => [g.value, g.meanDelta.toFixed(1), g.pHolm])).toEqual([['ambiguous', '55.6', 0.0625], ['disambiguated', '0.0', 1]]);
  });

  it('recomputes the groups over all shards when shards are merged', async () => {
    const dirs: string[] = [];
    for (const shard of ['0/2', '1/2']) {
      const done = await runInProcess({ ...config(FIRST, { groupBy: ['kind'] }), shard } as unknown as ExperimentInput, { name: 'sharded' });
      dirs.push(done.dir);
      // Each shard has half the questions.
      expect(Object.values(done.metrics!.groups!.kind).reduce((n, m) => n + m.str_em.n, 0)).toBe(6);
    }
    const merged = await mergeRuns({ methods: methodCatalog(), dirs, outDir: (n) => join(dir, 'merged', n), aggregate: aggregateResults, tracking: null });
    expect(merged.metrics.groups).toEqual(metricsOf('first').groups);
  });
});
